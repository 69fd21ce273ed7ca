package jdbc_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/table"
)

// engine makes an engine with table t (raw v STRING) over a new share
// group holding values, and the tables of ddl; a job's input ends after
// kafkatest.Idle(). It returns the group's coordinates for WaitLag.
func engine(t *testing.T, values []string, ddl ...string) (eng *kshare.Engine, addr, topic, group string) {
	t.Helper()
	addr, topic, group = kafkatest.Queue(t, 1, bytesOf(values)...)
	eng = kshare.New()
	stmts := append([]string{
		`CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw', 'bootstrap.servers' = '` + addr +
			`', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `', 'scan.batch-size' = '50')`,
		`SET 'idle-timeout' = '` + kafkatest.Idle().String() + `'`,
	}, ddl...)
	for _, sql := range stmts {
		if _, err := eng.Exec(kafkatest.Context(t), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return eng, addr, topic, group
}

// bytesOf is values as the record values to produce.
func bytesOf(values []string) [][]byte {
	vs := make([][]byte, len(values))
	for i, v := range values {
		vs[i] = []byte(v)
	}
	return vs
}

// numbers are the values "0" to "n-1".
func numbers(n int) []string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprint(i)
	}
	return values
}

// run runs an INSERT to its end and checks that every row was
// acknowledged and every record accepted, and the group's lag is 0.
func run(t *testing.T, eng *kshare.Engine, insert string, n int, addr, topic, group string) {
	t.Helper()
	res, err := eng.Exec(kafkatest.Context(t), insert)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.State != table.JobFinished || st.Accepted != int64(n) || st.Released != 0 {
		t.Errorf("stats %+v, want FINISHED with all %d records accepted", st, n)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
}

// INSERT INTO a jdbc table without a key appends every row of the query;
// each record is accepted once its row is committed.
func TestJdbcPipelineAppend(t *testing.T) {
	const n = 300
	pg := pgtest.Table(t, "v text NOT NULL, len integer")
	values := numbers(n)
	eng, addr, topic, group := engine(t, values, "CREATE TABLE pg (v STRING, len INT) "+with(t, pg, ""))
	run(t, eng, "INSERT INTO pg SELECT v, CHAR_LENGTH(v) FROM t", n, addr, topic, group)
	got := pgtest.Query(t, "SELECT count(*), count(DISTINCT v), min(v::int), max(v::int), sum(len) FROM "+pg)[0]
	// 10 one-digit ids, 90 two-digit, 200 three-digit.
	if want := []string{"300", "300", "0", "299", fmt.Sprint(10 + 90*2 + 200*3)}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("PostgreSQL holds count, distinct, min, max, sum(len) %q, want %q", got, want)
	}
}

// INSERT INTO a jdbc table keyed by the GROUP BY column upserts the
// running counts: at the end each key's row holds its total.
func TestJdbcPipelineUpsertGroupByCount(t *testing.T) {
	const n, keys = 350, 7
	pg := pgtest.Table(t, "k text PRIMARY KEY, n bigint NOT NULL")
	values := make([]string, n)
	want := map[string]int{}
	for i := range values {
		values[i] = fmt.Sprintf("c%d", i*i%keys)
		want[values[i]]++
	}
	eng, addr, topic, group := engine(t, values, "CREATE TABLE pg (k STRING, n BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED) "+with(t, pg, ""))
	run(t, eng, "INSERT INTO pg SELECT v, COUNT(*) FROM t GROUP BY v", n, addr, topic, group)
	got := pgtest.Query(t, "SELECT k, n FROM "+pg+" ORDER BY k")
	if len(got) != len(want) {
		t.Fatalf("PostgreSQL holds %q, want the %d keys of %v", got, len(want), want)
	}
	for _, r := range got {
		if r[1] != fmt.Sprint(want[r[0]]) {
			t.Errorf("key %s: %s, want %d", r[0], r[1], want[r[0]])
		}
	}
}

