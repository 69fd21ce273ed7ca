package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// fixture is table t (id BIGINT) in memory: its source hands out the
// batches of ids a test gives, then ends, or, unless eof, waits for the
// query's context as a topic does. The source records what became of
// every row, so a test reads each record's fate from it, as the broker
// would see it.
type fixture struct {
	t    *testing.T
	mem  memory.Allocator
	cat  *table.Catalog
	src  *tabletest.Source
	ids  [][]int64
	logs *watch.Buffer
}

func newFixture(t *testing.T, eof bool, batches ...[]int64) *fixture {
	t.Helper()
	mem := tabletest.CheckedAlloc(t)
	c := &tabletest.Connector{Kind: "mem"}
	cat := table.NewCatalogWith(tabletest.Registry(c, "mem"))
	sts, err := parse.Parse("CREATE TABLE t (id BIGINT) WITH ('connector' = 'mem', 'format' = 'mem')")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.Exec(sts[0]); err != nil {
		t.Fatal(err)
	}
	src := c.Sources()[0]
	src.EOF = eof
	src.Batches = tabletest.IDBatches(t, mem, src.Schema, batches...)
	t.Cleanup(src.Release)
	return &fixture{t: t, mem: mem, cat: cat, src: src, ids: batches, logs: &watch.Buffer{}}
}

// query starts sql over the table with ctx.
func (f *fixture) query(ctx context.Context, sql string) *query.Rows {
	f.t.Helper()
	p, err := query.Prepare(sql, f.cat)
	if err != nil {
		f.t.Fatal(err)
	}
	rows, err := query.Run(ctx, p, query.Options{Alloc: f.mem})
	if err != nil {
		f.t.Fatal(err)
	}
	return rows
}

