package jdbc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/sinks/jdbc"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Run(m)) }

// jdbcURL is the test server as Flink writes it, with the login apart:
// jdbc:postgresql://host:port/db, and user and password.
func jdbcURL(t testing.TB) (u, user, password string) {
	t.Helper()
	p, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	password, _ = p.User.Password()
	return "jdbc:postgresql://" + p.Host + p.Path + "?sslmode=disable", p.User.Username(), password
}

// with is the WITH clause of a jdbc table writing pgTable on the test
// server, plus extra pairs.
func with(t *testing.T, pgTable, extra string) string {
	t.Helper()
	u, user, password := jdbcURL(t)
	return fmt.Sprintf("WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = '%s', 'username' = '%s', 'password' = '%s'%s)",
		u, pgTable, user, password, extra)
}

// bind parses one CREATE TABLE, which must parse, and binds it; what
// binding says is returned, for the tests that check it.
func bind(t testing.TB, ddl string) (*table.Bound, error) {
	t.Helper()
	stmts, err := parse.Parse(ddl)
	if err != nil {
		t.Fatal(err)
	}
	return table.Bind(stmts[0].(*table.CreateTable).Def)
}

// sinkOf binds the table of one CREATE TABLE and returns its sink.
func sinkOf(t testing.TB, ddl string) (flow.Sink, error) {
	t.Helper()
	b, err := bind(t, ddl)
	if err != nil {
		return nil, err
	}
	return table.NewSink(b)
}

// open opens the sink of ddl; the test's cleanup closes its writer.
func open(t *testing.T, ddl string) (flow.Sink, flow.Writer, error) {
	t.Helper()
	s, err := sinkOf(t, ddl)
	if err != nil {
		return nil, nil, err
	}
	w, err := s.Open(pgtest.Context(t))
	if err != nil {
		return s, nil, err
	}
	t.Cleanup(func() { w.Close() })
	return s, w, nil
}

func mustOpen(t *testing.T, ddl string) (flow.Sink, flow.Writer) {
	t.Helper()
	s, w, err := open(t, ddl)
	if err != nil {
		t.Fatal(err)
	}
	return s, w
}

// record makes a batch of the sink's columns from JSON rows (Arrow's JSON
// form: one object per row).
func record(t testing.TB, s flow.Sink, rows string) arrow.RecordBatch {
	t.Helper()
	cols := s.Columns()
	def := types.Schema{Columns: cols}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, def.Arrow(), strings.NewReader(rows))
	if err != nil {
		t.Fatalf("rows %s: %v", rows, err)
	}
	t.Cleanup(rec.Release)
	return rec
}

// write writes rec (as kinds, when not nil) and waits for its done.
func write(t *testing.T, w flow.Writer, rec arrow.RecordBatch, kinds ...flow.RowKind) error {
	t.Helper()
	return waitWrite(t, func(done func(error)) error {
		if kinds != nil {
			return w.(flow.ChangelogWriter).WriteChanges(pgtest.Context(t), rec, kinds, done)
		}
		return w.Write(pgtest.Context(t), rec, done)
	})
}

// waitWrite calls write with a done and waits for it: the write's error,
// or what done was given.
func waitWrite(t *testing.T, write func(done func(error)) error) error {
	t.Helper()
	ch := make(chan error, 1)
	if err := write(func(err error) { ch <- err }); err != nil {
		t.Fatalf("Write: %v", err)
	}
	select {
	case err := <-ch:
		return err
	case <-pgtest.Context(t).Done():
		t.Fatal("done was not called")
		return nil
	}
}

func rowsOf(t *testing.T, sql string) string {
	t.Helper()
	var lines []string
	for _, r := range pgtest.Query(t, sql) {
		lines = append(lines, strings.Join(r, "|"))
	}
	return strings.Join(lines, "\n")
}

