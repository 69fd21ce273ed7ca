package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"go.uber.org/goleak"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/pipeline"
	"github.com/kshare/kshare/table"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stuck is a sink whose brokers never answer: no write is acknowledged
// until Close, which fails them all.
type stuck struct {
	mu      sync.Mutex
	pending []func(error)
	written int64
}

func (s *stuck) Write(_ context.Context, rec arrow.RecordBatch, done func(error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, done)
	s.written += rec.NumRows()
	return nil
}

func (s *stuck) Close() error {
	s.mu.Lock()
	p := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, done := range p {
		done(fmt.Errorf("client closed"))
	}
	return nil
}

func (s *stuck) Stats() flow.SinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return flow.SinkStats{Written: s.written}
}

// A job stopped while its sink has acknowledged nothing accepts nothing: it
// releases every record it read, and the group hands them all out again.
func TestStopReleasesUnacknowledged(t *testing.T) {
	const n = 30
	job, eng := startJob(t, n, &stuck{})
	job.Stop()
	st := job.Stats()
	if st.State != table.JobStopped || st.Err != nil || st.Accepted != 0 || st.Released == 0 {
		t.Errorf("after Stop: %+v, want STOPPED, nothing accepted, records released", st)
	}
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Errorf("Wait after Stop: %v, want nil", err)
	}
	got, _ := count(kafkatest.Context(t), t, eng, kshare.IdleTimeout(kafkatest.Idle()))
	if got != n {
		t.Errorf("the group hands out %d records after Stop, want all %d", got, n)
	}
}

// count reads table t of eng until opts end the query, and returns how
// many rows it read and the query's error.
func count(ctx context.Context, t *testing.T, eng *kshare.Engine, opts ...kshare.QueryOption) (int, error) {
	t.Helper()
	rows, err := eng.Query(ctx, "SELECT v FROM t", opts...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n += int(rows.RecordBatch().NumRows())
	}
	rows.Close()
	return n, rows.Err()
}

// gate is a sink whose writes are acknowledged when open is called (and
// failed by Close, as a producer's client fails what is unanswered).
type gate struct {
	stuck
	acked int64
}

// open acknowledges every write so far.
func (g *gate) open() {
	g.mu.Lock()
	p := g.pending
	g.pending = nil
	g.acked = g.written
	g.mu.Unlock()
	for _, done := range p {
		done(nil)
	}
}

func (g *gate) Stats() flow.SinkStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return flow.SinkStats{Written: g.written, Acked: g.acked}
}

// startJob makes a job over n records in batches of 10, two in flight,
// into sink (see queryJob), and waits until it wrote two batches.
func startJob(t *testing.T, n int, sink flow.Writer) (*pipeline.Job, *kshare.Engine) {
	t.Helper()
	vs := make([]string, n)
	for i := range vs {
		vs[i] = strconv.Itoa(i)
	}
	job, eng := queryJob(t, vs, "SELECT v FROM t", sink, 2)
	kafkatest.Eventually(t, "the job writes two batches", func() error {
		if st := job.Stats(); st.Written < 20 {
			return fmt.Errorf("%d rows written", st.Written)
		}
		return nil
	})
	return job, eng
}

// Drain finishes what is in flight and gives back the rest at once: while
// the sink has still acknowledged nothing, another reader of the group
// already gets every record the job did not write (they are not left
// locked for the group's 30 s), and once the sink acknowledges, the job
// accepts the rows it wrote and ends STOPPED without an error.
func TestDrainFinishesInFlightAndReleasesTheRest(t *testing.T) {
	const n = 200
	sink := &gate{}
	job, eng := startJob(t, n, sink)
	drained := make(chan error, 1)
	go func() { drained <- job.Drain(time.Minute) }()

	// The other reader gets the rest at once: well within the lock.
	ctx, cancel := context.WithTimeout(kafkatest.Context(t), 15*time.Second)
	defer cancel()
	if got, err := count(ctx, t, eng, kshare.MaxRows(n-20)); got != n-20 {
		t.Fatalf("another reader got %d records while the job drained, want the %d it did not write (err %v)", got, n-20, err)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v before the sink acknowledged the batches in flight", err)
	default:
	}
	sink.open()
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st := job.Stats(); st.State != table.JobStopped || st.Err != nil || st.Acked != 20 || st.Accepted != 20 {
		t.Errorf("after Drain: %+v, want STOPPED, the 20 rows in flight acknowledged and their records accepted", st)
	}
}

// Past its bound Drain stops the job: what the sink did not acknowledge is
// released, and no error is reported.
func TestDrainTimeoutReleases(t *testing.T) {
	const n = 50
	job, _ := startJob(t, n, &stuck{})
	start := time.Now()
	if err := job.Drain(300 * time.Millisecond); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Drain(300ms) took %v", d)
	}
	if st := job.Stats(); st.State != table.JobStopped || st.Err != nil || st.Accepted != 0 {
		t.Errorf("after Drain past its bound: %+v, want STOPPED, nothing accepted", st)
	}
}

// changelog is a sink that takes changes (flow.ChangelogWriter) and keeps
// them as "<kind> <value> <count>" lines; fail fails every write, and hold
// leaves them unacknowledged until Close (which fails them, as stuck's).
type changelog struct {
	gate
	lines      []string
	fail, hold bool
}

func (c *changelog) Write(context.Context, arrow.RecordBatch, func(error)) error {
	return fmt.Errorf("Write of a changelog sink: the job must call WriteChanges")
}

