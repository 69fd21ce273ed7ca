package jdbc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// lookupOf binds the table of one CREATE TABLE and returns its source as a
// flow.LookupSource.
func lookupOf(t *testing.T, ddl string) (flow.LookupSource, *table.Bound, error) {
	t.Helper()
	b, err := bind(t, ddl)
	if err != nil {
		return nil, nil, err
	}
	src, err := b.Connector.NewSource(b)
	if err != nil {
		return nil, b, err
	}
	return src.(flow.LookupSource), b, nil
}

// openLookup opens a lookup of the table of ddl by the columns at keys
// (positions in its schema); any error fails t, and the test's cleanup
// closes the lookup.
func openLookup(t *testing.T, ddl string, keys ...int) (flow.Lookuper, *table.Bound) {
	t.Helper()
	ls, b, err := lookupOf(t, ddl)
	if err != nil {
		t.Fatal(err)
	}
	lk, err := ls.OpenLookup(pgtest.Context(t), flow.LookupOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lk.Close() })
	return lk, b
}

// keyRecord is keys (Arrow JSON) as a record of the key columns keyCols;
// the test's cleanup releases it, and its memory must all be released by
// then.
func keyRecord(t *testing.T, keyCols []types.Column, keys string) arrow.RecordBatch {
	t.Helper()
	kr, _, err := array.RecordFromJSON(tabletest.CheckedAlloc(t), (&types.Schema{Columns: keyCols}).Arrow(), strings.NewReader(keys))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kr.Release)
	return kr
}

// lookupRows looks keys (Arrow JSON of the key columns) up and renders each
// row found as "key#: v|v|...".
func lookupRows(t *testing.T, lk flow.Lookuper, b *table.Bound, keyCols []types.Column, keys string) []string {
	t.Helper()
	rows, of, err := lk.Lookup(pgtest.Context(t), keyRecord(t, keyCols, keys))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Release()
	return render1(rows, of, b.Def.Schema.Columns)
}

func render1(rows arrow.RecordBatch, of []int, cols []types.Column) []string {
	var out []string
	for i := range int(rows.NumRows()) {
		vals := []string{}
		for k, c := range cols {
			vals = append(vals, render.OrNull(render.Formatter(rows.Column(k), c.Type)(i)))
		}
		out = append(out, strings.Join(append([]string{string(rune('0' + of[i]))}, vals...), "|"))
	}
	return out
}

