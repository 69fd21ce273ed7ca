package jdbc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/table"
)

// orders are n JSON orders of 7 customers, with the truth of the merged
// aggregate: per customer "count|sum|min|max" of the prices (cents).
func orders(n int) (values [][]byte, truth map[string]string) {
	type agg struct{ n, sum, lo, hi int }
	by := map[string]*agg{}
	for i := range n {
		c, cents := fmt.Sprintf("c%d", i*i%7), 100+i%50*7
		values = append(values, fmt.Appendf(nil, `{"customer": %q, "price": %d.%02d}`, c, cents/100, cents%100))
		a := by[c]
		if a == nil {
			a = &agg{lo: cents, hi: cents}
			by[c] = a
		}
		a.n++
		a.sum += cents
		a.lo, a.hi = min(a.lo, cents), max(a.hi, cents)
	}
	truth = map[string]string{}
	for c, a := range by {
		truth[c] = fmt.Sprintf("%d|%d.%02d|%d.%02d|%d.%02d", a.n, a.sum/100, a.sum%100, a.lo/100, a.lo%100, a.hi/100, a.hi%100)
	}
	return values, truth
}

const (
	mergedColumns = "customer text PRIMARY KEY, n bigint NOT NULL, total numeric(12, 2), lo numeric(10, 2), hi numeric(10, 2)"
	mergedInsert  = "INSERT INTO pg SELECT customer, COUNT(*), SUM(price), MIN(price), MAX(price) FROM orders GROUP BY customer"
)