// Every kshare type goes into its PostgreSQL type, NULLs as NULL, and a
// MAP, a ROW, a DECIMAL (exact) and an ARRAY of timestamps (as Flink
// renders them) into jsonb or json.
func TestJdbcAppendTypes(t *testing.T) {
	pg := pgtest.Table(t, `b boolean, ti smallint, si smallint, i integer, bi bigint, f real, d double precision,
		dec numeric(10, 2), s text, vc varchar(10), by bytea, dt date, ts timestamp(3), tz timestamptz, tm time,
		arr integer[], m jsonb, r jsonb, wide bigint, dj jsonb, tj json`)
	s, w := mustOpen(t, `CREATE TABLE out (b BOOLEAN, ti TINYINT, si SMALLINT, i INT, bi BIGINT, f FLOAT, d DOUBLE,
		dec DECIMAL(10, 2), s STRING, vc VARCHAR(10), by BYTES, dt DATE, ts TIMESTAMP(3), tz TIMESTAMP_LTZ(3), tm TIME(3),
		arr ARRAY<INT>, m MAP<STRING, INT>, r ROW<x INT, y STRING>, wide INT, dj DECIMAL(10, 2), tj ARRAY<TIMESTAMP(3)>) `+with(t, pg, ""))
	rec := record(t, s, `[
		{"b": true, "ti": -1, "si": 300, "i": 70000, "bi": 9000000000, "f": 1.5, "d": 2.25, "dec": "12345678.90",
		 "s": "h\u00e9", "vc": "v", "by": "AAEC", "dt": 19724, "ts": 1704164645678, "tz": 1704164645678, "tm": 3723004,
		 "arr": [1, null, 3], "m": [{"key": "a", "value": 1}], "r": {"x": 7, "y": "z"}, "wide": 5,
		 "dj": "0.10", "tj": [1704164645678, null]},
		{"b": null, "ti": null, "si": null, "i": null, "bi": null, "f": null, "d": null, "dec": null, "s": null, "vc": null,
		 "by": null, "dt": null, "ts": null, "tz": null, "tm": null, "arr": null, "m": null, "r": null, "wide": null,
		 "dj": null, "tj": null}
	]`)
	if err := write(t, w, rec); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, "SET TIME ZONE 'UTC'")
	got := rowsOf(t, "SELECT b, ti, si, i, bi, f, d, dec, s, vc, encode(by, 'hex'), dt, ts, tz AT TIME ZONE 'UTC', tm, arr, m, r, wide, dj, tj FROM "+pg+" ORDER BY b NULLS LAST")
	want := "t|-1|300|70000|9000000000|1.5|2.25|12345678.90|h\u00e9|v|000102|2024-01-02|2024-01-02 03:04:05.678|2024-01-02 03:04:05.678|01:02:03.004|{1,NULL,3}|{\"a\": 1}|{\"x\": 7, \"y\": \"z\"}|5|0.10|[\"2024-01-02 03:04:05.678\",null]\n" +
		"NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if st := w.Stats(); st.Written != 2 || st.Acked != 2 || st.Failed != 0 {
		t.Errorf("stats %+v, want 2 written and acknowledged", st)
	}
}

