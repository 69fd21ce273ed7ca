package query

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
)

// A share group may hand out one partition's records before another's.
// The watermark is the smallest over the partitions the stream names, so
// a bounded read of three partitions, one after another, each with
// timestamps out of order within the WATERMARK's delay, gives each window
// one row with every record of it, none late, even with no allowed
// lateness. A stream that does not name its partitions shows what that
// protects against: the first partition's watermark closes every window
// before the others deliver, and their records update nothing.
func TestWindowWatermarkPerPartition(t *testing.T) {
	const parts, minutes, perMinute = 3, 10, 20 // records per partition and minute
	for _, c := range []struct {
		name  string
		named bool
	}{{"named", true}, {"not named", false}} {
		t.Run(c.name, func(t *testing.T) {
			srcMem, mem := tabletest.CheckedAlloc(t), tabletest.CheckedAlloc(t)
			cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
				WITH ('connector' = 'test', 'format' = 'test')`)
			src := sourceOf(t, cat, "ev")
			src.Topic = "ev"
			if c.named {
				src.Named = []int32{0, 1, 2}
			}
			base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			rng := rand.New(rand.NewPCG(1, 2))
			id := 0
			truth := map[string]int{} // window start: its records
			for p := range parts {
				var lines []string
				for k := range minutes * perMinute {
					// Three seconds apart, each up to four seconds off: out
					// of order, but within the delay of five.
					at := time.Duration(k)*3*time.Second + time.Duration(rng.IntN(4000))*time.Millisecond
					truth[base.Add(at.Truncate(time.Minute)).Format("2006-01-02 15:04:05.000")]++
					lines = append(lines, fmt.Sprintf(`{"id": %d, "ts": %q}`, id, base.Add(at).Format("2006-01-02 15:04:05.000")))
					id++
				}
				bs := tabletest.FromJSON(t, srcMem, src.Schema, 25, lines...)
				for range bs {
					src.BatchPartition = append(src.BatchPartition, int32(p))
				}
				src.Batches = append(src.Batches, bs...)
			}
			t.Cleanup(src.Release)
			p, err := Prepare(`SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
				GROUP BY window_start, window_end`, cat)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Run(t.Context(), p, Options{Alloc: mem, HoldLinger: -1, MaxHeld: math.MaxInt32, AllowedLateness: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rows := map[string][]string{}
			for r.Next() {
				rec := r.RecordBatch()
				for i := range int(rec.NumRows()) {
					start, _ := render.Formatter(rec.Column(0), r.Columns()[0].Type)(i)
					rows[start] = append(rows[start], r.Op(i).String()+" "+rec.Column(1).ValueStr(i))
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			wrong := 0
			for start, n := range truth {
				if want := []string{"+I " + strconv.Itoa(n)}; fmt.Sprint(rows[start]) != fmt.Sprint(want) {
					wrong++
					if c.named {
						t.Errorf("window %s: rows %v, want %v", start, rows[start], want)
					}
				}
			}
			if len(rows) != len(truth) {
				t.Errorf("%d windows, want %d", len(rows), len(truth))
			}
			s := r.Stats()
			switch {
			case c.named && (s.Late != 0 || s.BeyondLateness != 0):
				t.Errorf("%d late records, %d beyond the lateness; want none", s.Late, s.BeyondLateness)
			case !c.named && (wrong == 0 || s.BeyondLateness < (parts-2)*minutes*perMinute):
				t.Errorf("not named: %d of %d windows wrong, %d records beyond the lateness; want the later partitions' records to come too late",
					wrong, len(truth), s.BeyondLateness)
			}
		})
	}
}

// A named partition that delivers nothing holds the watermark back until
// it has been idle for Options.SourceIdleTimeout; with no idle timeout it
// holds it back for good, and no window closes before the query is
// cancelled (which closes none). The query's idle timeout, a queue
// reader's way to say its input has ended, closes every window, as the
// end of a bounded source does.
func TestWindowIdlePartition(t *testing.T) {
	for _, c := range []struct {
		name      string
		idle      time.Duration
		rows      int
		queryIdle time.Duration
	}{{"idle timeout", 100 * time.Millisecond, 1, 0}, {"none", -1, 0, 0}, {"query's idle timeout", -1, 2, 300 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			mem := tabletest.CheckedAlloc(t)
			cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
				WITH ('connector' = 'test', 'format' = 'test')`)
			src := sourceOf(t, cat, "ev")
			src.EOF = false
			src.Topic, src.Named = "ev", []int32{0, 1}
			src.Batches = tabletest.FromJSON(t, mem, src.Schema, 0,
				`{"id": 1, "ts": "2024-01-01 00:00:10.000"}`, `{"id": 2, "ts": "2024-01-01 00:01:10.000"}`)
			t.Cleanup(src.Release)
			p, err := Prepare("SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end", cat)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			r, err := Run(ctx, p, Options{Alloc: mem, HoldLinger: -1, SourceIdleTimeout: c.idle, IdleTimeout: c.queryIdle})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []string
			for r.Next() {
				rec := r.RecordBatch()
				for i := range int(rec.NumRows()) {
					start, _ := render.Formatter(rec.Column(0), r.Columns()[0].Type)(i)
					got = append(got, r.Op(i).String()+" "+start+" "+rec.Column(1).ValueStr(i))
				}
			}
			want := []string{"+I 2024-01-01 00:00:00.000 1", "+I 2024-01-01 00:01:00.000 1"}[:c.rows]
			end := EndCancelled
			if c.queryIdle > 0 {
				end = EndIdle
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || r.EndReason() != end {
				t.Errorf("rows %v, end %s; want %v, end %s", got, r.EndReason(), want, end)
			}
		})
	}
}