// A lookup asks for many keys in one query and reads every type back as
// INSERT INTO writes it; keys without a row give none, a key with several
// rows gives each.
func TestJdbcLookupTypes(t *testing.T) {
	pg := pgtest.Table(t, `id bigint, b boolean, i integer, s smallint, f real, d double precision, dec numeric(10, 2),
		name text, vc varchar(10), by bytea, dt date, ts timestamp(3), tz timestamptz, tm time`)
	pgtest.Exec(t, "INSERT INTO "+pg+` VALUES
		(1, true, 70000, -3, 1.5, 2.25, 12345678.90, 'hé', 'v', '\x000102', '2024-01-02', '2024-01-02 03:04:05.678', '2024-01-02 03:04:05.678+00', '01:02:03.004'),
		(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		(2, false, 5, 1, 0, 0, 0.10, 'again', NULL, NULL, NULL, NULL, NULL, NULL)`)
	lk, b := openLookup(t, `CREATE TABLE c (id BIGINT, b BOOLEAN, i INT, s SMALLINT, f FLOAT, d DOUBLE, dec DECIMAL(10, 2),
		name STRING, vc VARCHAR(10), by BYTES, dt DATE, ts TIMESTAMP(3), tz TIMESTAMP_LTZ(3), tm TIME(3)) `+with(t, pg, ""), 0)
	got := lookupRows(t, lk, b, b.Def.Schema.Columns[:1], `[{"id": 3}, {"id": 1}, {"id": 2}]`)
	want := []string{
		"1|1|TRUE|70000|-3|1.5|2.25|12345678.90|hé|v|x'000102'|2024-01-02|2024-01-02 03:04:05.678|2024-01-02 03:04:05.678|01:02:03.004",
		"2|2|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
		"2|2|FALSE|5|1|0.0|0.0|0.10|again|NULL|NULL|NULL|NULL|NULL|NULL",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A key of two columns, one of them an INT looked up in a bigint column.
func TestJdbcLookupCompositeKey(t *testing.T) {
	pg := pgtest.Table(t, "region text, id bigint, name text, PRIMARY KEY (region, id)")
	pgtest.Exec(t, "INSERT INTO "+pg+" VALUES ('eu', 1, 'ann'), ('us', 1, 'bob'), ('eu', 2, 'cy')")
	lk, b := openLookup(t, `CREATE TABLE c (region STRING, id INT, name STRING, PRIMARY KEY (region, id) NOT ENFORCED) `+with(t, pg, ""), 1, 0)
	keyCols := []types.Column{b.Def.Schema.Columns[1], b.Def.Schema.Columns[0]}
	got := strings.Join(lookupRows(t, lk, b, keyCols, `[{"id": 1, "region": "us"}, {"id": 2, "region": "us"}, {"id": 2, "region": "eu"}]`), " ")
	if want := "0|us|1|bob 2|eu|2|cy"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// What cannot be looked up is refused with what to change.
func TestJdbcLookupRefusals(t *testing.T) {
	pg := pgtest.Table(t, "id bigint, tags integer[]")
	cases := []struct{ ddl, want string }{
		{`CREATE TABLE c (id BIGINT) ` + with(t, "no_such_table", ""), "PostgreSQL has no table no_such_table"},
		{`CREATE TABLE c (id STRING) ` + with(t, pg, ""), "column 'id' is STRING, and PostgreSQL column id is bigint"},
		{`CREATE TABLE c (id BIGINT, tags ARRAY<INT>) ` + with(t, pg, ""), "column 'tags' is ARRAY<INT>, which a lookup join does not read yet"},
	}
	for _, c := range cases {
		ls, _, err := lookupOf(t, c.ddl)
		if err == nil {
			var lk flow.Lookuper
			if lk, err = ls.OpenLookup(pgtest.Context(t), flow.LookupOptions{Keys: []int{0}}); err == nil {
				lk.Close()
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one with %q", c.ddl, err, c.want)
		}
	}
	binds := []struct{ extra, want string }{
		{", 'lookup.cache' = 'PARTIAL'", "'lookup.cache' = 'PARTIAL' keeps keys without bound: set 'lookup.partial-cache.max-rows'"},
		{", 'lookup.partial-cache.max-rows' = '10'", "'lookup.partial-cache.max-rows' sets the lookup cache, which 'lookup.cache' = 'NONE' does not keep"},
		{", 'lookup.cache' = 'FULL'", "lookup.cache"},
	}
	for _, c := range binds {
		_, _, err := lookupOf(t, `CREATE TABLE c (id BIGINT) `+with(t, pg, c.extra))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one with %q", c.extra, err, c.want)
		}
	}
	ls, _, err := lookupOf(t, `CREATE TABLE c (id BIGINT) `+with(t, pg, ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '10', 'lookup.max-retries' = '1'"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg := ls.(flow.LookupConfigurer).LookupConfig(); !cfg.Cache || cfg.MaxRows != 10 || !cfg.CacheMissingKey || cfg.MaxRetries != 1 {
		t.Errorf("config %+v", cfg)
	}
	_, err = ls.(flow.Source).Open(context.Background(), flow.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "FOR SYSTEM_TIME AS OF") {
		t.Errorf("reading a jdbc table as a stream: %v, want a refusal naming the lookup join", err)
	}
}

// A lookup whose server went away fails; the next one connects anew.
func TestJdbcLookupReconnects(t *testing.T) {
	srv := pgtest.Private(t)
	ddl := privateTable(t, srv, "")
	conn, err := pgx.Connect(pgtest.Context(t), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The test server commits without waiting for the disk, and its
	// restart is a crash: this commit waits, so that the table and its
	// row (and everything before them in the log) outlive it.
	if _, err := conn.Exec(pgtest.Context(t), "SET synchronous_commit = on; INSERT INTO restarted VALUES ('ann')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	lk, b := openLookup(t, ddl, 0)
	keyCols := b.Def.Schema.Columns[:1]
	if got := strings.Join(lookupRows(t, lk, b, keyCols, `[{"v": "ann"}, {"v": "bob"}]`), " "); got != "0|ann" {
		t.Fatalf("before the restart: %s", got)
	}
	srv.Restart()
	kr := keyRecord(t, keyCols, `[{"v": "ann"}]`)
	// The connection of before the restart is gone: the lookup fails,
	// saying where.
	if rows, _, err := lk.Lookup(pgtest.Context(t), kr); err == nil {
		rows.Release()
		t.Error("a lookup on the connection the restart ended succeeded")
	} else if !strings.Contains(err.Error(), "lookup in PostgreSQL table restarted") {
		t.Errorf("lookup after the restart: %v", err)
	}
	if got := strings.Join(lookupRows(t, lk, b, keyCols, `[{"v": "ann"}]`), " "); got != "0|ann" {
		t.Errorf("after the restart: %s", got)
	}
}