// An upsert writes each key's last change: +I and +U insert or replace,
// -D deletes, -U is dropped; later changes of a key in one batch win.
func TestJdbcUpsertChanges(t *testing.T) {
	pg := pgtest.Table(t, "k text PRIMARY KEY, n bigint NOT NULL")
	s, w := mustOpen(t, "CREATE TABLE out (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) "+with(t, pg, ""))
	if _, ok := s.(flow.ChangelogSink); !ok {
		t.Fatal("a jdbc table with a key does not take changes")
	}
	if ks, ok := s.(flow.KeyedSink); !ok || len(ks.PrimaryKey()) != 1 || ks.PrimaryKey()[0] != 0 {
		t.Fatalf("key of the sink: %v", s)
	}
	I, UB, UA, D := flow.KindInsert, flow.KindUpdateBefore, flow.KindUpdateAfter, flow.KindDelete
	steps := []struct {
		rows  string
		kinds []flow.RowKind
		want  string
	}{
		{`[{"k": "a", "n": 1}, {"k": "b", "n": 1}]`, []flow.RowKind{I, I}, "a|1\nb|1"},
		{`[{"k": "a", "n": 1}, {"k": "a", "n": 2}, {"k": "c", "n": 1}]`, []flow.RowKind{UB, UA, I}, "a|2\nb|1\nc|1"},
		// Within one batch the last change of a key wins: b is deleted
		// and inserted again, c inserted and deleted.
		{`[{"k": "b", "n": 1}, {"k": "b", "n": 5}, {"k": "c", "n": 1}, {"k": "a", "n": 2}, {"k": "a", "n": 3}, {"k": "c", "n": 1}]`,
			[]flow.RowKind{D, I, UB, UB, UA, D}, "a|3\nb|5"},
	}
	for i, st := range steps {
		if err := write(t, w, record(t, s, st.rows), st.kinds...); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := rowsOf(t, "SELECT k, n FROM "+pg+" ORDER BY k"); got != st.want {
			t.Errorf("after step %d:\n%s\nwant\n%s", i, got, st.want)
		}
	}
}

// A key may be the PostgreSQL table's unique constraint rather than its
// primary key, in another order; the kshare key and the PostgreSQL key
// must name the same columns.
func TestJdbcUpsertByUniqueConstraint(t *testing.T) {
	pg := pgtest.Table(t, "id serial PRIMARY KEY, a int NOT NULL, b text NOT NULL, v text, UNIQUE (b, a)")
	s, w := mustOpen(t, "CREATE TABLE out (a INT, b STRING, v STRING, PRIMARY KEY (a, b) NOT ENFORCED) "+with(t, pg, ""))
	for _, v := range []string{"x", "y"} {
		if err := write(t, w, record(t, s, `[{"a": 1, "b": "k", "v": "`+v+`"}]`), flow.KindInsert); err != nil {
			t.Fatal(err)
		}
	}
	if got := rowsOf(t, "SELECT a, b, v FROM "+pg); got != "1|k|y" {
		t.Errorf("got %q, want the row replaced", got)
	}
}

// A row the server refuses fails its batch with a RowError naming the
// table, the constraint and the row; the other batches of the flush are
// written, and so are later ones.
func TestJdbcConstraintViolation(t *testing.T) {
	for _, key := range []bool{false, true} {
		t.Run(fmt.Sprintf("key=%v", key), func(t *testing.T) {
			pg := pgtest.Table(t, "id int, v int CONSTRAINT v_positive CHECK (v > 0)")
			ddl := "CREATE TABLE out (id INT, v INT) " + with(t, pg, "")
			if key {
				pgtest.Exec(t, "ALTER TABLE "+pg+" ADD PRIMARY KEY (id)")
				ddl = "CREATE TABLE out (id INT, v INT, PRIMARY KEY (id) NOT ENFORCED) " + with(t, pg, "")
			}
			s, w := mustOpen(t, ddl)
			good := record(t, s, `[{"id": 1, "v": 1}]`)
			bad := record(t, s, `[{"id": 2, "v": 2}, {"id": 3, "v": -3}]`)
			// Both batches are queued before the first flush can end,
			// most often in one flush.
			errs := make(chan error, 2)
			for _, rec := range []arrow.RecordBatch{good, bad} {
				if err := w.Write(pgtest.Context(t), rec, func(err error) { errs <- err }); err != nil {
					t.Fatal(err)
				}
			}
			var rowErr *flow.RowError
			var failed int
			for range 2 {
				err := <-errs
				if err == nil {
					continue
				}
				failed++
				if !errors.As(err, &rowErr) || rowErr.Row != 1 {
					t.Fatalf("got %v, want a RowError for row 1 (the second)", err)
				}
				for _, part := range []string{"table 'out'", pg, "v_positive", "violates check constraint", "(3, -3)"} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q does not say %q", err, part)
					}
				}
			}
			if failed != 1 {
				t.Fatalf("%d batches failed, want 1", failed)
			}
			if got := rowsOf(t, "SELECT id, v FROM "+pg+" ORDER BY id"); got != "1|1" {
				t.Errorf("table holds %q, want the good batch alone", got)
			}
			if err := write(t, w, record(t, s, `[{"id": 4, "v": 4}]`)); err != nil {
				t.Errorf("a later batch: %v", err)
			}
			if st := w.Stats(); st.Written != 4 || st.Acked != 2 || st.Failed != 2 {
				t.Errorf("stats %+v, want 4 written, 2 acknowledged, 2 failed", st)
			}
		})
	}
}