// pool is a Pool of fn over SELECT id FROM t, not run yet.
func (f *fixture) pool(ctx context.Context, cfg Config, fn Func) *Pool {
	f.t.Helper()
	p, err := New(f.query(ctx, "SELECT id FROM t"), cfg, fn)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

// config is a pool's Config with concurrency workers, logging to f.logs.
func (f *fixture) config(concurrency int) Config {
	return Config{Concurrency: concurrency, Logger: textLogger(f.logs)}
}

// textLogger logs to w as text lines without their time, so that a test
// can compare them whole.
func textLogger(w *watch.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// settled is each id's fate ("accept", "release", "reject") as the pool
// settled it. A row that the source's Close gave back, unsettled, fails
// the test: the pool settles every row it took.
func (f *fixture) settled() map[int64]string {
	f.t.Helper()
	out := map[int64]string{}
	for _, v := range f.src.Verdicts() {
		id := f.ids[v.Batch][v.Row]
		if v.ByClose {
			f.t.Errorf("id %d was never settled by the pool (its stream's Close gave it back)", id)
			continue
		}
		if _, twice := out[id]; twice {
			f.t.Errorf("id %d settled twice", id)
		}
		out[id] = v.Disposition.String()
	}
	return out
}

// ran records the ids a Func was called with, in order.
type ran struct {
	mu  sync.Mutex
	ids []int64
}

func (r *ran) add(t *testing.T, row Row) int64 {
	id, err := row.Int64("id")
	if err != nil {
		t.Errorf("row %d: %v", row.Index(), err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids = append(r.ids, id)
	return id
}

// sorted is the ids that ran, sorted.
func (r *ran) sorted() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.ids))
}

// counts are the outcome counts of Stats, for comparing with a want.
type counts struct{ Accepted, Released, Rejected, Running, Panics, TimedOut int64 }

func countsOf(s Stats) counts {
	return counts{s.Accepted, s.Released, s.Rejected, s.Running, s.Panics, s.TimedOut}
}

func equalFates(got, want map[int64]string) bool {
	if len(got) != len(want) {
		return false
	}
	for id, d := range want {
		if got[id] != d {
			return false
		}
	}
	return true
}

// Each thing a Func can say settles its row's record so: nil accepts,
// an error releases, a Reject (however wrapped) rejects, a panic releases
// and is logged with its stack. The query ends with its source, so Run
// returns nil, having settled every batch once, and closed the query.
func TestPoolOutcomes(t *testing.T) {
	f := newFixture(t, true, []int64{1, 2, 3}, []int64{4, 5})
	var r ran
	fn := func(ctx context.Context, row Row) error {
		switch id := r.add(t, row); id {
		case 2:
			return errors.New("busy")
		case 3:
			return Reject(errors.New("bad input"))
		case 4:
			panic("boom")
		case 5:
			return fmt.Errorf("job 5: %w", ErrReject)
		}
		return nil
	}
	ctx := t.Context()
	p := f.pool(ctx, f.config(2), fn)
	st, err := p.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := r.sorted(); !slices.Equal(got, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("ran %v, want each id once", got)
	}
	want := map[int64]string{1: "accept", 2: "release", 3: "reject", 4: "release", 5: "reject"}
	if got := f.settled(); !equalFates(got, want) {
		t.Errorf("settled %v, want %v", got, want)
	}
	if got, want := countsOf(st), (counts{Accepted: 1, Released: 2, Rejected: 2, Panics: 1}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if st.Done() != 5 || st.First.IsZero() || st.Last.Before(st.First) {
		t.Errorf("stats: done %d, first %v, last %v; want 5 done, first <= last", st.Done(), st.First, st.Last)
	}
	if q := st.Query.Source; q.Accepted != 1 || q.Released != 2 || q.Rejected != 2 {
		t.Errorf("the query's source counts %d accepted, %d released, %d rejected; want 1, 2, 2", q.Accepted, q.Released, q.Rejected)
	}
	// Each batch settled once, as a whole; the query closed after.
	log := f.src.Log()
	if len(log) != 3 || log[2] != "close (0 unread)" {
		t.Fatalf("source log %q, want two settled batches, then the close", log)
	}
	got := slices.Sorted(slices.Values(log[:2]))
	if want := []string{"b0: done: accept 0, release 1, reject 2", "b1: done: release 0, reject 1"}; !slices.Equal(got, want) {
		t.Errorf("batches settled as %q, want %q", got, want)
	}
	// Each row that was not done is logged; a row of a source that cannot
	// tell its record is named by its index in its batch.
	logs := f.logs.String()
	for _, want := range []string{
		`level=WARN msg="row released" row=1 err=busy`,
		`level=WARN msg="row rejected" row=2 err="bad input"`,
		`level=ERROR msg="row released: the worker panicked" row=0 panic="panic: boom" stack="goroutine `,
		`level=WARN msg="row rejected" row=1 err="job 5: rejected"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log does not say %q:\n%s", want, logs)
		}
	}
	if n := strings.Count(logs, "\n"); n != 4 {
		t.Errorf("%d log lines, want 4 (one per row not done):\n%s", n, logs)
	}
}

// origins makes the source's batches tell the record behind each row, as
// the share-group connector's do: topic "jobs", partition 0, offset 10
// times the id, delivered once, the id as key.
func (f *fixture) origins() {
	f.src.WrapAck = func(i int, a flow.Acker) flow.Acker { return originAck{a, f.ids[i]} }
}

type originAck struct {
	flow.Acker
	ids []int64
}

func (a originAck) RowOrigin(row int) (flow.Origin, bool) {
	if row < 0 || row >= len(a.ids) {
		return flow.Origin{}, false
	}
	id := a.ids[row]
	return flow.Origin{Topic: "jobs", Offset: 10 * id, DeliveryCount: 1, Key: fmt.Appendf(nil, "%d", id)}, true
}

// A row knows the record it came from when its source tells, and the log
// line of a row not done names that record.
func TestPoolRowOrigin(t *testing.T) {
	f := newFixture(t, true, []int64{1, 2}, []int64{3})
	f.origins()
	var mu sync.Mutex
	seen := map[int64]flow.Origin{}
	fn := func(ctx context.Context, row Row) error {
		id, _ := row.Int64("id")
		o, ok := row.Origin()
		if !ok {
			t.Errorf("id %d: no origin", id)
		}
		mu.Lock()
		seen[id] = o
		mu.Unlock()
		if id == 3 {
			return Reject(errors.New("bad input"))
		}
		return nil
	}
	ctx := t.Context()
	if _, err := Run(ctx, f.query(ctx, "SELECT id FROM t"), f.config(2), fn); err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 3; id++ {
		o := seen[id]
		if o.Topic != "jobs" || o.Partition != 0 || o.Offset != 10*id || o.DeliveryCount != 1 || string(o.Key) != fmt.Sprint(id) {
			t.Errorf("id %d: origin %+v, want jobs/0 at offset %d", id, o, 10*id)
		}
	}
	want := `level=WARN msg="row rejected" topic=jobs partition=0 offset=30 delivery_count=1 err="bad input"` + "\n"
	if got := f.logs.String(); !strings.HasSuffix(got, want) || strings.Count(got, "\n") != 1 {
		t.Errorf("log:\n%s\nwant the one line\n%s", got, want)
	}
	if want := map[int64]string{1: "accept", 2: "accept", 3: "reject"}; !equalFates(f.settled(), want) {
		t.Errorf("settled %v, want %v", f.settled(), want)
	}
	if _, ok := (Row{}).Origin(); ok {
		t.Errorf("a row of no source has an origin")
	}
}

// A row's context ends at Config.Timeout; a row that fails after that is
// released and counted as timed out, while one that gets done anyway, or
// fails before its time, is not.
func TestPoolRowTimeout(t *testing.T) {
	const timeout = 5 * time.Millisecond
	f := newFixture(t, true, []int64{1, 2, 3})
	fn := func(ctx context.Context, row Row) error {
		id, _ := row.Int64("id")
		d, ok := ctx.Deadline()
		if !ok || time.Until(d) > timeout {
			t.Errorf("id %d: deadline %v (%v), want one within %v", id, d, ok, timeout)
		}
		switch id {
		case 1:
			<-ctx.Done()
			return fmt.Errorf("gave up: %w", ctx.Err())
		case 2:
			<-ctx.Done()
			return nil
		}
		return errors.New("busy")
	}
	ctx := t.Context()
	cfg := f.config(3)
	cfg.Timeout = timeout
	st, err := Run(ctx, f.query(ctx, "SELECT id FROM t"), cfg, fn)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[int64]string{1: "release", 2: "accept", 3: "release"}; !equalFates(f.settled(), want) {
		t.Errorf("settled %v, want %v", f.settled(), want)
	}
	if got, want := countsOf(st), (counts{Accepted: 1, Released: 2, TimedOut: 1}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	logs := f.logs.String()
	if want := `level=WARN msg="row released: it ran past the timeout" row=0 timeout=5ms err="gave up: context deadline exceeded"`; !strings.Contains(logs, want) {
		t.Errorf("the log does not say %q:\n%s", want, logs)
	}
	if want := `level=WARN msg="row released" row=2 err=busy`; !strings.Contains(logs, want) {
		t.Errorf("the log does not say %q:\n%s", want, logs)
	}
}

// An error wrapped with Stop releases its row, stops the query
// (Config.StopQuery) and the pool: no row starts after it, the rows taken
// and not started are released, and Run returns the error.
func TestPoolStop(t *testing.T) {
	f := newFixture(t, false, []int64{1, 2, 3}, []int64{4})
	down := errors.New("the model server is gone")
	var r ran
	fn := func(ctx context.Context, row Row) error {
		if r.add(t, row) == 1 {
			return Stop(down)
		}
		return nil
	}
	// The source waits for more records after its batches, as a topic
	// does: only the query's end stops Next.
	qctx, stopQuery := context.WithCancelCause(t.Context())
	defer stopQuery(nil)
	var stops atomic.Int32
	cfg := f.config(1)
	cfg.StopQuery = func(cause error) { stops.Add(1); stopQuery(cause) }
	st, err := Run(qctx, f.query(qctx, "SELECT id FROM t"), cfg, fn)
	if !errors.Is(err, ErrStop) || !errors.Is(err, down) || err.Error() != down.Error() {
		t.Fatalf("Run = %v, want the stop error", err)
	}
	if got := r.sorted(); !slices.Equal(got, []int64{1}) {
		t.Errorf("ran %v, want only the row that stopped the pool", got)
	}
	if stops.Load() != 1 || !errors.Is(context.Cause(qctx), down) {
		t.Errorf("StopQuery called %d times, query's cause %v; want once, with the stop error", stops.Load(), context.Cause(qctx))
	}
	if want := map[int64]string{1: "release", 2: "release", 3: "release"}; !equalFates(f.settled(), want) {
		t.Errorf("settled %v, want %v (id 4 never taken)", f.settled(), want)
	}
	if got, want := countsOf(st), (counts{Released: 3}); got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if want := `level=ERROR msg="row released; stopping" row=0 err="the model server is gone"`; !strings.Contains(f.logs.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, f.logs.String())
	}
}

// Without Config.StopQuery, a Stop still ends Run and returns its error.
func TestPoolStopWithoutStopQuery(t *testing.T) {
	f := newFixture(t, true, []int64{1, 2})
	fn := func(ctx context.Context, row Row) error { return Stop(errors.New("no model")) }
	ctx := t.Context()
	st, err := Run(ctx, f.query(ctx, "SELECT id FROM t"), f.config(1), fn)
	if !errors.Is(err, ErrStop) || err.Error() != "no model" {
		t.Fatalf("Run = %v, want the stop error", err)
	}
	if want := map[int64]string{1: "release", 2: "release"}; !equalFates(f.settled(), want) || st.Released != 2 {
		t.Errorf("settled %v, %d released; want %v", f.settled(), st.Released, want)
	}
}

// gate holds the rows of a test's Func until the test lets them go, and
// tells the test which have started.
type gate struct {
	started chan int64
	open    chan struct{}
}

func newGate() *gate { return &gate{started: make(chan int64, 100), open: make(chan struct{})} }

// wait takes n starts, failing the test after kafkatest.Timeout.
func (g *gate) wait(t *testing.T, n int) []int64 {
	t.Helper()
	var ids []int64
	timeout := time.After(kafkatest.Timeout)
	for len(ids) < n {
		select {
		case id := <-g.started:
			ids = append(ids, id)
		case <-timeout:
			t.Fatalf("%d rows started (%v), want %d", len(ids), ids, n)
		}
	}
	return ids
}

// runAsync runs p in a goroutine of its own; wait returns what Run
// returned.
func runAsync(ctx context.Context, p *Pool) (wait func() (Stats, error)) {
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := p.Run(ctx)
		done <- result{st, err}
	}()
	return func() (Stats, error) {
		r := <-done
		return r.st, r.err
	}
}

// When Run's context ends, no new row starts and the running rows have
// Config.Drain to finish: done within it, they are accepted; cut off, they
// are released (and not counted as timed out). Rows taken and not started
// are released; Run returns the context's cause.
func TestPoolDrain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
		want  map[int64]string
		stats counts
	}{
		{"rows finish within the drain", time.Hour,
			map[int64]string{1: "accept", 2: "accept", 3: "release"}, counts{Accepted: 2, Released: 1}},
		{"rows cut off", 0,
			map[int64]string{1: "release", 2: "release", 3: "release"}, counts{Released: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, false, []int64{1, 2, 3})
			g := newGate()
			var early atomic.Int32 // rows whose context ended before the gate opened
			fn := func(ctx context.Context, row Row) error {
				id, _ := row.Int64("id")
				g.started <- id
				select {
				case <-g.open:
				case <-ctx.Done():
					early.Add(1)
					return ctx.Err()
				}
				return nil
			}
			signal := errors.New("SIGTERM")
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			cfg := f.config(2)
			cfg.Drain = tc.drain
			p := f.pool(ctx, cfg, fn)
			wait := runAsync(ctx, p)
			if got := slices.Sorted(slices.Values(g.wait(t, 2))); !slices.Equal(got, []int64{1, 2}) {
				t.Fatalf("started %v, want 1 and 2", got)
			}
			if n := p.Stats().Running; n != 2 {
				t.Errorf("%d rows running, want 2", n)
			}
			cancel(signal)
			if tc.drain > 0 {
				// Within the drain the rows run on: let them finish.
				close(g.open)
			}
			st, err := wait()
			if err != signal {
				t.Errorf("Run = %v, want the context's cause", err)
			}
			if !equalFates(f.settled(), tc.want) {
				t.Errorf("settled %v, want %v", f.settled(), tc.want)
			}
			if got := countsOf(st); got != tc.stats {
				t.Errorf("stats %+v, want %+v", got, tc.stats)
			}
			if wantEarly := int32(2 - tc.stats.Accepted); early.Load() != wantEarly {
				t.Errorf("%d rows saw their context end, want %d", early.Load(), wantEarly)
			}
			select {
			case id := <-g.started:
				t.Errorf("id %d started after Run's context ended", id)
			default:
			}
			if log := f.src.Log(); len(log) != 2 || log[1] != "close (0 unread)" {
				t.Errorf("source log %q, want the batch settled, then the close", log)
			}
		})
	}
}

// At most Config.Concurrency rows run at once, and the pool keeps that
// many running while it has rows.
func TestPoolConcurrency(t *testing.T) {
	f := newFixture(t, true, []int64{0, 1, 2, 3}, []int64{4, 5, 6, 7}, []int64{8, 9})
	g := newGate()
	var cur, most atomic.Int32
	fn := func(ctx context.Context, row Row) error {
		n := cur.Add(1)
		defer cur.Add(-1)
		for m := most.Load(); n > m; m = most.Load() {
			if most.CompareAndSwap(m, n) {
				break
			}
		}
		id, _ := row.Int64("id")
		g.started <- id
		<-g.open
		return nil
	}
	ctx := t.Context()
	p := f.pool(ctx, f.config(3), fn)
	wait := runAsync(ctx, p)
	g.wait(t, 3)
	if n := p.Stats().Running; n != 3 {
		t.Errorf("%d rows running, want 3", n)
	}
	close(g.open)
	st, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if most.Load() != 3 {
		t.Errorf("%d rows ran at once, want 3", most.Load())
	}
	if len(g.started) != 7 {
		t.Errorf("%d more rows started, want the other 7", len(g.started))
	}
	if st.Accepted != 10 || st.Done() != 10 || st.Running != 0 {
		t.Errorf("stats %+v, want 10 accepted", countsOf(st))
	}
	for id, d := range f.settled() {
		if d != "accept" {
			t.Errorf("id %d: %s, want accept", id, d)
		}
	}
}

// A batch is settled once its last row is done, each row with its own
// outcome: a row done early does not settle the batch while another still
// runs.
func TestPoolSettlesBatchWithItsLastRow(t *testing.T) {
	f := newFixture(t, true, []int64{1, 2})
	g := newGate()
	fn := func(ctx context.Context, row Row) error {
		if id, _ := row.Int64("id"); id == 1 {
			return errors.New("busy")
		}
		g.started <- 2
		<-g.open
		return nil
	}
	ctx := t.Context()
	p := f.pool(ctx, f.config(2), fn)
	wait := runAsync(ctx, p)
	g.wait(t, 1)
	kafkatest.Eventually(t, "id 1 released", func() error {
		if st := p.Stats(); st.Released != 1 {
			return fmt.Errorf("stats %+v", countsOf(st))
		}
		return nil
	})
	if log := f.src.Log(); len(log) != 0 {
		t.Errorf("source log %q while id 2 runs, want the batch held", log)
	}
	close(g.open)
	if _, err := wait(); err != nil {
		t.Fatal(err)
	}
	if log := f.src.Log(); !slices.Equal(log, []string{"b0: done: accept 1, release 0", "close (0 unread)"}) {
		t.Errorf("source log %q, want the batch settled once with both outcomes", log)
	}
}

// When the query fails, Run returns its error, having settled the rows it
// had.
func TestPoolQueryError(t *testing.T) {
	f := newFixture(t, true, []int64{1}, []int64{2})
	f.src.FailAt = 1
	ctx := t.Context()
	st, err := Run(ctx, f.query(ctx, "SELECT id FROM t"), f.config(1), func(context.Context, Row) error { return nil })
	if err == nil || err.Error() != "read table 't': fake stream: broker gone" {
		t.Errorf("Run = %v, want the query's error", err)
	}
	if want := map[int64]string{1: "accept"}; !equalFates(f.settled(), want) || st.Accepted != 1 {
		t.Errorf("settled %v, %d accepted; want %v", f.settled(), st.Accepted, want)
	}
}

// A pool that cannot run says why, and Run closes the query it was given.
func TestPoolRefused(t *testing.T) {
	nop := func(context.Context, Row) error { return nil }
	for _, tc := range []struct {
		name, sql string
		conc      int
		fn        Func
		want      string
		is        error
	}{
		{"concurrency 0", "SELECT id FROM t", 0, nop, "concurrency must be at least 1, got 0", ErrConcurrency},
		{"nil function", "SELECT id FROM t", 1, nil, "worker: nil function", nil},
		{"an aggregate", "SELECT COUNT(*) FROM t", 1, nop, "worker: ", query.ErrUpdating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, true, []int64{1})
			ctx := t.Context()
			cfg := f.config(tc.conc)
			st, err := Run(ctx, f.query(ctx, tc.sql), cfg, tc.fn)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("Run = %v, want %q (%v)", err, tc.want, tc.is)
			}
			if countsOf(st) != (counts{}) || !st.First.IsZero() {
				t.Errorf("stats %+v, want none", st)
			}
			if log := f.src.Log(); !slices.Equal(log, []string{"close (1 unread)"}) {
				t.Errorf("source log %q, want the query closed unread", log)
			}
		})
	}
}

// Rate is rows finished per second between the first row's start and the
// last one's end.
func TestStatsRate(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		s    Stats
		want float64
	}{
		{Stats{Accepted: 6, Released: 3, Rejected: 1, First: t0, Last: t0.Add(2 * time.Second)}, 5},
		{Stats{Accepted: 1, First: t0, Last: t0}, 0},
		{Stats{}, 0},
	} {
		if got := tc.s.Rate(); got != tc.want {
			t.Errorf("%+v: rate %v, want %v", tc.s, got, tc.want)
		}
	}
}
