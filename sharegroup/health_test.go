package sharegroup_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// newLink makes a kafkatest.Link that every member's client of the test
// dials through.
func newLink(t *testing.T) *kafkatest.Link {
	l := kafkatest.NewLink()
	t.Cleanup(sharegroup.SetClientOpts(l.Opt()))
	return l
}

// noLeaks checks, after every other cleanup of the test (the broker's
// among them), that the test left no goroutine behind.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := sharegroup.WaitClosed(ctx); err != nil {
			t.Errorf("kafka clients still closing: %v", err)
		}
		goleak.VerifyNone(t, ignore)
	})
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if !watch.Until(within, cond) {
		t.Fatalf("%s: not within %s", what, within)
	}
	return time.Since(start)
}

// TestBrokerOutageIsVisible cuts the members off the broker under a running
// stream: within a few seconds the stream says it cannot reach Kafka (log
// and Stats), says when the broker is back and goes on delivering; cut off
// again, it ends with an error naming 'scan.broker-unavailable-timeout',
// and Close returns at once.
func TestBrokerOutageIsVisible(t *testing.T) {
	noLeaks(t)
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(10)...)
	l := newLink(t)
	var logs watch.Buffer
	mem := tabletest.CheckedAlloc(t)
	src := newSource(t, addr, topic, group, map[string]string{"scan.broker-unavailable-timeout": "3s"})
	st, err := src.Open(kafkatest.Context(t), flow.OpenOptions{Alloc: mem, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			st.Close()
		}
	}()
	ctx := kafkatest.Context(t)
	r := newReader(t, st)
	r.until(ctx, "the first records", func() bool { return len(r.seen) == 10 })

	l.Set(true)
	took := waitUntil(t, 8*time.Second, "the outage is told", func() bool { return !st.Stats().Unreachable.IsZero() })
	t.Logf("outage told after %s", took)
	if s := st.Stats(); s.Brokers != addr {
		t.Errorf("Stats.Brokers = %q, want %q", s.Brokers, addr)
	}
	waitUntil(t, time.Second, "the outage is logged", func() bool {
		return strings.Contains(logs.String(), "cannot reach Kafka at "+addr+" since ")
	})

	l.Set(false)
	waitUntil(t, 15*time.Second, "the broker is back", func() bool { return st.Stats().Unreachable.IsZero() })
	waitUntil(t, time.Second, "the return is logged", func() bool {
		return strings.Contains(logs.String(), "Kafka at "+addr+" answers again")
	})
	kafkatest.Produce(t, addr, topic, []byte("10"), []byte("11"))
	r.until(ctx, "records after the outage", func() bool { return len(r.seen) == 12 })

	l.Set(true)
	start := time.Now()
	_, err = st.Next(ctx)
	if err == nil || !strings.Contains(err.Error(), "'scan.broker-unavailable-timeout'") {
		t.Fatalf("Next without a broker: %v, want the broker-unavailable error", err)
	}
	if d := time.Since(start); d < 3*time.Second || d > 10*time.Second {
		t.Errorf("the stream ended %s after the cut, want about the 3s timeout", d)
	}
	t.Logf("ended: %v", err)
	start = time.Now()
	cerr := st.Close()
	closed = true
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close without a broker took %s, want under a second", d)
	}
	t.Logf("Close: %v", cerr)
}

// TestCloseReportsUnsentAcks: when the broker is gone, the accepts of a
// delivered batch cannot be sent; Close says so (it used to return nil
// always) and returns within a second, and Stats counts them as
// unconfirmed, not accepted.
func TestCloseReportsUnsentAcks(t *testing.T) {
	noLeaks(t)
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(5)...)
	l := newLink(t)
	mem := tabletest.CheckedAlloc(t)
	st := open(t, newSource(t, addr, topic, group, nil), mem)
	b, ids, err := newReader(t, st).next(kafkatest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	l.Set(true)
	b.Record.Release()
	b.Ack.Done()
	start := time.Now()
	cerr := st.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close without a broker took %s, want under a second", d)
	}
	if cerr == nil || !strings.Contains(cerr.Error(), "not applied by Kafka at "+addr) {
		t.Fatalf("Close = %v, want the acknowledgements it could not send", cerr)
	}
	s := st.Stats()
	if s.Accepted != 0 || s.AckUnconfirmed+s.AckRefused != int64(len(ids)) || s.AcceptsLost != int64(len(ids)) {
		t.Errorf("accepted %d, unconfirmed %d, refused %d, accepts lost %d; want 0 accepted and the %d accepts of the batch unconfirmed or refused, and lost",
			s.Accepted, s.AckUnconfirmed, s.AckRefused, s.AcceptsLost, len(ids))
	}
	// Prometheus counts the refused ones as Stats does.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(sharegroup.Collector())
	if got := kafkatest.MetricOf(t, reg, "kshare_source_acks_refused_total", group); got != float64(s.AckRefused) {
		t.Errorf("kshare_source_acks_refused_total = %v, Stats.AckRefused = %d", got, s.AckRefused)
	}
	l.Set(false)
	// They come again, to a reader in the same group.
	st2 := open(t, newSource(t, addr, topic, group, nil), mem)
	r := newReader(t, st2)
	r.until(kafkatest.Context(t), "the records whose accepts were lost", func() bool { return len(r.seen) == 5 })
	if err := st2.Close(); err != nil {
		t.Fatal(err)
	}
	if s := st2.Stats(); s.Accepted != 5 || s.AckRefused != 0 || s.AckUnconfirmed != 0 {
		t.Errorf("second reader: accepted %d, refused %d, unconfirmed %d; want 5, 0, 0", s.Accepted, s.AckRefused, s.AckUnconfirmed)
	}
}

