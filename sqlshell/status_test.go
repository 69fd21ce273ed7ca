package sqlshell

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/query"
)

// newStatusShell is a shell over a table of two batches on a terminal of
// 24 lines, whose screen is out and whose status line is redrawn every
// 20 ms, so that a test sees it change within its wait.
func newStatusShell(t *testing.T) (*Shell, memTable, *watch.Buffer) {
	t.Helper()
	every := statusEvery
	t.Cleanup(func() { statusEvery = every })
	statusEvery = 20 * time.Millisecond
	out := &watch.Buffer{}
	sh, src, _ := newMemShell(t, [][]int64{{1, 2}, {3}}, out)
	sh.cfg.Height = func() int { return 24 }
	return sh, src, out
}

// waitScreen waits until the screen out shows what, as shown tells.
func waitScreen(t *testing.T, out *watch.Buffer, what string, shown func(screen string) bool) {
	t.Helper()
	kafkatest.Eventually(t, what+" shown", func() error {
		if screen := out.String(); !shown(screen) {
			return fmt.Errorf("screen: %q", screen)
		}
		return nil
	})
}

// TestStatusLineSaysBrokerIsGone: while the query waits for rows and the
// source says no broker answers, the live status line says so, without
// waiting for the next batch; when the broker is back, the line drops it.
func TestStatusLineSaysBrokerIsGone(t *testing.T) {
	sh, src, out := newStatusShell(t)
	since := time.Date(2026, 1, 2, 12, 3, 4, 0, time.Local)
	var mu sync.Mutex
	down := false
	src.Stats = func() flow.Stats {
		mu.Lock()
		defer mu.Unlock()
		if down {
			return flow.Stats{Unreachable: since, Brokers: "kafka:9092"}
		}
		return flow.Stats{Brokers: "kafka:9092"}
	}
	const gone = "(2 rows so far; cannot reach Kafka at kafka:9092 since 12:03:04, retrying; Ctrl-C stops the query)"
	src.Handing = func(i int) {
		if i != 1 {
			return
		}
		mu.Lock()
		down = true
		mu.Unlock()
		waitScreen(t, out, "the outage", func(s string) bool { return strings.Contains(s, gone) })
		mu.Lock()
		down = false
		mu.Unlock()
		waitScreen(t, out, "the broker's return", func(s string) bool {
			i := strings.LastIndex(s, gone)
			return strings.Contains(s[i:], "(2 rows so far; Ctrl-C stops the query)")
		})
	}
	if err := sh.Run(t.Context(), "SELECT id FROM t"); err != nil {
		t.Fatal(err)
	}
	if got := src.verdict(); len(got) != 3 {
		t.Errorf("verdicts %v, want all 3 rows settled", got)
	}
}

// TestStatusLineShowsModelCalls: while a query through a model waits for
// its calls, the status line shows them move, without waiting for the next
// batch.
func TestStatusLineShowsModelCalls(t *testing.T) {
	sh, src, out := newStatusShell(t)
	var mu sync.Mutex
	m := flow.ModelStats{Model: "m", Calls: 2, OK: 2}
	src.Stats = func() flow.Stats {
		mu.Lock()
		defer mu.Unlock()
		c := m
		return flow.Stats{Model: &c}
	}
	src.Handing = func(i int) {
		if i != 1 {
			return
		}
		mu.Lock()
		m.Calls, m.OK, m.RowsInFlight = 9, 7, 64
		mu.Unlock()
		const want = "(2 rows so far; model m: 9 calls, 64 rows in flight, 2 failed; Ctrl-C stops the query)"
		waitScreen(t, out, "the calls", func(s string) bool { return strings.Contains(s, want) })
	}
	if err := sh.Run(t.Context(), "SELECT id FROM t"); err != nil {
		t.Fatal(err)
	}
}

// TestStatsCountWhatTheBrokerConfirmed: --stats shows refused and
// unconfirmed acknowledgements apart from accepted ones, the accepts lost
// (records whose rows were delivered and that come again), and the dead
// letters produced and failed (released), and the records whose rows could
// not be evaluated ('scan.on-eval-error'), and a window's late records,
// those past the allowed lateness apart, and those accepted once folded;
// rows/s is
// over the working time, not the idle wait that ended the query.
func TestStatsCountWhatTheBrokerConfirmed(t *testing.T) {
	var b bytes.Buffer
	WriteStats(&b, 100, query.Stats{
		Source:         flow.Stats{Records: 120, Accepted: 100, AckRefused: 20, AckUnconfirmed: 3, AcceptsLost: 18, DeadLettered: 4, DeadLetterFailed: 2, EvalErrors: 5},
		Elapsed:        12 * time.Second,
		Working:        2 * time.Second,
		Late:           9,
		BeyondLateness: 2,
		Folded:         30,
	})
	for _, want := range []string{"accepted: 100\n", "late (updated their window's row): 7\n", "beyond the allowed lateness (updated nothing, accepted): 2\n", "folded into windows (accepted): 30\n", "acknowledgements refused: 20\n", "acknowledgements unconfirmed: 3\n",
		"accepts lost (delivered, their records come again): 18\n", "rows/s: 50.0\n",
		"dead-lettered (accepted): 4\n", "dead letters failed (released): 2\n", "evaluation errors (left out): 5\n", "elapsed: 12s\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stats lack %q:\n%s", want, b.String())
		}
	}
}

// A query through a model says what became of its calls, their latency
// and tokens; a query without one says nothing of models.
func TestStatsOfModelCalls(t *testing.T) {
	var h flow.Histogram
	for range 90 {
		h.Observe(40 * time.Millisecond)
	}
	for range 10 {
		h.Observe(200 * time.Millisecond)
	}
	var b bytes.Buffer
	WriteStats(&b, 95, query.Stats{Source: flow.Stats{Records: 100, Model: &flow.ModelStats{Model: "m", Calls: 100, OK: 95, RateLimited: 4, ClientErrors: 1,
		Retries: 4, TokensIn: 1200, TokensOut: 300, Latency: h}}})
	for _, want := range []string{"model calls: 100\n", "model calls ok: 95\n", "model calls rate limited: 4\n", "model calls client error: 1\n",
		"model retries: 4\n", "model latency p50: <= 50ms\n", "model latency p99: <= 250ms\n", "model tokens in: 1200\n", "model tokens out: 300\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stats lack %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "server error") {
		t.Errorf("stats show a count that is zero:\n%s", b.String())
	}
	b.Reset()
	WriteStats(&b, 1, query.Stats{})
	if strings.Contains(b.String(), "model") {
		t.Errorf("stats of a query without a model speak of one:\n%s", b.String())
	}
}

// Over a source that takes nothing (a peek, the kafka connector), the rows
// WHERE filtered out were not accepted, and --stats does not say they were.
func TestStatsFilteredByALooker(t *testing.T) {
	for _, c := range []struct {
		takesNothing bool
		want, not    string
	}{
		{false, "filtered (accepted): 7\n", "filtered: 7\n"},
		{true, "filtered: 7\n", "(accepted)"},
	} {
		var b bytes.Buffer
		WriteStats(&b, 3, query.Stats{Filtered: 7, TakesNothing: c.takesNothing})
		if !strings.Contains(b.String(), c.want) || strings.Contains(b.String(), c.not) {
			t.Errorf("TakesNothing %v: want %q and no %q in:\n%s", c.takesNothing, c.want, c.not, b.String())
		}
	}
}