// mergedEngine is an engine with table orders over the share group, in
// small polls so that replicas share the records, and jdbc table pg over
// PostgreSQL table pgTable, written exactly once.
func mergedEngine(t *testing.T, addr, topic, group, pgTable, recs string) *kshare.Engine {
	t.Helper()
	eng := kshare.New()
	for _, sql := range []string{
		`CREATE TABLE orders (customer STRING, price DECIMAL(10, 2)) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = '` + addr +
			`', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `', 'scan.batch-size' = '40',
		  'properties.share.acquire.mode' = 'record_limit', 'properties.max.poll.records' = '40')`,
		`CREATE TABLE pg (customer STRING, n BIGINT NOT NULL, total DECIMAL(38, 2), lo DECIMAL(10, 2), hi DECIMAL(10, 2), PRIMARY KEY (customer) NOT ENFORCED) ` +
			with(t, pgTable, ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'"),
		`SET 'idle-timeout' = '` + kafkatest.Idle().String() + `'`,
	} {
		if _, err := eng.Exec(kafkatest.Context(t), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return eng
}

// holds is what PostgreSQL table pgTable holds, as truth says it.
func holds(t *testing.T, pgTable string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, r := range pgtest.Query(t, "SELECT customer, n, total, lo, hi FROM "+pgTable) {
		got[r[0]] = strings.Join(r[1:], "|")
	}
	return got
}

func sameTotals(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("PostgreSQL holds %d customers, want %d: %v", len(got), len(want), got)
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("customer %s: n|total|lo|hi %q, want %q", c, got[c], w)
		}
	}
}

// An aggregate written exactly once by two replicas of the query in one
// share group: each folds part of the records and merges what its batches
// add into the rows, so the rows hold the totals of all records. Replica A
// folds the first third alone; B joins with empty groups, and the two
// share the second third (how is the broker's to say); A stops, and B
// folds the last third alone.
func TestJdbcPipelineMergedReplicas(t *testing.T) {
	const n = 1200
	values, truth := orders(n)
	addr, topic, group := kafkatest.Queue(t, 2)
	pg := pgtest.Table(t, mergedColumns)
	recs := recordsTable(t)
	start := func() *table.Result {
		t.Helper()
		eng := mergedEngine(t, addr, topic, group, pg, recs)
		if _, err := eng.Exec(kafkatest.Context(t), "SET 'idle-timeout' = '1 h'"); err != nil {
			t.Fatal(err)
		}
		res, err := eng.Exec(kafkatest.Context(t), mergedInsert)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(res.Job.Stop)
		return res
	}
	accepted := func(want int64, jobs ...*table.Result) {
		t.Helper()
		kafkatest.Eventually(t, fmt.Sprintf("%d records accepted", want), func() error {
			var got int64
			for _, res := range jobs {
				st := res.Job.Stats()
				if st.State != table.JobRunning {
					return fmt.Errorf("a job is %s: %v", st.State, st.Err)
				}
				got += st.Accepted
			}
			if got < want {
				return fmt.Errorf("%d accepted", got)
			}
			return nil
		})
	}
	a := start()
	kafkatest.Produce(t, addr, topic, values[:n/3]...)
	accepted(n/3, a)
	b := start()
	kafkatest.WaitShareMembers(t, addr, group, 2)
	kafkatest.Produce(t, addr, topic, values[n/3:2*n/3]...)
	accepted(2*n/3, a, b)
	a.Job.Stop()
	kafkatest.Produce(t, addr, topic, values[2*n/3:]...)
	accepted(n-a.Job.Stats().Accepted, b)
	b.Job.Stop()
	sa, sb := a.Job.Stats(), b.Job.Stats()
	if sa.Accepted+sb.Accepted != n || sa.Err != nil || sb.Err != nil || sa.Released+sb.Released != 0 {
		t.Errorf("replica A %+v, B %+v: want all %d records accepted between them, no error", sa, sb, n)
	}
	t.Logf("replica A accepted %d, B %d", sa.Accepted, sb.Accepted)
	kafkatest.WaitLag(t, addr, group, topic, 0)
	sameTotals(t, holds(t, pg), truth)
}

// A record delivered again whose identity a committed transaction holds
// (its effect is in the rows: a replica wrote it and died before its
// accept reached the broker) is accepted without being folded again. The
// test stores the identities and effect of the first records as such a
// replica would have, and has another consumer release every record once,
// so that all come with a delivery count of 2.
func TestJdbcPipelineMergedSkipsApplied(t *testing.T) {
	const n, done = 400, 150
	values, _ := orders(n)
	addr, topic, group := kafkatest.Queue(t, 1, values...)
	pg := pgtest.Table(t, mergedColumns)
	recs := recordsTable(t)
	// What the dead replica committed: the first records' identities and
	// their totals.
	pgtest.Exec(t, fmt.Sprintf(`CREATE TABLE %s (stream integer NOT NULL, kafka_partition integer NOT NULL, kafka_offset bigint NOT NULL,
		written_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (stream, kafka_partition, kafka_offset))`, recs))
	pgtest.Exec(t, fmt.Sprintf(`CREATE TABLE %s_streams (stream integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, target text NOT NULL,
		share_group text NOT NULL, topic text NOT NULL, UNIQUE (target, share_group, topic))`, recs))
	pgtest.Exec(t, fmt.Sprintf(`INSERT INTO %s_streams (target, share_group, topic) SELECT n.nspname || '.' || c.relname, $1, $2
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($3)`, recs), group, topic, pg)
	pgtest.Exec(t, fmt.Sprintf(`INSERT INTO %s (stream, kafka_partition, kafka_offset) SELECT s.stream, 0, o FROM %[1]s_streams s, generate_series(0, %d) o`, recs, done-1))
	_, first := orders(done)
	for c, v := range first {
		f := strings.Split(v, "|")
		pgtest.Exec(t, "INSERT INTO "+pg+" VALUES ($1, $2, $3, $4, $5)", c, f[0], f[1], f[2], f[3])
	}
	// Every record delivered once and released: the next delivery is the
	// second.
	cl := kafkatest.Client(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	released := 0
	for released < n {
		fs := cl.PollRecords(kafkatest.Context(t), 0)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			r.Ack(kgo.AckRelease)
			released++
		})
	}
	if err := cl.FlushAcks(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	cl.Close()

	eng := mergedEngine(t, addr, topic, group, pg, recs)
	res, err := eng.Exec(kafkatest.Context(t), mergedInsert)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.State != table.JobFinished || st.Accepted != n || st.Released != 0 || st.Applied != done {
		t.Errorf("stats %+v, want FINISHED with all %d records accepted, %d of them applied already", st, n, done)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
	_, truth := orders(n)
	sameTotals(t, holds(t, pg), truth)
}

// What cannot be merged is refused at INSERT, saying why and what to do.
func TestJdbcPipelineMergeRefusals(t *testing.T) {
	addr, topic, group := kafkatest.Queue(t, 1)
	pg := pgtest.Table(t, mergedColumns)
	recs := recordsTable(t)
	eng := mergedEngine(t, addr, topic, group, pg, recs)
	// A table of the average's type, for the refusal of AVG to be the
	// merge's, not the columns'.
	ddl := "CREATE TABLE pg_avg (customer STRING, n BIGINT NOT NULL, total DECIMAL(38, 6), lo DECIMAL(10, 2), hi DECIMAL(10, 2), PRIMARY KEY (customer) NOT ENFORCED) " +
		with(t, pgtest.Table(t, "customer text PRIMARY KEY, n bigint NOT NULL, total numeric, lo numeric(10, 2), hi numeric(10, 2)"),
			", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '"+recs+"'")
	if _, err := eng.Exec(kafkatest.Context(t), ddl); err != nil {
		t.Fatalf("%s: %v", ddl, err)
	}
	for sql, want := range map[string]string{
		"INSERT INTO pg_avg SELECT customer, COUNT(*), AVG(price), MIN(price), MAX(price) FROM orders GROUP BY customer":                 "select SUM and COUNT instead",
		"INSERT INTO pg SELECT customer, COUNT(DISTINCT price), SUM(price), MIN(price), MAX(price) FROM orders GROUP BY customer":        "DISTINCT",
		"INSERT INTO pg SELECT customer, COUNT(*) * 2, SUM(price), MIN(price), MAX(price) FROM orders GROUP BY customer":                 "is an expression",
		"INSERT INTO pg SELECT customer, COUNT(*), SUM(price), MIN(price), MAX(price) FROM orders GROUP BY customer HAVING COUNT(*) > 1": "HAVING",
	} {
		_, err := eng.Exec(kafkatest.Context(t), sql)
		if !errors.Is(err, kshare.ErrNotExactlyOnce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a refusal saying %q", sql, err, want)
		}
	}
}