// TestLostAcceptsAreCounted: the accepts of a delivered batch fail while
// the broker is out of reach, and the broker hands the records out again
// once it is back. The stream that delivered them counts them as accepts
// lost: the consumer that gets them again counts them as redelivered, but
// that may be another process, whose counts the user of this one does not
// see.
func TestLostAcceptsAreCounted(t *testing.T) {
	const n = 50
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(n)...)
	l := newLink(t)
	st := open(t, newSource(t, addr, topic, group, map[string]string{"scan.batch-size": "100"}), tabletest.CheckedAlloc(t))
	defer st.Close()
	ctx := kafkatest.Context(t)
	r := newReader(t, st)
	b, ids, err := r.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		r.seen[id]++
	}
	l.Set(true)
	b.Record.Release()
	b.Ack.Done()
	waitStats(t, st, "the accepts refused", func(s flow.Stats) bool { return s.AckRefused == int64(len(ids)) })
	if s := st.Stats(); s.AcceptsLost != int64(len(ids)) || s.Accepted != 0 {
		t.Errorf("accepts lost %d, accepted %d; want the %d accepts of the batch lost", s.AcceptsLost, s.Accepted, len(ids))
	}
	l.Set(false)
	r.until(ctx, "every record delivered a second time", func() bool {
		for i := range int64(n) {
			if r.seen[i] < 2 && slices.Contains(ids, i) {
				return false
			}
		}
		return len(r.seen) == n
	})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	s := st.Stats()
	if s.AcceptsLost != int64(len(ids)) || s.Accepted != n || s.AckUnconfirmed != 0 {
		t.Errorf("accepts lost %d, accepted %d, unconfirmed %d; want %d, %d, 0", s.AcceptsLost, s.Accepted, s.AckUnconfirmed, len(ids), n)
	}
	t.Logf("the broker gave %d of the %d records again with a delivery count above 1", s.Redelivered, len(ids))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(sharegroup.Collector())
	for name, want := range map[string]int64{"kshare_source_accepts_lost_total": s.AcceptsLost, "kshare_source_redelivered_total": s.Redelivered} {
		if got := kafkatest.MetricOf(t, reg, name, group); got != float64(want) {
			t.Errorf("%s = %v, Stats says %d", name, got, want)
		}
	}
}

// failingFormat gives decoders until its budget runs out, so that a member
// after the first fails to start.
type failingFormat struct {
	idFormat
	mu   *sync.Mutex
	left *int
}

func (f failingFormat) NewDecoder(cols []types.Column, v options.Values) (table.Decoder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *f.left == 0 {
		return nil, errors.New("no decoder left")
	}
	*f.left--
	return f.idFormat.NewDecoder(cols, v)
}

// TestOpenFailureFreesBuiltMembers: when the third member cannot start,
// the two built before it close their clients (no goroutine left) and
// release their record builders.
func TestOpenFailureFreesBuiltMembers(t *testing.T) {
	noLeaks(t)
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.ShareGroup(t, addr)
	left := 2 // two members build theirs, the third fails
	f := failingFormat{mu: &sync.Mutex{}, left: &left}
	kvs := []options.KV{
		{Key: "connector", Value: sharegroup.Name},
		{Key: "format", Value: "test-id"},
		{Key: "bootstrap.servers", Value: addr},
		{Key: "share-group-id", Value: group},
		{Key: "topic", Value: topic},
		{Key: "source.parallelism", Value: "3"},
	}
	vals, err := options.Parse(kvs, []string{"connector", "format"}, sharegroup.Options, f.Options())
	if err != nil {
		t.Fatal(err)
	}
	def := &table.Definition{Name: "ids", Options: kvs, Schema: types.Schema{Columns: []types.Column{{Name: "id", Type: types.BigIntType()}}}}
	c, err := table.LookupConnector(sharegroup.Name)
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.NewSource(&table.Bound{Def: def, Connector: c, Format: f, Options: vals})
	if err != nil {
		t.Fatal(err)
	}
	st, err := src.Open(kafkatest.Context(t), flow.OpenOptions{Alloc: tabletest.CheckedAlloc(t)})
	if err == nil {
		st.Close()
		t.Fatal("Open succeeded with a member whose decoder failed")
	}
	if !strings.Contains(err.Error(), "no decoder left") {
		t.Errorf("Open = %v, want the third member's error", err)
	}
}