func (c *changelog) WriteChanges(_ context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error {
	c.mu.Lock()
	c.written += rec.NumRows()
	switch {
	case c.hold:
		c.pending = append(c.pending, done)
		c.mu.Unlock()
		return nil
	case c.fail:
		c.mu.Unlock()
		done(&flow.RowError{Row: 0, Err: fmt.Errorf("disk full")})
		return nil
	}
	vs, ns := rec.Column(0).(*array.String), rec.Column(1).(*array.Int64)
	for i := range int(rec.NumRows()) {
		c.lines = append(c.lines, fmt.Sprintf("%s %s %d", kinds[i], vs.Value(i), ns.Value(i)))
	}
	c.acked += rec.NumRows()
	c.mu.Unlock()
	done(nil)
	return nil
}

// changesJob starts `SELECT v, COUNT(*) GROUP BY v` over vs (batches of 10)
// into sink, and returns it with its engine.
func changesJob(t *testing.T, vs []string, sink flow.Writer) (*pipeline.Job, *kshare.Engine) {
	t.Helper()
	return queryJob(t, vs, "SELECT v, COUNT(*) AS n FROM t GROUP BY v", sink, 0)
}

// queryJob starts a job of query over a table t (v STRING) of the values
// vs, in batches of 10, with inFlight batches at once (0: the default),
// into sink, and returns it with the engine that has t. The group's
// records are locked for 30 s, so that a record that comes again within
// seconds was released, not left to expire.
func queryJob(t *testing.T, vs []string, query string, sink flow.Writer, inFlight int) (*pipeline.Job, *kshare.Engine) {
	t.Helper()
	addr, topic, group := kafkatest.LockedGroup(t, 30*time.Second)
	bs := make([][]byte, len(vs))
	for i, v := range vs {
		bs[i] = []byte(v)
	}
	kafkatest.Produce(t, addr, topic, bs...)
	eng := kshare.New()
	if _, err := eng.Exec(kafkatest.Context(t), `CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`')`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rows, err := eng.Query(ctx, query, kshare.BatchSize(10))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	job := pipeline.Start(ctx, rows, sink, cancel, pipeline.Options{ID: "7", Statement: "INSERT INTO x " + query, InFlight: inFlight})
	t.Cleanup(job.Stop)
	return job, eng
}

// The changes of an updating query go to a sink that takes them with their
// kinds, and each record is accepted once a written change reflects it:
// replaying the changelog (-U and -D take out a row the log holds, +I and
// +U add one) gives the counts computed here, and every record is
// accepted.
func TestChangesIntoChangelogSink(t *testing.T) {
	var vs []string
	want := map[string]int64{}
	for i := range 95 {
		v := string(rune('a' + i*i%7))
		vs = append(vs, v)
		want[v]++
	}
	sink := &changelog{}
	job, _ := changesJob(t, vs, sink)
	kafkatest.Eventually(t, "every record accepted", func() error {
		if st := job.Stats(); st.Accepted != int64(len(vs)) {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	job.Stop()
	sink.mu.Lock()
	lines := sink.lines
	sink.mu.Unlock()
	log := map[string]int64{}
	for _, l := range lines {
		var kind, v string
		var n int64
		if _, err := fmt.Sscan(l, &kind, &v, &n); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		switch kind {
		case "+I", "+U":
			if _, ok := log[v]; ok {
				t.Errorf("%q adds a row for %s, which the log holds (%d)", l, v, log[v])
			}
			log[v] = n
		case "-U", "-D":
			if got, ok := log[v]; !ok || got != n {
				t.Errorf("%q takes out a row the log does not hold (%s: %d, %v)", l, v, got, ok)
			}
			delete(log, v)
		default:
			t.Errorf("line %q: unknown kind", l)
		}
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "-U ") }) {
		t.Errorf("no -U among the changes %q: the test wants groups updated", lines)
	}
	if fmt.Sprint(log) != fmt.Sprint(want) {
		t.Errorf("the changelog replays to %v, want %v (lines %q)", log, want, lines)
	}
	if st := job.Stats(); st.State != table.JobStopped || st.Released != 0 {
		t.Errorf("after Stop: %+v, want STOPPED, nothing released", st)
	}
}

// A change the sink fails ends the job with the sink's error, and one the
// sink has not acknowledged when the job is stopped is not accepted:
// either way the records it reflects are released, and the group hands
// every record out again.
func TestChangesNotWrittenAreReleased(t *testing.T) {
	for _, c := range []struct {
		name  string
		sink  *changelog
		state table.JobState
	}{
		{"write fails", &changelog{fail: true}, table.JobFailed},
		{"stopped unacknowledged", &changelog{hold: true}, table.JobStopped},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs := []string{"a", "b", "a", "c", "a"}
			job, eng := changesJob(t, vs, c.sink)
			kafkatest.Eventually(t, "a change written", func() error {
				if st := job.Stats(); st.Written == 0 {
					return fmt.Errorf("stats %+v", st)
				}
				return nil
			})
			if c.sink.hold {
				job.Stop()
			} else {
				job.Wait(kafkatest.Context(t))
			}
			st := job.Stats()
			if st.State != c.state || st.Accepted != 0 || st.Released == 0 {
				t.Errorf("stats %+v, want %s, nothing accepted, records released", st, c.state)
			}
			if c.state == table.JobFailed && (st.Err == nil || !strings.Contains(st.Err.Error(), "disk full")) {
				t.Errorf("job error %v, want the sink's", st.Err)
			}
			got, _ := count(kafkatest.Context(t), t, eng, kshare.IdleTimeout(kafkatest.Idle()))
			if got != len(vs) {
				t.Errorf("the group hands out %d records after the job, want all %d", got, len(vs))
			}
		})
	}
}