// A flush whose connection broke is written again on a new connection.
func TestJdbcRetriesOnLostConnection(t *testing.T) {
	pg := pgtest.Table(t, "id int")
	s, w := mustOpen(t, "CREATE TABLE out (id INT) "+with(t, pg, ", 'sink.max-retries' = '2'"))
	if err := write(t, w, record(t, s, `[{"id": 1}]`)); err != nil {
		t.Fatal(err)
	}
	// The server ends the sink's session, as a restart would.
	got := pgtest.Query(t, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'kshare "+pg+"'")
	if got[0][0] != "1" {
		t.Fatalf("ended %s sessions, want the sink's one", got[0][0])
	}
	if err := write(t, w, record(t, s, `[{"id": 2}]`)); err != nil {
		t.Fatalf("after the connection was ended: %v", err)
	}
	if got := rowsOf(t, "SELECT id FROM "+pg+" ORDER BY id"); got != "1\n2" {
		t.Errorf("table holds %q, want both rows", got)
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Open says what is wrong before anything is read, and never shows the
// password.
func TestJdbcOpenErrors(t *testing.T) {
	pg := pgtest.Table(t, "k text PRIMARY KEY, n bigint, note varchar(20)")
	noKey := pgtest.Table(t, "k text, n bigint")
	strict := pgtest.Table(t, "k text, n bigint, must text NOT NULL")
	u, user, password := jdbcURL(t)
	downAddr := closedPort(t)
	down := "jdbc:postgresql://" + downAddr + "/kshare"
	for _, tc := range []struct {
		name, ddl string
		want      []string
	}{
		{"wrong password", fmt.Sprintf(`CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = '%s', 'username' = '%s', 'password' = 'not-the-password')`, u, pg, user),
			[]string{"table 'out': cannot connect to PostgreSQL at 127.0.0.1:", "user '" + user + "'", "the server refused the login", "password authentication failed", "check 'username' and 'password'"}},
		{"server down", fmt.Sprintf(`CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = '%s', 'username' = '%s', 'password' = '%s')`, down, pg, user, password),
			[]string{"table 'out': cannot connect to PostgreSQL at " + downAddr + " ", "connection refused; check that the server runs and that 'url' names its host and port"}},
		{"missing table", "CREATE TABLE out (k STRING) " + with(t, "no_such_table", ""),
			[]string{"table 'out': PostgreSQL has no table no_such_table in database 'kshare'", "kshare does not create tables"}},
		{"missing column", "CREATE TABLE out (k STRING, nope INT) " + with(t, pg, ""),
			[]string{"table 'out': its columns do not fit PostgreSQL table " + pg, "column 'nope' is not a column of PostgreSQL table " + pg + " (its columns: k, n, note)"}},
		{"wrong type", "CREATE TABLE out (k STRING, n STRING, note INT) " + with(t, pg, ""),
			[]string{"column 'n' is STRING, and PostgreSQL column n is bigint, which cannot hold it; make the PostgreSQL column text, varchar, char or jsonb",
				"column 'note' is INT, and PostgreSQL column note is character varying(20), which cannot hold it; make the PostgreSQL column integer, bigint or jsonb"}},
		{"unfilled NOT NULL column", "CREATE TABLE out (k STRING, n BIGINT) " + with(t, strict, ""),
			[]string{"PostgreSQL column must is NOT NULL without a default, and table 'out' has no column for it"}},
		{"key mismatch", "CREATE TABLE out (k STRING, n BIGINT, PRIMARY KEY (n) NOT ENFORCED) " + with(t, pg, ""),
			[]string{"table 'out': its PRIMARY KEY (n) is no key of PostgreSQL table " + pg + ", which has PRIMARY KEY (k); an upsert needs one on the same columns"}},
		{"no key in PostgreSQL", "CREATE TABLE out (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) " + with(t, noKey, ""),
			[]string{"PostgreSQL table " + noKey + ", which has no primary key or unique constraint", "ALTER TABLE " + noKey + " ADD PRIMARY KEY (k)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := open(t, tc.ddl)
			if err == nil {
				t.Fatal("opened")
			}
			for _, part := range tc.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error\n%v\ndoes not say\n%s", err, part)
				}
			}
			var te *table.Error
			if !errors.As(err, &te) || te.Table != "out" {
				t.Errorf("error %v is not a table.Error of table 'out'", err)
			}
			if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), "not-the-password") {
				t.Errorf("error shows the password: %v", err)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s to fail", d)
			}
		})
	}
}

