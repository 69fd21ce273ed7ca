package query

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
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
					case v.Disposition == flow.Accept && !v.ByClose:
						acc[id/60]++
					case v.Disposition != flow.Release:
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
					start, _ := render.Formatter(rec.Column(0), r.Columns()[0].Type)(i)
					ts, _ := time.Parse("2006-01-02 15:04:05.000", start)
					cnt, _ := strconv.ParseInt(render.OrNull(render.Formatter(rec.Column(1), r.Columns()[1].Type)(i)), 10, 64)
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
				if v.Disposition == flow.Accept && !v.ByClose {
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
		// The source says it waits for the query: the running row comes at
		// once, not after the hour-long linger.
		{"source waits", "TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' HOUR)", Options{HoldLinger: time.Hour}, Insert},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := tabletest.CheckedAlloc(t)
			cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), pt AS PROCTIME(), WATERMARK FOR ts AS ts)
				WITH ('connector' = 'test', 'format' = 'test')`)
			src := sourceOf(t, cat, "ev")
			src.EOF = false
			src.SaysWaiting = c.name == "source waits"
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
			if got, _ := render.Formatter(rec.Column(0), r.Columns()[0].Type)(0); rec.NumRows() != 1 || r.Op(0) != c.op || got != "2" {
				t.Errorf("got %d rows, the first %s %s; want %s 2", rec.NumRows(), r.Op(0), got, c.op)
			}
			for _, v := range src.Verdicts() {
				t.Errorf("row %d of batch %d settled (%s) before the caller moved past the row that reflects it", v.Row, v.Batch, v.Disposition)
			}
			cancel()
			r.Next()
			r.Close()
			if vs := src.Verdicts(); len(vs) != 2 || vs[0].Disposition != flow.Accept || vs[1].Disposition != flow.Accept {
				t.Errorf("verdicts %v, want both records accepted", vs)
			}
		})
	}
}

// A window's state is dropped once the watermark is Options.AllowedLateness
// past its end, so the state held grows with the keys and the windows open
// or within the lateness, not with the windows seen: streaming four times
// as many windows holds the same groups and about the same Arrow memory,
// while a lateness longer than the stream
// keeps every window. Late records within the lateness update their
// window's row; those beyond it update nothing: each window and key has
// one row, which counts its records but those.
func TestWindowStateBounded(t *testing.T) {
	type peak struct {
		live, slots int
		arrow       int64
	}
	const keys, perKey = 10, 3 // records per key and second
	run := func(t *testing.T, windows int, lateness time.Duration) peak {
		srcMem, mem := tabletest.CheckedAlloc(t), tabletest.CheckedAlloc(t)
		cat := newCatalog(t, `CREATE TABLE ev (who STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
			WITH ('connector' = 'test', 'format' = 'test')`)
		src := sourceOf(t, cat, "ev")
		base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		var lines []string
		want := map[string]int64{} // window (seconds) and key: records
		add := func(who string, at time.Duration) {
			lines = append(lines, fmt.Sprintf(`{"who": %q, "ts": %q}`, who, base.Add(at).Format("2006-01-02 15:04:05.000")))
			want[fmt.Sprintf("%d %s", at/time.Second, who)]++
		}
		for w := range windows {
			sec := time.Duration(w) * time.Second
			if w >= 5 {
				// Late: for the window closed a second ago (within a
				// lateness of 2 s) and for one 5 s back (beyond it).
				add("k0", sec-2*time.Second+500*time.Millisecond)
				add("k1", sec-5*time.Second+time.Millisecond)
				if lateness < 5*time.Second {
					// Beyond the lateness: it counts in no row.
					want[fmt.Sprintf("%d k1", w-5)]--
				}
			}
			for j := range perKey {
				for k := range keys {
					add(fmt.Sprintf("k%d", k), sec+time.Duration(j*100+k)*time.Millisecond)
				}
			}
		}
		src.Batches = tabletest.FromJSON(t, srcMem, src.Schema, 25, lines...)
		t.Cleanup(src.Release)
		p, err := Prepare(`SELECT window_start, who, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND))
			GROUP BY window_start, window_end, who`, cat)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(t.Context(), p, Options{Alloc: mem, HoldLinger: -1, AllowedLateness: lateness})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var pk peak
		rows := map[string][]int64{} // window and key: its rows' counts, a new row for each +I
		for r.Next() {
			pk.live = max(pk.live, r.agg.live())
			pk.slots = max(pk.slots, int(r.agg.n))
			pk.arrow = max(pk.arrow, int64(mem.CurrentAlloc()))
			rec := r.RecordBatch()
			for i := range int(rec.NumRows()) {
				start, _ := render.Formatter(rec.Column(0), r.Columns()[0].Type)(i)
				at, _ := time.Parse("2006-01-02 15:04:05.000", start)
				k := fmt.Sprintf("%d %s", at.Sub(base)/time.Second, rec.Column(1).ValueStr(i))
				n, _ := strconv.ParseInt(rec.Column(2).ValueStr(i), 10, 64)
				switch r.Op(i) {
				case Insert:
					rows[k] = append(rows[k], n)
				case UpdateAfter:
					rows[k][len(rows[k])-1] = n
				}
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		for k, n := range want {
			var sum int64
			for _, c := range rows[k] {
				sum += c
			}
			if len(rows[k]) != 1 || rows[k][0] != n {
				t.Errorf("window and key %s: rows %v, want one row of %d records", k, rows[k], n)
			}
		}
		late := int64(2 * (windows - 5))
		beyond := int64(windows - 5)
		if lateness > time.Duration(windows)*time.Second {
			beyond = 0
		}
		if s := r.Stats(); s.Late != late || s.BeyondLateness != beyond {
			t.Errorf("%d late records, %d beyond the lateness; want %d and %d", s.Late, s.BeyondLateness, late, beyond)
		}
		return pk
	}
	short, long := run(t, 40, 2*time.Second), run(t, 160, 2*time.Second)
	t.Logf("peak state over 40 windows %+v, over 160 %+v", short, long)
	// Open: this second's window and the last; within the lateness: two
	// more; a late record's new row goes as soon as it is out.
	if long.live > keys*5 || long.live != short.live || long.slots != short.slots {
		t.Errorf("groups held at most: %d (slots %d) over 160 windows, %d (%d) over 40; want the same, at most %d",
			long.live, long.slots, short.live, short.slots, keys*5)
	}
	if long.arrow > short.arrow*5/4 {
		t.Errorf("Arrow memory held at most: %d bytes over 160 windows, %d over 40", long.arrow, short.arrow)
	}
	if all := run(t, 40, time.Hour); all.live < 40*keys {
		t.Errorf("with an hour of lateness %d groups held, want every window's (%d): the test would not see a bound", all.live, 40*keys)
	}
}

// TestWindowOffset checks the windows a time falls in against the examples
// of Flink's documentation of the window offset: 2021-06-30 00:00:04 in
// 10-minute tumbling windows, for offsets that shift them differently or
// the same (-16, -6 and 4 minutes shift them alike). A time before the
// epoch is placed the same way.
func TestWindowOffset(t *testing.T) {
	at := func(s string) int64 {
		tm, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	show := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05") }
	for _, c := range []struct {
		spec       windowSpec
		t          string
		start, end []string
	}{
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute, offset: -16 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-29 23:54:00"}, []string{"2021-06-30 00:04:00"}},
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute, offset: -6 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-29 23:54:00"}, []string{"2021-06-30 00:04:00"}},
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute, offset: -4 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-29 23:56:00"}, []string{"2021-06-30 00:06:00"}},
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-30 00:00:00"}, []string{"2021-06-30 00:10:00"}},
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute, offset: 4 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-29 23:54:00"}, []string{"2021-06-30 00:04:00"}},
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute, offset: 6 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-29 23:56:00"}, []string{"2021-06-30 00:06:00"}},
		{windowSpec{fn: "TUMBLE", size: 10 * time.Minute, offset: 16 * time.Minute}, "2021-06-30 00:00:04", []string{"2021-06-29 23:56:00"}, []string{"2021-06-30 00:06:00"}},
		{windowSpec{fn: "TUMBLE", size: time.Hour, offset: 15 * time.Minute}, "1969-12-31 23:10:00", []string{"1969-12-31 22:15:00"}, []string{"1969-12-31 23:15:00"}},
		{windowSpec{fn: "HOP", size: 10 * time.Minute, step: 5 * time.Minute, offset: 2 * time.Minute}, "2021-06-30 00:00:04",
			[]string{"2021-06-29 23:52:00", "2021-06-29 23:57:00"}, []string{"2021-06-30 00:02:00", "2021-06-30 00:07:00"}},
		{windowSpec{fn: "CUMULATE", size: 10 * time.Minute, step: 2 * time.Minute, offset: 5 * time.Minute}, "2021-06-30 00:00:04",
			[]string{"2021-06-29 23:55:00", "2021-06-29 23:55:00", "2021-06-29 23:55:00"},
			[]string{"2021-06-30 00:01:00", "2021-06-30 00:03:00", "2021-06-30 00:05:00"}},
	} {
		starts, ends := c.spec.appendWindows(at(c.t), nil, nil)
		var gotS, gotE []string
		for k := range starts {
			gotS, gotE = append(gotS, show(starts[k])), append(gotE, show(ends[k]))
		}
		if !slices.Equal(gotS, c.start) || !slices.Equal(gotE, c.end) {
			t.Errorf("%s of %s, offset %s: %s in windows from %v to %v, want from %v to %v",
				c.spec.fn, c.spec.size, c.spec.offset, c.t, gotS, gotE, c.start, c.end)
		}
	}
}

// A query that reads a window TVF's rows as they are is stateless: each
// result row is one source row in one window, and is settled through that
// row. A HOP row in two windows gives two result rows; when they are told
// apart, as for a record that gave several rows, one released row
// releases the source row, else one rejected row rejects it. A row whose
// time is NULL falls in no window (Flink drops it) and is accepted, as a
// row WHERE drops is.
func TestWindowRowsSettleTheirSourceRows(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cat := newCatalog(t, `CREATE TABLE ev (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
		WITH ('connector' = 'test', 'format' = 'test')`)
	src := sourceOf(t, cat, "ev")
	src.Batches = tabletest.FromJSON(t, mem, src.Schema, 5,
		`{"id": 0, "ts": "2024-01-01 00:00:01"}`, `{"id": 1, "ts": null}`, `{"id": 2, "ts": "2024-01-01 00:00:02"}`,
		`{"id": 3, "ts": "2024-01-01 00:00:03"}`, `{"id": 4, "ts": "2024-01-01 00:00:04"}`)
	t.Cleanup(src.Release)
	p, err := Prepare(`SELECT id, window_start FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE id <> 3`, cat)
	if err != nil {
		t.Fatal(err)
	}
	if p.Updating() {
		t.Fatal("a window TVF without aggregation is updating")
	}
	run := func(settle func(r *Rows)) Stats {
		t.Helper()
		r, err := Run(context.Background(), p, Options{Alloc: mem})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatal(r.Err())
		}
		if got := fmt.Sprint(ids(t, r)); got != "[0 0 2 2 4 4]" {
			t.Fatalf("ids %s, want [0 0 2 2 4 4]", got)
		}
		settle(r)
		for r.Next() {
		}
		r.Close()
		return r.Stats()
	}
	s := run(func(r *Rows) {
		for _, m := range []struct {
			row int
			d   flow.Disposition
		}{{0, flow.Reject}, {1, flow.Release}, {2, flow.Reject}, {3, flow.Reject}, {5, flow.Reject}} {
			mark := r.RejectRow
			if m.d == flow.Release {
				mark = r.ReleaseRow
			}
			if err := mark(m.row); err != nil {
				t.Fatal(err)
			}
		}
	})
	log := src.Log()
	if got, want := strings.Join(log, "; "), "b0: done: accept 1,3, release 0, reject 2,4; close (0 unread)"; got != want {
		t.Errorf("source was told %q, want %q", got, want)
	}
	if s.Rows != 6 || s.Delivered != 1 || s.Released != 1 || s.Rejected != 4 || s.Filtered != 2 {
		t.Errorf("stats %+v; want 6 rows, 1 delivered, 1 released, 4 rejected, 2 filtered", s)
	}
	// A held batch's rows are settled the same way.
	s = run(func(r *Rows) {
		h, err := r.Hold()
		if err != nil {
			t.Fatal(err)
		}
		h.Mark(2, flow.Release)
		h.Mark(3, flow.Reject)
		h.Mark(3, flow.Accept)
		if a, row := h.Source(5); a == nil || row != 4 {
			t.Errorf("row 5 comes from source row %d, want 4", row)
		}
		h.Done()
	})
	if got, want := strings.Join(src.Log()[len(log):], "; "), "b0: done: accept 0-1,3-4, release 2; close (0 unread)"; got != want {
		t.Errorf("source was told %q, want %q", got, want)
	}
	if s.Delivered != 5 || s.Released != 1 {
		t.Errorf("stats %+v; want 5 delivered, 1 released", s)
	}
}