// The watermark's rules, step by step, on the clock the caller gives.
func TestWatermarks(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	m := newWatermarks(5*time.Millisecond, time.Second, t0)
	a, b := m.slot(flow.PartitionID{Topic: "t"}, t0), m.slot(flow.PartitionID{Topic: "t", Partition: 1}, t0)
	step := func(now time.Time, want int64) {
		t.Helper()
		if got := m.advance(now); got != want {
			t.Errorf("at %v: watermark %d, want %d", now.Sub(t0), got, want)
		}
	}
	step(t0, math.MinInt64) // nothing seen
	m.observe([]int32{a, a}, []int64{100, math.MinInt64}, at(10))
	step(at(10), math.MinInt64) // b has not delivered: it holds it back
	m.observe([]int32{b}, []int64{50}, at(20))
	step(at(20), 45) // the smaller of 100 and 50, less the delay
	m.observe([]int32{b}, []int64{40}, at(30))
	step(at(30), 45) // it never goes back
	m.observe([]int32{a}, []int64{300}, at(700))
	step(at(1029), 45)  // b delivered 999 ms ago: not idle yet
	step(at(1030), 295) // b is idle: a's alone
	// a delivered 1 s ago now: every partition is idle, so processing
	// time moves it on from 300 - 5, by the time since a's record.
	step(at(1700), 1295)
	step(at(1800), 1395)
	if got := m.nextIdle(at(1800)); !got.IsZero() {
		t.Errorf("next idle %v with every partition idle, want none", got)
	}
	m.observe([]int32{b}, []int64{60}, at(1900))
	if got := m.nextIdle(at(1900)); !got.Equal(at(2900)) {
		t.Errorf("next idle %v, want b's at 2.9 s", got.Sub(t0))
	}
	step(at(1900), 1395)
}

// With Options.AcceptFolded a window aggregation over a share group holds
// nothing: each batch is accepted once folded (with the rows emitted
// right after it, once the caller moves past them), so no window emits
// early though the records folded are many times MaxHeld and the linger
// is short; each window has one row. A query cancelled before a window
// closes has accepted that window's records all the same (Stats.Folded).
func TestWindowAcceptFolded(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelled=%v", cancelled), func(t *testing.T) {
			mem := tabletest.CheckedAlloc(t)
			cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
				WITH ('connector' = 'test', 'format' = 'test')`)
			src := sourceOf(t, cat, "ev")
			src.EOF = !cancelled
			src.SaysWaiting = true
			const n = 600 // record i at second i: ten one-minute windows of 60
			base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			var lines []string
			for i := range n {
				lines = append(lines, fmt.Sprintf(`{"id": %d, "ts": %q}`, i, base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05")))
			}
			src.Batches = tabletest.FromJSON(t, mem, src.Schema, 25, lines...)
			t.Cleanup(src.Release)
			p, err := Prepare(`SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
				GROUP BY window_start, window_end`, cat)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r, err := Run(ctx, p, Options{Alloc: mem, AcceptFolded: true, MaxHeld: 10, HoldLinger: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for r.Next() {
				rec := r.RecordBatch()
				for i := range int(rec.NumRows()) {
					got = append(got, r.Op(i).String()+" "+rec.Column(1).ValueStr(i))
				}
				if cancelled && len(got) == 9 {
					// The tenth window is open: its records are folded.
					cancel()
				}
			}
			r.Close()
			want := slices.Repeat([]string{"+I 60"}, n/60)
			if cancelled {
				want = want[:9]
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("rows %v, want %v", got, want)
			}
			accepted := 0
			for _, v := range src.Verdicts() {
				if v.Disposition == flow.Accept && !v.ByClose {
					accepted++
				}
			}
			// Cancelled, the query has read 22 batches of 25: the one that
			// closed the ninth window (second 540) brought ten records of
			// the tenth, folded and accepted with no row of theirs.
			read := n
			if cancelled {
				read = 550
			}
			if s := r.Stats(); accepted != read || s.Folded == 0 {
				t.Errorf("%d of %d records accepted, %d folded; want %d accepted, some on folding", accepted, n, s.Folded, read)
			}
		})
	}
}