// INSERT INTO a jdbc table that writes exactly once: every row is
// written, each record's identity stored with it, and every record
// accepted.
func TestJdbcPipelineExactlyOnce(t *testing.T) {
	const n = 300
	pg := pgtest.Table(t, "v text NOT NULL")
	recs := recordsTable(t)
	values := numbers(n)
	eng, addr, topic, group := engine(t, values, "CREATE TABLE pg (v STRING) "+
		with(t, pg, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'"))
	run(t, eng, "INSERT INTO pg SELECT v FROM t", n, addr, topic, group)
	if got := pgtest.Query(t, "SELECT count(*), count(DISTINCT v) FROM "+pg)[0]; got[0] != "300" || got[1] != "300" {
		t.Errorf("PostgreSQL holds %s rows, %s distinct, want each of the %d once", got[0], got[1], n)
	}
	got := pgtest.Query(t, "SELECT count(*), min(share_group), max(share_group), min(topic), max(topic), min(kafka_offset), max(kafka_offset) FROM "+records(recs))[0]
	if want := []string{"300", group, group, topic, topic, "0", "299"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("records table holds count, groups, topics, offsets %q, want %q", got, want)
	}
}

// A job that writes exactly once has the sink forget the records the
// share group settled for good. Kafka 4.3 persists a partition's start
// offset with the next acknowledgements after those that let it move on,
// so the test accepts 200 records, then one more: the 200 are then behind
// the start offset, and the records table keeps at most the last one.
func TestJdbcPipelineForgetsSettledRecords(t *testing.T) {
	const n = 200
	pg := pgtest.Table(t, "v text NOT NULL")
	recs := recordsTable(t)
	values := numbers(n)
	eng, addr, topic, group := engine(t, values, "CREATE TABLE pg (v STRING) "+
		with(t, pg, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"', 'sink.exactly-once.prune-interval' = '1 s'"),
		"SET 'idle-timeout' = '1 h'")
	res, err := eng.Exec(kafkatest.Context(t), "INSERT INTO pg SELECT v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Job.Stop()
	waitAccepted(t, res.Job, n)
	kafkatest.Produce(t, addr, topic, []byte("last"))
	waitAccepted(t, res.Job, n+1)
	kafkatest.Eventually(t, "the settled records forgotten", func() error {
		if got := pgtest.Query(t, "SELECT count(*), coalesce(min(kafka_offset), -1) FROM "+recs)[0]; got[0] != "0" && got[0] != "1" {
			return fmt.Errorf("the records table holds %s records from offset %s", got[0], got[1])
		}
		return nil
	})
	if got := pgtest.Query(t, "SELECT count(*) FROM "+pg)[0][0]; got != fmt.Sprint(n+1) {
		t.Errorf("PostgreSQL holds %s rows, want %d", got, n+1)
	}
	res.Job.Stop()
	if st := res.Job.Stats(); st.Err != nil || st.Accepted != n+1 {
		t.Errorf("job stats %+v, want every record accepted and no error", st)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
}

// An updating query needs a key that is its GROUP BY columns, said at
// statement time; a jdbc table cannot be read.
func TestJdbcPipelineStatementErrors(t *testing.T) {
	keyed := pgtest.Table(t, "k text PRIMARY KEY, n bigint")
	byN := pgtest.Table(t, "k text, n bigint PRIMARY KEY")
	plain := pgtest.Table(t, "k text, n bigint")
	recs := recordsTable(t)
	eng, _, _, _ := engine(t, nil,
		"CREATE TABLE nokey (k STRING, n BIGINT) "+with(t, plain, ""),
		"CREATE TABLE bykey (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) "+with(t, keyed, ""),
		"CREATE TABLE byn (k STRING, n BIGINT, PRIMARY KEY (n) NOT ENFORCED) "+with(t, byN, ""),
		"CREATE TABLE once (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) "+with(t, keyed, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'"),
		"CREATE TABLE plain (v STRING) WITH ('connector' = 'kafka', 'properties.bootstrap.servers' = '127.0.0.1:9', 'topic' = 'x', 'format' = 'raw')",
	)
	for _, tc := range []struct {
		sql  string
		kind error
		want string
	}{
		{"INSERT INTO nokey SELECT v, COUNT(*) FROM t GROUP BY v", kshare.ErrUpdatingInsert,
			"INSERT INTO 'nokey' of an aggregate query: its rows update earlier ones (-U/+U), and table 'nokey' has no PRIMARY KEY by which connector 'jdbc' could replace them; declare the GROUP BY columns as its key"},
		{"INSERT INTO byn SELECT v, COUNT(*) FROM t GROUP BY v", kshare.ErrInsertMismatch,
			"INSERT INTO 'byn': the query's rows are keyed by its GROUP BY columns `k`, and table 'byn' has PRIMARY KEY (`n`)"},
		{"INSERT INTO bykey SELECT UPPER(v), COUNT(*) FROM t GROUP BY v", kshare.ErrInsertMismatch,
			"INSERT INTO 'bykey' of an aggregate query that does not select every GROUP BY column as it is"},
		{"INSERT INTO bykey SELECT CAST('all' AS STRING), COUNT(*) FROM t", kshare.ErrInsertMismatch,
			"INSERT INTO 'bykey': the query has no GROUP BY, so its one row has no key, and table 'bykey' is written by its PRIMARY KEY (`k`)"},
		{"INSERT INTO once SELECT v, COUNT(*) * 2 FROM t GROUP BY v", kshare.ErrNotExactlyOnce,
			"INSERT INTO 'once' of an aggregate query: table 'once' writes an aggregate exactly once by adding what each batch changes to the rows it holds, and the result cannot be merged: column `EXPR$1` is an expression"},
		{"INSERT INTO once SELECT v, CAST(1 AS BIGINT) FROM plain", kshare.ErrNotExactlyOnce,
			"INSERT INTO 'once' from table 'plain' (connector 'kafka'): table 'once' writes exactly once by storing the share group and coordinates of the record each row came from, and only a 'kafka-sharegroup' table tells them"},
		{"SELECT * FROM bykey", nil,
			"connector 'jdbc' does not read the PostgreSQL table as a stream; use it as the target of INSERT INTO, or look its rows up by key in a lookup join"},
	} {
		var err error
		if strings.HasPrefix(tc.sql, "SELECT") {
			rows, qerr := eng.Query(kafkatest.Context(t), tc.sql)
			err = qerr
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
		} else {
			_, err = eng.Exec(kafkatest.Context(t), tc.sql)
		}
		if err == nil || (tc.kind != nil && !errors.Is(err, tc.kind)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\ngot  %v\nwant %s", tc.sql, err, tc.want)
		}
	}
	if n := pgtest.Query(t, "SELECT count(*) FROM "+keyed)[0][0]; n != "0" {
		t.Errorf("a refused INSERT wrote %s rows", n)
	}
}

// A row PostgreSQL refuses fails the job with an error that names the
// table, the constraint, the row and its source record; its records are
// not accepted.
func TestJdbcPipelineRefusedRow(t *testing.T) {
	pg := pgtest.Table(t, "v integer CONSTRAINT v_positive CHECK (v > 0)")
	values := []string{"1", "2", "-3", "4"}
	eng, _, topic, _ := engine(t, values, "CREATE TABLE pg (v INT) "+with(t, pg, ""))
	res, err := eng.Exec(kafkatest.Context(t), "INSERT INTO pg SELECT CAST(v AS INT) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	err = res.Job.Wait(kafkatest.Context(t))
	var rowErr *flow.RowError
	if !errors.As(err, &rowErr) {
		t.Fatalf("job ended with %v, want a RowError", err)
	}
	for _, part := range []string{"table 'pg'", pg, "v_positive", "(-3)", "source record " + topic + "[0]@2 (delivery 1)"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
	if st := res.Job.Stats(); st.State != table.JobFailed || st.Accepted == int64(len(values)) {
		t.Errorf("stats %+v, want FAILED with the refused row's record not accepted", st)
	}
}

// With 'sink.on-refused-record' = 'dead-letter', a row PostgreSQL refuses
// goes by its source table's policy for rows a query cannot use: its
// record goes to the table's dead-letter topic, saying what the server
// refused, and the other rows of its batch are written without it; the
// job goes on, and every record is accepted.
func TestJdbcPipelineRefusedRowDeadLettered(t *testing.T) {
	pg := pgtest.Table(t, "v integer CONSTRAINT v_positive CHECK (v > 0)")
	var values [][]byte
	want := 0
	for i := 1; i <= 200; i++ {
		v := i
		if i%37 == 0 {
			v = -i // refused
		} else {
			want++
		}
		values = append(values, []byte(fmt.Sprint(v)))
	}
	addr, topic, group := kafkatest.Queue(t, 1, values...)
	dlq := kafkatest.Topic(t, addr, 1)
	eng := kshare.New()
	for _, sql := range []string{
		`CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw', 'bootstrap.servers' = '` + addr +
			`', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `', 'scan.batch-size' = '50',
		  'scan.on-eval-error' = 'dead-letter', 'scan.dead-letter.topic' = '` + dlq + `')`,
		`SET 'idle-timeout' = '` + kafkatest.Idle().String() + `'`,
		"CREATE TABLE pg (v INT) " + with(t, pg, ", 'sink.on-refused-record' = 'dead-letter'"),
		`CREATE TABLE plain (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw', 'bootstrap.servers' = '` + addr +
			`', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `')`,
	} {
		if _, err := eng.Exec(kafkatest.Context(t), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// From a table without a dead-letter topic, the INSERT says what to
	// set before it reads anything.
	_, err := eng.Exec(kafkatest.Context(t), "INSERT INTO pg SELECT CAST(v AS INT) FROM plain")
	if err == nil || !strings.Contains(err.Error(), "set its 'scan.on-eval-error' = 'dead-letter'") {
		t.Errorf("INSERT from a table without a dead-letter topic: %v, want what to set", err)
	}
	run(t, eng, "INSERT INTO pg SELECT CAST(v AS INT) FROM t", len(values), addr, topic, group)
	if n := pgtest.Query(t, "SELECT count(*) FROM "+pg)[0][0]; n != fmt.Sprint(want) {
		t.Errorf("%s rows in %s, want the %d the server takes", n, pg, want)
	}
	dead := kafkatest.ReadTopic(t, addr, dlq, len(values)-want)
	if len(dead) != len(values)-want {
		t.Fatalf("%d dead letters, want %d", len(dead), len(values)-want)
	}
	for _, r := range dead {
		var why string
		for _, h := range r.Headers {
			if h.Key == "kshare.error" {
				why = string(h.Value)
			}
		}
		if !strings.HasPrefix(string(r.Value), "-") || !strings.Contains(why, "v_positive") || !strings.Contains(why, "source record "+topic) {
			t.Errorf("dead letter %q says %q; want a refused value, its constraint and its record", r.Value, why)
		}
	}
}

// PostgreSQL restarted under a running job that writes exactly once: the
// next flush finds its connection gone, is tried again on a new one once
// the server is back, and in the end every record's row is there once and
// every record accepted.
func TestJdbcPipelineSurvivesRestart(t *testing.T) {
	const n = 400
	srv := pgtest.Private(t)
	job, produceRest, addr, topic, group := startHalfway(t, srv, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.max-retries' = '10'", n)
	srv.Restart()
	produceRest()
	waitAccepted(t, job, n)
	job.Stop()
	if st := job.Stats(); st.Err != nil || st.Accepted != n || st.Errors != 0 {
		t.Errorf("job stats %+v, want every record accepted, no error", st)
	}
	conn, err := pgx.Connect(pgtest.Context(t), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, distinct int
	if err := conn.QueryRow(pgtest.Context(t), "SELECT count(*), count(DISTINCT v) FROM restarted").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Errorf("PostgreSQL holds %d rows, %d distinct, want each of the %d once", rows, distinct, n)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
}

// startHalfway starts "INSERT INTO pg SELECT v FROM t" from a topic holding
// the first half of the numbers below n into table "restarted" on srv (see
// privateTable, which takes extra), and returns once the job has accepted
// that half, so that what the test then does to the server happens under
// a running job. produceRest adds the other half to the topic; the test's
// end stops the job.
func startHalfway(t *testing.T, srv *pgtest.Server, extra string, n int) (job table.Job, produceRest func(), addr, topic, group string) {
	t.Helper()
	values := numbers(n)
	eng, addr, topic, group := engine(t, values[:n/2], privateTable(t, srv, extra), "SET 'idle-timeout' = '1 h'")
	res, err := eng.Exec(kafkatest.Context(t), "INSERT INTO pg SELECT v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(res.Job.Stop)
	waitAccepted(t, res.Job, int64(n/2))
	produceRest = func() { kafkatest.Produce(t, addr, topic, bytesOf(values[n/2:])...) }
	return res.Job, produceRest, addr, topic, group
}

// waitAccepted waits until job, still running, has accepted want records.
func waitAccepted(t *testing.T, job table.Job, want int64) {
	t.Helper()
	kafkatest.Eventually(t, fmt.Sprintf("%d records accepted", want), func() error {
		if st := job.Stats(); st.Accepted < want || st.State != table.JobRunning {
			return fmt.Errorf("job stats %+v", st)
		}
		return nil
	})
}

// privateTable makes table "restarted" (v text) on srv and returns the DDL
// of jdbc table pg writing it, with extra WITH pairs.
func privateTable(t *testing.T, srv *pgtest.Server, extra string) string {
	t.Helper()
	conn, err := pgx.Connect(pgtest.Context(t), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(pgtest.Context(t), "CREATE TABLE restarted (v text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := pu.User.Password()
	return fmt.Sprintf("CREATE TABLE pg (v STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://%s%s?sslmode=disable', 'table-name' = 'restarted', "+
		"'username' = '%s', 'password' = '%s'%s)", pu.Host, pu.Path, pu.User.Username(), password, extra)
}

// PostgreSQL gone for good under a running job: the flush is tried again
// 'sink.max-retries' times, then the job fails with an error that says so,
// and the records of the rows not written are released, not accepted.
func TestJdbcPipelineServerGone(t *testing.T) {
	const n = 100
	srv := pgtest.Private(t)
	job, produceRest, _, _, _ := startHalfway(t, srv, ", 'sink.max-retries' = '1'", n)
	srv.Stop()
	produceRest()
	err := job.Wait(kafkatest.Context(t))
	if err == nil || !strings.Contains(err.Error(), "failed 2 times ('sink.max-retries' is 1)") || !strings.Contains(err.Error(), "restarted") {
		t.Fatalf("job ended with %v, want the retries' error naming the table", err)
	}
	if st := job.Stats(); st.State != table.JobFailed || st.Accepted != n/2 || st.Released == 0 {
		t.Errorf("job stats %+v, want FAILED with only the first half accepted and the rest released", st)
	}
}
