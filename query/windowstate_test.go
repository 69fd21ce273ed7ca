package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/table"
)

// windowEvents are n records over four partitions, batches of batch
// records each from one partition in turn; record k of partition p is at
// second 2k+p, so that the partitions' times interleave and a watermark
// taken over all of them would pass records still to come.
func windowEvents(t *testing.T, n, batch int) (*table.Catalog, *tabletest.Source, []int64, memory.Allocator) {
	mem := tabletest.CheckedAlloc(t)
	cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
		WITH ('connector' = 'test', 'format' = 'test')`)
	src := sourceOf(t, cat, "ev")
	src.Topic, src.Named = "ev", []int32{0, 1, 2, 3}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	lines := make([]string, n)
	secs := make([]int64, n) // record i's second
	next := [4]int{}         // the next k of each partition
	for b := range n / batch {
		p := b % 4
		src.BatchPartition = append(src.BatchPartition, int32(p))
		for j := range batch {
			i := b*batch + j
			secs[i] = int64(2*next[p] + p)
			next[p]++
			lines[i] = fmt.Sprintf(`{"id": %d, "ts": %q}`, i, base.Add(time.Duration(secs[i])*time.Second).Format("2006-01-02 15:04:05"))
		}
	}
	src.Batches = tabletest.FromJSON(t, mem, src.Schema, batch, lines...)
	t.Cleanup(src.Release)
	return cat, src, secs, mem
}

// A window aggregation on a State that a first query left continues its
// open windows: every window's row comes once over the two queries, with
// the count and sum of exactly its records, though the share group hands
// the second query every record again (those the State holds are accepted
// without being folded twice). Each row is an insert: no window emits
// early or twice. The same with the batches stored in epochs (a checkpoint
// interval), the first query's stored as it is cancelled.
func TestWindowStateContinues(t *testing.T) {
	for _, interval := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("interval %s", interval), func(t *testing.T) { testWindowStateContinues(t, interval) })
	}
}

func testWindowStateContinues(t *testing.T, interval time.Duration) {
	const n, batch = 1600, 25
	for _, c := range []struct {
		name, tvf string
		windows   func(sec int64) []int64 // the starts (s) of a record's windows
	}{
		{"tumble", "TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", func(s int64) []int64 { return []int64{s / 60 * 60} }},
		{"hop", "HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE)", func(s int64) []int64 {
			return []int64{s/30*30 - 30, s / 30 * 30}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sql := fmt.Sprintf("SELECT window_start, COUNT(*), SUM(id) FROM TABLE(%s) GROUP BY window_start, window_end", c.tvf)
			st := newMemState()
			rows := map[string]string{}
			run := func(src *tabletest.Source, cat *table.Catalog, moves int) *Rows {
				p, err := Prepare(sql, cat)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				r, err := Run(ctx, p, Options{Alloc: tabletest.CheckedAlloc(t), State: st, CheckpointInterval: interval})
				if err != nil {
					t.Fatal(err)
				}
				if !r.InsertOnly() {
					t.Error("a window aggregation on a State is not insert-only")
				}
				moved := 0
				for r.Next() {
					rec := r.RecordBatch()
					for i := range int(rec.NumRows()) {
						start := rec.Column(0).ValueStr(i)
						if op := r.Op(i); op != Insert {
							t.Errorf("window %s: a %s row", start, op)
						}
						if prev, dup := rows[start]; dup {
							t.Errorf("window %s: a second row (%s after %s)", start, rec.Column(1).ValueStr(i)+" "+rec.Column(2).ValueStr(i), prev)
						}
						rows[start] = rec.Column(1).ValueStr(i) + " " + rec.Column(2).ValueStr(i)
					}
					if moved++; moved == moves {
						cancel()
					}
				}
				r.Close()
				return r
			}
			cat1, src1, secs, _ := windowEvents(t, n, batch)
			src1.EOF = false
			r1 := run(src1, cat1, 4)
			if err := r1.Err(); !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			folded := 0
			for _, v := range src1.Verdicts() {
				if v.Disposition == flow.Accept && !v.ByClose {
					folded++
				}
			}
			if folded == 0 || folded == n || len(st.records) != folded || len(st.groups) < 2 {
				t.Fatalf("the first query accepted %d of %d records, stored %d and %d keys", folded, n, len(st.records), len(st.groups))
			}

			// The second query is handed first a record of the first
			// window, which the first query's row closed: the restored
			// watermark makes it late, so it opens no second row. Then
			// every record again.
			cat2, src2, _, mem2 := windowEvents(t, n, batch)
			late := tabletest.FromJSON(t, mem2, src2.Schema, 1, `{"id": 0, "ts": "2024-01-01 00:00:01"}`)
			src2.Batches = append(late, src2.Batches...)
			src2.BatchPartition = append([]int32{0}, src2.BatchPartition...)
			src2.WrapAck = func(i int, a flow.Acker) flow.Acker {
				if i == 0 {
					return shifted{a, 1 << 20, 1}
				}
				return shifted{a, -1, 2}
			}
			r2 := run(src2, cat2, 0)
			if err := r2.Err(); err != nil {
				t.Fatal(err)
			}
			s := r2.Stats()
			if s.Applied != int64(folded) || s.Restored == 0 {
				t.Errorf("the second query left out %d records as applied (want %d) and restored %d groups", s.Applied, folded, s.Restored)
			}
			accepted := 0
			for _, v := range src2.Verdicts() {
				if v.Disposition == flow.Accept && !v.ByClose {
					accepted++
				}
			}
			if accepted != n+1 || s.BeyondLateness != 1 {
				t.Errorf("the second query accepted %d of %d records, %d beyond lateness (want the late one)", accepted, n+1, s.BeyondLateness)
			}
			if len(st.groups) != 1 {
				t.Errorf("the state holds %d keys after every window's row, want the watermark's alone", len(st.groups))
			}
			want := map[string]string{}
			count, sum := map[int64]int64{}, map[int64]int64{}
			for i, sec := range secs {
				for _, w := range c.windows(sec) {
					count[w]++
					sum[w] += int64(i)
				}
			}
			base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			for w := range count {
				want[base.Add(time.Duration(w)*time.Second).Format("2006-01-02T15:04:05")] = fmt.Sprintf("%d %d", count[w], sum[w])
			}
			got := rows
			if !maps.Equal(got, want) {
				for _, k := range slices.Sorted(maps.Keys(want)) {
					if got[k] != want[k] {
						t.Errorf("window %s: got %q, want %q", k, got[k], want[k])
					}
				}
				t.Errorf("%d windows, want %d: %v", len(got), len(want), got)
			}
		})
	}
}

// shifted tells each row's record at offset+by, delivered count times:
// the records of a stream handed one batch more than the first query's.
type shifted struct {
	flow.Acker
	by    int64
	count int32
}

func (a shifted) RowOrigin(row int) (flow.Origin, bool) {
	o, ok := a.Acker.(flow.RowOrigins).RowOrigin(row)
	o.Offset += a.by
	o.DeliveryCount = a.count
	return o, ok
}

// A window aggregation that keeps its state refuses early firing, whose
// rows would change later.
func TestWindowStateRefusesEarlyFire(t *testing.T) {
	cat, _, _, _ := windowEvents(t, 100, 25)
	p, err := Prepare("SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end", cat)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), p, Options{State: newMemState(), EarlyFire: time.Second})
	if err == nil || !strings.Contains(err.Error(), "RESET 'window.early-fire'") {
		t.Errorf("err %v, want the early firing refused", err)
	}
}

// FuzzRestoreMarks: any stored watermark is read back or refused with an
// error, never a panic; one that saveMarks wrote reads back as it was.
func FuzzRestoreMarks(f *testing.F) {
	now := time.Now()
	w := &winState{marks: newWatermarks(5*time.Second, time.Second, now), wm: 42_000}
	w.marks.slot(flow.PartitionID{Topic: "ev", Partition: 3}, now)
	w.marks.parts[0].max = 47_000
	f.Add(w.saveMarks(nil))
	f.Add([]byte{marksVersion, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &winState{marks: newWatermarks(5*time.Second, time.Second, now), wm: math.MinInt64}
		if err := r.restoreMarks(b, now); err != nil {
			return
		}
		if again := r.saveMarks(nil); len(r.marks.slots) <= 1 && !bytes.Equal(again, b) {
			// One partition or none: the bytes are canonical unless a
			// varint was written long, which decodes the same.
			back := &winState{marks: newWatermarks(5*time.Second, time.Second, now), wm: math.MinInt64}
			if err := back.restoreMarks(again, now); err != nil || back.wm != r.wm {
				t.Fatalf("marks %x read as wm %d, written back as %x: %v", b, r.wm, again, err)
			}
		}
	})
}
