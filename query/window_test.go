package query

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/table"
)

// A window aggregation holds each source batch until a delivered row
// reflects every record of it: at every step, the records of a window
// that were accepted are no more than the count the last delivered row of
// that window shows, and when the query ends first the records no
// delivered row reflects are released, never accepted.
func TestWindowDelivery(t *testing.T) {
	const n, batch = 600, 25 // record i is at second i: 60 records a window
	for _, c := range []struct {
		name  string
		moves int // result batches to move past before cancelling; 0: all
	}{{"all", 0}, {"ends first", 3}} {
		t.Run(c.name, func(t *testing.T) {
			mem := tabletest.CheckedAlloc(t)
			cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
				WITH ('connector' = 'test', 'format' = 'test')`)
			src := sourceOf(t, cat, "ev")
			lines := make([]string, n)
			base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			for i := range lines {
				lines[i] = fmt.Sprintf(`{"id": %d, "ts": %q}`, i, base.Add(time.Duration(i)*time.Second).Format("2006-01-02 15:04:05"))
			}
			src.Batches = tabletest.FromJSON(t, mem, src.Schema, batch, lines...)
			t.Cleanup(src.Release)
			p, err := Prepare(`SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end`, cat)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r, err := Run(ctx, p, Options{Alloc: mem})
			if err != nil {
				t.Fatal(err)
			}
			shown := map[int]int64{} // window -> the count its last delivered row shows
			pending := map[int]int64{}
			check := func(when string) {
				t.Helper()
				acc := map[int]int64{}
				for _, v := range src.Verdicts() {
					id := v.Batch*batch + v.Row
					switch {
					case v.Disposition == table.Accept && !v.ByClose:
						acc[id/60]++
					case v.Disposition != table.Release:
						t.Errorf("%s: record %d: %s", when, id, v.Disposition)
					}
				}
				for w, k := range acc {
					if k > shown[w] {
						t.Errorf("%s: window %d: %d records accepted, its delivered row counts %d", when, w, k, shown[w])
					}
				}
			}
			moves := 0
			for r.Next() {
				// Moving past the batch before delivered it: its rows count.
				for w, k := range pending {
					shown[w] = k
				}
				clear(pending)
				check("after a Next")
				rec := r.RecordBatch()
				for i := 0; i < int(rec.NumRows()); i++ {
					if r.Op(i) == UpdateBefore {
						continue
					}
					start, _ := Formatter(rec.Column(0), r.Columns()[0].Type)(i)
					ts, _ := time.Parse("2006-01-02 15:04:05.000", start)
					cnt, _ := strconv.ParseInt(orNull(Formatter(rec.Column(1), r.Columns()[1].Type)(i)), 10, 64)
					pending[int(ts.Sub(base)/time.Minute)] = cnt
				}
				if moves++; moves == c.moves {
					cancel()
				}
			}
			// The Next that ended the loop moved past the last batch.
			for w, k := range pending {
				shown[w] = k
			}
			r.Close()
			check("at the end")
			accepted := 0
			for _, v := range src.Verdicts() {
				if v.Disposition == table.Accept && !v.ByClose {
					accepted++
				}
			}
			switch {
			case c.moves == 0 && (accepted != n || len(shown) != n/60):
				t.Errorf("ran to the end: %d of %d records accepted, %d of %d windows delivered", accepted, n, len(shown), n/60)
			case c.moves > 0 && (accepted == 0 || accepted == n):
				t.Errorf("ended first: %d of %d records accepted; want some, not all", accepted, n)
			}
		})
	}
}

// The window's timers emit rows while no record comes: the watermark moves
// on with processing time once the source is idle (window.idle-timeout),
// early firing emits an open window's running result (window.early-fire),
// and a processing-time window closes when the clock passes its end. Each
// batch the emitted rows reflect is accepted once the caller moves past
// them.
func TestWindowTimers(t *testing.T) {
	for _, c := range []struct {
		name, sql string
		o         Options
		op        RowKind
	}{
		// 00:59.900 with no delay: the watermark needs 100 ms more.
		{"idle", "TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", Options{SourceIdleTimeout: 20 * time.Millisecond, HoldLinger: -1}, Insert},
		{"early fire", "TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR)", Options{EarlyFire: 20 * time.Millisecond, HoldLinger: -1}, Insert},
		// No record comes after the two: the source waits for them to be
		// settled, so their window's running row comes after the linger.
		{"linger", "TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR)", Options{HoldLinger: 10 * time.Millisecond}, Insert},
		{"proctime", "TUMBLE(TABLE ev, DESCRIPTOR(pt), INTERVAL '0.05' SECOND)", Options{HoldLinger: -1}, Insert},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := tabletest.CheckedAlloc(t)
			cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), pt AS PROCTIME(), WATERMARK FOR ts AS ts)
				WITH ('connector' = 'test', 'format' = 'test')`)
			src := sourceOf(t, cat, "ev")
			src.EOF = false
			src.Batches = tabletest.FromJSON(t, mem, src.Schema, 0,
				`{"id": 1, "ts": "2024-01-01 00:00:59.800"}`, `{"id": 2, "ts": "2024-01-01 00:00:59.900"}`)
			t.Cleanup(src.Release)
			p, err := Prepare("SELECT COUNT(*) AS n FROM TABLE("+c.sql+") GROUP BY window_start, window_end", cat)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			c.o.Alloc = mem
			r, err := Run(ctx, p, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Next() {
				t.Fatalf("no row: %v (%s)", r.Err(), r.EndReason())
			}
			rec := r.RecordBatch()
			if got, _ := Formatter(rec.Column(0), r.Columns()[0].Type)(0); rec.NumRows() != 1 || r.Op(0) != c.op || got != "2" {
				t.Errorf("got %d rows, the first %s %s; want %s 2", rec.NumRows(), r.Op(0), got, c.op)
			}
			for _, v := range src.Verdicts() {
				t.Errorf("row %d of batch %d settled (%s) before the caller moved past the row that reflects it", v.Row, v.Batch, v.Disposition)
			}
			cancel()
			r.Next()
			r.Close()
			if vs := src.Verdicts(); len(vs) != 2 || vs[0].Disposition != table.Accept || vs[1].Disposition != table.Accept {
				t.Errorf("verdicts %v, want both records accepted", vs)
			}
		})
	}
}