// A server that takes the connection and never answers is reported
// within the connect timeout, not after the system's TCP timeout.
func TestJdbcOpenSilentServer(t *testing.T) {
	defer jdbc.SetConnectTimeout(time.Second)()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- c
		}
	}()
	start := time.Now()
	_, _, err = open(t, "CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://"+l.Addr().String()+"/db?sslmode=disable', 'table-name' = 't')")
	want := "table 'out': cannot connect to PostgreSQL at " + l.Addr().String() + " (database 'db', user '"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "no answer within 1s; check that the server runs") {
		t.Errorf("got %v, want %q and no answer within 1s", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	l.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Error("the sink never connected")
	}
}

// The password is masked in SHOW CREATE TABLE, and a URL of another
// database is refused without repeating the URL.
func TestJdbcOptions(t *testing.T) {
	stmts, err := parse.Parse("CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://h:5432/db', 'table-name' = 't', 'password' = 's3cret')")
	if err != nil {
		t.Fatal(err)
	}
	def := stmts[0].(*table.CreateTable).Def
	if ddl := def.String(); strings.Contains(ddl, "s3cret") || !strings.Contains(ddl, "'password' = '"+table.Masked+"'") {
		t.Errorf("SHOW CREATE TABLE shows:\n%s", ddl)
	}
	_, err = sinkOf(t, "CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://u:s3cret@h/db', 'table-name' = 't')")
	if err == nil || !strings.Contains(err.Error(), "'url' names a database other than PostgreSQL") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("got %v", err)
	}
	for _, u := range []string{"postgres://u:s3cret@h/db", "jdbc:postgresql://h/db?user=u&password=s3cret"} {
		_, err := sinkOf(t, "CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = '"+u+"', 'table-name' = 't')")
		if err == nil || !strings.Contains(err.Error(), "'url' holds a password, which SHOW CREATE TABLE and the logs would show; give it as 'password'") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: got %v", u, err)
		}
	}
	for _, u := range []string{"postgres://u@h/db", "postgresql://h:1/db?sslmode=disable", "jdbc:postgresql://h/db"} {
		if _, err := sinkOf(t, "CREATE TABLE out (k STRING) WITH ('connector' = 'jdbc', 'url' = '"+u+"', 'table-name' = 't', 'sink.parallelism' = '4')"); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	// A jdbc table is not read as a stream: it is written, or looked up.
	b, err := table.Bind(def)
	if err != nil {
		t.Fatal(err)
	}
	src, err := b.Connector.NewSource(b)
	if err == nil {
		_, err = src.Open(context.Background(), flow.OpenOptions{})
	}
	if err == nil || !strings.Contains(err.Error(), "table 'out': connector 'jdbc' does not read the PostgreSQL table as a stream; use it as the target of INSERT INTO, or look its rows up by key in a lookup join") {
		t.Errorf("reading a jdbc table: %v", err)
	}
}
