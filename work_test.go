package kshare_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/worker"
)

// workLog records what a Work function saw, by id.
type workLog struct {
	mu       sync.Mutex
	seen     map[int]int // deliveries seen
	accepted map[int]int
	running  map[int]bool
	twice    []int // ids started while already running
}

func newWorkLog() *workLog {
	return &workLog{seen: map[int]int{}, accepted: map[int]int{}, running: map[int]bool{}}
}

func (l *workLog) start(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[id]++
	if l.running[id] {
		l.twice = append(l.twice, id)
	}
	l.running[id] = true
}

func (l *workLog) end(id int, accepted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running[id] = false
	if accepted {
		l.accepted[id]++
	}
}

// Every outcome a function can give: done, failed once (released, done on
// its second delivery), rejected (never again), a panic (released), and a
// row past its timeout (released). The query ends after exactly the rows
// these outcomes make, so a record delivered once too often, or a rejected
// one coming back, leaves an id undone.
func TestWorkOutcomes(t *testing.T) {
	const n = 200
	eng := kafkaEngine(t, numbers(n)...)
	log := newWorkLog()
	var origins sync.Map
	fn := func(ctx context.Context, r kshare.Row) error {
		id64, err := r.Int64("id")
		if err != nil {
			return err
		}
		id := int(id64)
		o, ok := r.Origin()
		if !ok {
			t.Errorf("row %d has no origin", id)
		}
		origins.Store(id, o.Offset)
		log.start(id)
		ok = false
		defer func() { log.end(id, ok) }()
		switch {
		case id%10 == 7:
			return kshare.Reject(fmt.Errorf("id %d can never work", id))
		case id%10 == 0 && o.DeliveryCount == 1:
			return errors.New("first try fails")
		case id == 3 && o.DeliveryCount == 1:
			panic("worker bug")
		case id == 5 && o.DeliveryCount == 1:
			<-ctx.Done() // runs past its timeout
			return ctx.Err()
		}
		ok = true
		return nil
	}
	// Every id once, the tenth ids and 3 and 5 twice.
	rows := n + n/10 + 2
	st, err := kshare.Work(kafkatest.Context(t), eng, "SELECT CAST(v AS BIGINT) AS id FROM t", 16, fn,
		kshare.RowTimeout(500*time.Millisecond), kshare.WorkQuery(kshare.MaxRows(int64(rows))))
	if err != nil {
		t.Fatal(err)
	}
	for id := range n {
		want, acc := 1, 1
		switch {
		case id%10 == 7:
			acc = 0
		case id%10 == 0, id == 3, id == 5:
			want = 2
		}
		if log.seen[id] != want || log.accepted[id] != acc {
			t.Errorf("id %d: seen %d times, accepted %d; want %d, %d", id, log.seen[id], log.accepted[id], want, acc)
		}
		if off, _ := origins.Load(id); off != int64(id) {
			t.Errorf("id %d: origin offset %v", id, off)
		}
	}
	want := kshare.WorkStats{Accepted: n - n/10, Released: n/10 + 2, Rejected: n / 10, Panics: 1, TimedOut: 1}
	if st.Accepted != want.Accepted || st.Released != want.Released || st.Rejected != want.Rejected ||
		st.Panics != want.Panics || st.TimedOut != want.TimedOut || st.Running != 0 {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if st.Query.Source.Accepted+st.Query.Source.AckUnconfirmed < want.Accepted {
		t.Errorf("source stats %+v: fewer accepts than rows done", st.Query.Source)
	}
}

// A row that runs longer than the group's lock is not handed to a second
// worker while it runs, nor while it waits for a worker: the locks of rows
// held are renewed from the fetch on. Two pools of the same group, each of
// 8 workers, run tasks of three lock durations on 16 records; the second
// pool starts once the first runs rows. With the pool's own poll sizing the
// first pool's two members take 8 records each; in batch_optimized mode one
// fetch takes all 16, handed over a row at a time as workers free up, so
// half of them wait a whole round, held, for a worker.
func TestWorkKeepsLocksOfRunningRows(t *testing.T) {
	for _, tc := range []struct{ name, with string }{
		{"pool-sizing", ""},
		{"batch_optimized", `, 'properties.share.acquire.mode' = 'batch_optimized', 'source.parallelism' = '1', 'scan.batch-size' = '1'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			workKeepsLocks(t, tc.with)
		})
	}
}

func workKeepsLocks(t *testing.T, with string) {
	const lock = 2 * time.Second
	addr, topic, group := kafkatest.LockedGroup(t, lock)
	const n, workers = 16, 8
	kafkatest.Produce(t, addr, topic, kafkatest.Values(n)...)
	ddl := `CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '` + addr + `', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `'` + with + `)`
	log := newWorkLog()
	var total sync.WaitGroup
	ctx, cancel := context.WithCancel(kafkatest.Context(t))
	defer cancel()
	allDone := make(chan struct{})
	var closeOnce sync.Once
	var stats [2]kshare.WorkStats
	var errs [2]error
	pool := func(p int) {
		eng := kshare.New()
		if _, err := eng.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
		total.Go(func() {
			stats[p], errs[p] = kshare.Work(ctx, eng, "SELECT v FROM t", workers, func(ctx context.Context, r kshare.Row) error {
				v, err := r.String("v")
				if err != nil {
					return err
				}
				id, _ := strconv.Atoi(v)
				log.start(id)
				time.Sleep(3 * lock) // the slow task itself
				log.end(id, true)
				log.mu.Lock()
				if len(log.accepted) == n {
					closeOnce.Do(func() { close(allDone) })
				}
				log.mu.Unlock()
				return nil
			})
		})
	}
	pool(0)
	kafkatest.Eventually(t, "the first pool's first rows", func() error {
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.seen) == 0 {
			return errors.New("none yet")
		}
		return nil
	})
	pool(1)
	select {
	case <-allDone:
	case <-ctx.Done():
		t.Fatalf("not every id was done: %v", log.accepted)
	}
	cancel()
	total.Wait()
	for p, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("pool %d: %v", p, err)
		}
	}
	if len(log.twice) > 0 {
		t.Errorf("ids %v were started by a second worker while the first ran", log.twice)
	}
	for id := range n {
		if log.seen[id] != 1 {
			t.Errorf("id %d was started %d times", id, log.seen[id])
		}
	}
	src := [2]flow.Stats{stats[0].Query.Source, stats[1].Query.Source}
	if src[0].Renewed+src[1].Renewed == 0 {
		t.Errorf("no lock was renewed: %+v %+v", src[0], src[1])
	}
	// Each pool's accepted count is what the broker confirmed: every
	// record once, none settled after its lock ran out.
	if src[0].Accepted+src[1].Accepted != n || src[0].LockExpired+src[1].LockExpired != 0 {
		t.Errorf("accepted %d + %d, lock expired %d + %d; want %d accepted, none expired",
			src[0].Accepted, src[1].Accepted, src[0].LockExpired, src[1].LockExpired, n)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
	t.Logf("pools took %d and %d records", src[0].Records, src[1].Records)
}

// Rows read by name: typed accessors and Scan into a tagged struct, on the
// Go API's Work and on Rows alike.
func TestRowScan(t *testing.T) {
	eng := kafkaEngine(t, `{"id": 7, "name": "plum", "price": 1.25, "ok": true, "note": null}`)
	ctx := kafkatest.Context(t)
	if _, err := eng.Exec(ctx, `CREATE TABLE j (id BIGINT, name STRING, price DECIMAL(10, 2), ok BOOLEAN, note STRING,
	  `+"`offset`"+` BIGINT METADATA VIRTUAL) WITH (
	  'connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '`+optionOf(t, eng, "bootstrap.servers")+`', 'topic' = '`+optionOf(t, eng, "topic")+`',
	  'share-group-id' = '`+optionOf(t, eng, "share-group-id")+`-j', 'scan.startup.mode' = 'earliest-offset')`); err != nil {
		t.Fatal(err)
	}
	type item struct {
		ID     int32    `kshare:"id"`
		Name   string   // by field name
		Price  float64  `kshare:"price"`
		Text   string   `kshare:"price"` // any column as text
		OK     bool     `kshare:"ok"`
		Note   *string  `kshare:"note"`
		Offset int64    `kshare:"offset"`
		Skip   chan int `kshare:"-"`
	}
	want := item{ID: 7, Name: "plum", Price: 1.25, Text: "1.25", OK: true, Offset: 0}
	rows, err := eng.Query(ctx, "SELECT * FROM j", kshare.MaxRows(1))
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("no row: %v", rows.Err())
	}
	var got item
	if err := rows.Scan(0, &got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Rows.Scan: %+v, want %+v", got, want)
	}
	row, err := rows.Row(0)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := row.String("NAME"); err != nil || s != "plum" {
		t.Errorf("String(NAME) = %q, %v", s, err)
	}
	if f, err := row.Float64("price"); err != nil || f != 1.25 {
		t.Errorf("Float64(price) = %v, %v", f, err)
	}
	if _, err := row.String("note"); !errors.Is(err, query.ErrNull) {
		t.Errorf("String(note) of NULL: %v, want ErrNull", err)
	}
	if _, err := row.Int64("name"); err == nil || !strings.Contains(err.Error(), "column 'name' is STRING, not an integer") {
		t.Errorf("Int64(name): %v", err)
	}
	if _, err := row.Bool("nope"); err == nil || !strings.Contains(err.Error(), "no column 'nope' in the result (columns: id, name, price, ok, note, offset)") {
		t.Errorf("Bool(nope): %v", err)
	}
	var small struct {
		Name int64 `kshare:"name"`
	}
	if err := row.Scan(&small); err == nil || !strings.Contains(err.Error(), "field Name") {
		t.Errorf("Scan of a string into int64: %v", err)
	}
	var null struct{ Note string }
	if err := row.Scan(&null); !errors.Is(err, query.ErrNull) || !strings.Contains(err.Error(), "pointer") {
		t.Errorf("Scan of NULL into string: %v", err)
	}
	var missing struct {
		X int `kshare:"x"`
	}
	if err := row.Scan(&missing); err == nil || !strings.Contains(err.Error(), "no column 'x'") {
		t.Errorf("Scan with a tag naming no column: %v", err)
	}
	if err := row.Scan(got); err == nil {
		t.Errorf("Scan into a struct value, not a pointer: no error")
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
}

// optionOf reads a WITH option of table t.
func optionOf(t *testing.T, eng *kshare.Engine, key string) string {
	t.Helper()
	tbl, err := eng.Catalog().Lookup("t")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := tbl.Bound.Def.Option(key)
	return v
}

// Bad input is refused, saying why, before the share group is joined.
func TestWorkBadInput(t *testing.T) {
	eng := kafkaEngine(t)
	ctx := kafkatest.Context(t)
	nop := func(context.Context, kshare.Row) error { return nil }
	for _, tc := range []struct {
		name, sql   string
		concurrency int
		fn          func(context.Context, kshare.Row) error
		want        string
		is          error // the sentinel it wraps, if any
	}{
		{"concurrency 0", "SELECT v FROM t", 0, nop, "concurrency must be at least 1, got 0", worker.ErrConcurrency},
		{"not a SELECT", "DROP TABLE t", 1, nop, "a query is one SELECT statement, got DROP; run DDL, SHOW, DESCRIBE and SET with Exec", nil},
		{"nil function", "SELECT v FROM t", 1, nil, "work: nil function", nil},
		// An aggregate's row reflects many records; a worker settles each
		// row's own.
		{"an aggregate", "SELECT COUNT(*) FROM t", 1, nop,
			"worker: the query's result is updating: a worker runs its function on rows of one record each, and an aggregate's rows are changes of groups; run GROUP BY and aggregates in the shell",
			query.ErrUpdating},
	} {
		st, err := kshare.Work(ctx, eng, tc.sql, tc.concurrency, tc.fn)
		if err == nil || err.Error() != tc.want || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if st.Done() != 0 || !st.First.IsZero() {
			t.Errorf("%s: stats %+v, want no row", tc.name, st)
		}
	}
	if _, err := eng.Catalog().Lookup("t"); err != nil {
		t.Errorf("the table went away: %v", err)
	}
	group := optionOf(t, eng, "share-group-id")
	adm := kafkatest.Admin(t, optionOf(t, eng, "bootstrap.servers"))
	var d kadm.DescribedShareGroup
	kafkatest.Eventually(t, "a description of share group "+group, func() error {
		// A broker just started answers COORDINATOR_NOT_AVAILABLE for a
		// moment.
		ds, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			return err
		}
		if d = ds[group]; d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
			return d.Err
		}
		return nil
	})
	if !errors.Is(d.Err, kerr.GroupIDNotFound) {
		t.Errorf("share group %s: %+v, want it unknown to the broker: never joined", group, d)
	}
}

// An error wrapped with Stop releases the row and ends Work with it, even
// while the query waits for more records.
func TestWorkStop(t *testing.T) {
	eng := kafkaEngine(t, "1", "2", "3")
	down := errors.New("the model server is gone")
	st, err := kshare.Work(kafkatest.Context(t), eng, "SELECT v FROM t", 2, func(ctx context.Context, r kshare.Row) error {
		return kshare.Stop(down)
	})
	if !errors.Is(err, kshare.ErrStop) || !errors.Is(err, down) {
		t.Fatalf("Work = %v, want the stop error", err)
	}
	if st.Accepted != 0 || st.Released == 0 {
		t.Errorf("stats %+v: want released rows only", st)
	}
	// Nothing was lost: a second pool gets all three.
	got, _ := values(t, eng, "SELECT v FROM t", kshare.MaxRows(3))
	if fmt.Sprint(sorted(got)) != "[1 2 3]" {
		t.Errorf("after the stop: %v, want 1 2 3 again", got)
	}
}
