package worker

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
)

func TestReject(t *testing.T) {
	base := errors.New("bad input")
	for _, err := range []error{Reject(base), fmt.Errorf("job 3: %w", Reject(base)), fmt.Errorf("x: %w", ErrReject), Reject(nil)} {
		if !errors.Is(err, ErrReject) {
			t.Errorf("%v: not ErrReject", err)
		}
	}
	if !errors.Is(Reject(base), base) || Reject(base).Error() != "bad input" {
		t.Errorf("Reject hides its error: %v", Reject(base))
	}
	if errors.Is(base, ErrReject) {
		t.Errorf("a plain error is a reject")
	}
}

func TestTune(t *testing.T) {
	// The keys every kafka-sharegroup table sets; Tune leaves them alone.
	base := []options.KV{
		{Key: "connector", Value: "kafka-sharegroup"},
		{Key: "topic", Value: "jobs"},
		{Key: "share-group-id", Value: "g"},
		{Key: "properties.bootstrap.servers", Value: "127.0.0.1:9092"},
	}
	kafka, err := table.Default.LookupConnector(sharegroup.Name)
	if err != nil {
		t.Fatal(err)
	}
	def := func(kv ...string) *table.Bound {
		d := &table.Definition{Name: "t", Options: slices.Clone(base)}
		for i := 0; i < len(kv); i += 2 {
			d.Options = append(d.Options, options.KV{Key: kv[i], Value: kv[i+1]})
		}
		v, err := options.Parse(d.Options, []string{"connector", "format"}, kafka.Options())
		if err != nil {
			t.Fatal(err)
		}
		return &table.Bound{Def: d, Connector: kafka, Options: v}
	}
	cases := []struct {
		def         *table.Bound
		conc, poll  int
		want        []string
		wantChanged bool
	}{
		{def(), 32, 0, []string{"source.parallelism=2", "properties.max.poll.records=32", "properties.share.acquire.mode=record_limit"}, true},
		{def(), 32, 500, []string{"source.parallelism=2", "properties.max.poll.records=500", "properties.share.acquire.mode=record_limit"}, true},
		// Two polls stay within the partition's 2000 locks.
		{def(), 5000, 0, []string{"source.parallelism=2", "properties.max.poll.records=1000", "properties.share.acquire.mode=record_limit"}, true},
		{def("source.parallelism", "8"), 500, 0, []string{"source.parallelism=8", "properties.max.poll.records=250", "properties.share.acquire.mode=record_limit"}, true},
		// What the table says stays.
		{def("source.parallelism", "1", "properties.max.poll.records", "7", "properties.share.acquire.mode", "batch_optimized"), 32, 0,
			[]string{"source.parallelism=1", "properties.max.poll.records=7", "properties.share.acquire.mode=batch_optimized"}, false},
		// The alias counts as the option: 4 members share the 2000 locks.
		{def("scan.parallelism", "4"), 5000, 0, []string{"scan.parallelism=4", "properties.max.poll.records=500", "properties.share.acquire.mode=record_limit"}, true},
		{&table.Bound{Def: &table.Definition{Options: []options.KV{{Key: "connector", Value: "other"}}}}, 4, 0, []string{}, false},
	}
	for i, c := range cases {
		got, changed := Tune(c.def, c.conc, c.poll)
		var kvs []string
		for _, kv := range got {
			if !slices.ContainsFunc(base, func(b options.KV) bool { return b.Key == kv.Key }) {
				kvs = append(kvs, kv.Key+"="+kv.Value)
			}
		}
		if !slices.Equal(kvs, c.want) && !(len(kvs) == 0 && len(c.want) == 0) || changed != c.wantChanged {
			t.Errorf("case %d: %v, %v; want %v, %v", i, kvs, changed, c.want, c.wantChanged)
		}
	}
}

// A program's output is kept up to maxCapture bytes, and the buffer says
// when it dropped some.
func TestCapBuffer(t *testing.T) {
	var b capBuffer
	b.Write(make([]byte, maxCapture-1))
	if b.cut {
		t.Fatal("cut before the bound")
	}
	n, err := b.Write([]byte("ab"))
	if n != 2 || err != nil || b.Len() != maxCapture || !b.cut {
		t.Fatalf("Write = %d, %v; len %d, cut %v", n, err, b.Len(), b.cut)
	}
	// exec copies a program's output with io.Copy, which prefers a
	// ReaderFrom to Write: the bound holds that way too.
	var c capBuffer
	if n, err := io.Copy(&c, strings.NewReader(strings.Repeat("x", maxCapture+1))); n != maxCapture+1 || err != nil || c.Len() != maxCapture || !c.cut {
		t.Errorf("io.Copy = %d, %v; len %d, cut %v", n, err, c.Len(), c.cut)
	}
}

// The pool's counts as Prometheus metrics.
func TestCollector(t *testing.T) {
	p := &Pool{}
	p.accepted.Store(7)
	p.released.Store(2)
	p.rejected.Store(1)
	p.running.Store(3)
	p.timedOut.Store(1)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(p.Collector()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP kshare_worker_rows_running Rows running now.
# TYPE kshare_worker_rows_running gauge
kshare_worker_rows_running 3
# HELP kshare_worker_rows_total Rows the worker pool finished, by outcome (accepted, released, rejected).
# TYPE kshare_worker_rows_total counter
kshare_worker_rows_total{outcome="accepted"} 7
kshare_worker_rows_total{outcome="rejected"} 1
kshare_worker_rows_total{outcome="released"} 2
# HELP kshare_worker_timeouts_total Released rows that ran past their timeout.
# TYPE kshare_worker_timeouts_total counter
kshare_worker_timeouts_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kshare_worker_rows_total", "kshare_worker_rows_running", "kshare_worker_timeouts_total"); err != nil {
		t.Error(err)
	}
}
