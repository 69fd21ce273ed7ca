package query

// This file runs a window aggregation (see "Windows" in the package
// documentation): rows are folded into their windows' groups as they
// come, and a window's row is emitted when the watermark passes its end,
// early (as an update) when the emission policy says so, and again when a
// late record changes it.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
)

// DefaultMaxHeld is Options.MaxHeld's default: half the broker's default
// cap of locked records per partition (group.share.partition.max.record.locks,
// 2000), so that one more poll of records still fits under the cap.
const DefaultMaxHeld = 1000

// DefaultHoldLinger is Options.HoldLinger's default: long enough for the
// batches of one poll to come one after another, short enough that a
// stream's next poll is not held up much.
const DefaultHoldLinger = 50 * time.Millisecond

// holdLinger is the query's HoldLinger; 0 for never.
func (r *Rows) holdLinger() time.Duration {
	switch d := r.opts.HoldLinger; {
	case d < 0:
		return 0
	case d == 0:
		return DefaultHoldLinger
	default:
		return d
	}
}

// DefaultAllowedLateness is Options.AllowedLateness's default: a record
// comes late here mostly because it was delivered again (after its lock
// expired, 30 s by default, or a member went away), which takes seconds
// to minutes whatever the window's size; ten minutes covers that with room
// to spare while the state held stays that of the last windows.
const DefaultAllowedLateness = 10 * time.Minute

// allowedLateness is the query's AllowedLateness in milliseconds.
func allowedLateness(o Options) int64 {
	switch d := o.AllowedLateness; {
	case d < 0:
		return 0
	case d == 0:
		return DefaultAllowedLateness.Milliseconds()
	default:
		return d.Milliseconds()
	}
}

// sourceWaits reports whether the stream says it gives nothing more until
// the query settles what it holds (see flow.ReaderWaiter).
func (r *Rows) sourceWaits() bool {
	rw, ok := r.stream.(flow.ReaderWaiter)
	return ok && rw.WaitsForReader()
}

// errTick is the cause of a wait that a window's timer ended.
var errTick = errors.New("window timer")

// windowRows gives each row of a batch one row per window it falls in
// (expand), for a window aggregation (winState) and for a query that
// reads a window TVF's rows as they are.
type windowRows struct {
	wp *windowPlan
	// schema is the batch expand makes: the table's columns and the
	// window's, without window_time when the query does not read it.
	schema *arrow.Schema
	// expand's rows (the source row of each row it made) and their
	// windows' starts and ends, reused.
	idx          []int
	starts, ends []int64
	// batch is what the batch expanded last told: each of its rows' event
	// time (ms; math.MinInt64 for none), its late records and those of
	// them whose windows had all been dropped.
	times       []int64
	batchLate   int64
	batchBeyond int64
	// beyond are the rows of the batch in batchBeyond, and limit the end
	// at or before which their windows were dropped.
	beyond []int
	limit  int64
	// skip, while a batch is expanded, are its rows to leave out (their
	// records applied already: Options.Applied); nil for none.
	skip []bool
}

func newWindowRows(p *Plan) *windowRows {
	// window_time is the last column: leaving it out moves no other.
	schema, last := p.windowSchema, p.windowSchema.NumFields()-1
	if !p.allInputs && !slices.Contains(p.inputs, last) {
		schema = arrow.NewSchema(schema.Fields()[:last], nil)
	}
	return &windowRows{wp: p.window, schema: schema}
}

// sources maps rows of the batch expand made last to the rows of its
// input they came from, into a new selection.
func (x *windowRows) sources(sel []int) []int {
	out := make([]int, len(sel))
	for k, s := range sel {
		out[k] = x.idx[s]
	}
	return out
}

// sourceRows are the rows of the input that rows sel of the batch expand
// made last came from, each once.
func (x *windowRows) sourceRows(sel []int) []int {
	var out []int
	for _, s := range sel {
		if i := x.idx[s]; len(out) == 0 || out[len(out)-1] != i {
			out = append(out, i)
		}
	}
	return out
}

// winState is a running window aggregation's time and delivery state; the
// groups themselves are the aggState's.
type winState struct {
	*windowRows
	// lateness is how far (ms) the watermark goes past a window's end
	// before the window's groups are dropped (Options.AllowedLateness).
	lateness int64
	// byEnd are the groups by their window's end, to drop a window's
	// groups together; minEnd is the smallest end in it.
	byEnd  map[int64][]int32
	minEnd int64
	// marks are the partitions' event times (nil for processing time);
	// wm is the watermark (ms); slots the partitions of the rows of the
	// batch being folded, reused.
	marks       *watermarks
	wm          int64
	slots       []int32
	lastArrival time.Time
	// seq counts the source batches folded.
	seq uint64
	// Per group: its window's end (ms), the seq of the last batch its
	// emitted row reflects, whether that row is in the result (HAVING
	// kept it), and whether a batch changed it since. The row itself is
	// made again from the aggregates' results as they were then (see
	// aggState.snap).
	end       []int64
	emittedAt []uint64
	shown     []bool
	isDirty   []bool
	dirty     []int32
	old, now  []int   // emitGroups' rows before and after, reused
	before    []int32 // emitGroups' groups with a row before, reused
	// pending are the source batches not yet reflected by a delivered row,
	// held (neither accepted nor released); held counts their records.
	pending []pendBatch
	held    int64
	// nextFire is when the open windows' running results are emitted
	// early; zero when nothing waits for it.
	nextFire time.Time
	// eof: the input ended (endAs says how: EndEOF, or EndIdle for the
	// idle timeout); every window closes.
	eof   bool
	endAs EndReason
	// locksNothing: the source takes nothing (a flow.Looker, the kafka
	// connector's plain reader), so holding its batches locks no record
	// and a window's row waits for its close (or early firing) whatever
	// the records held.
	locksNothing bool
	// acceptFolded: Options.AcceptFolded. folded is then the batch just
	// folded, accepted with the rows emitted right after it, if any, else
	// at once; its rows counts its records.
	acceptFolded bool
	folded       flow.Acker
	foldedRows   int64
}

// holds reports whether the window holds its source batches until a
// delivered row reflects them, and so must emit early to keep the records
// locked under the broker's cap.
func (w *winState) holds() bool { return !w.locksNothing && !w.acceptFolded }

// track notes that group g changed: a new one (fresh) of the window that
// ends at end is filed under it. A slot of a dropped group keeps its
// emittedAt, which is before this batch: the new group's batches wait for
// its row.
func (w *winState) track(g int32, fresh bool, end int64) {
	for int(g) >= len(w.end) {
		w.end = append(w.end, 0)
		w.emittedAt = append(w.emittedAt, 0)
		w.shown = append(w.shown, false)
		w.isDirty = append(w.isDirty, false)
	}
	if fresh {
		w.end[g] = end
		w.byEnd[end] = append(w.byEnd[end], g)
		w.minEnd = min(w.minEnd, end)
	}
	if !w.isDirty[g] {
		w.isDirty[g] = true
		w.dirty = append(w.dirty, g)
	}
}

// pendBatch is a source batch held until its groups' rows are delivered.
type pendBatch struct {
	ack    flow.Acker
	groups []int32
	seq    uint64
	rows   int64
}

func newWinState(p *Plan, o Options) *winState {
	now := time.Now()
	w := &winState{windowRows: newWindowRows(p), lateness: allowedLateness(o), byEnd: map[int64][]int32{}, minEnd: math.MaxInt64,
		wm: math.MinInt64, lastArrival: now}
	if !p.window.proctime {
		w.marks = newWatermarks(p.window.delay, sourceIdleTimeout(o), now)
	}
	return w
}

// dropLimit is the end of the last windows dropped: a window whose end is
// at or before it has no state (math.MinInt64: none).
func (w *winState) dropLimit() int64 {
	if w.wm < math.MinInt64+w.lateness {
		return math.MinInt64
	}
	return w.wm - w.lateness
}

// dropClosed drops the groups of the windows the watermark is
// AllowedLateness past the end of: they are closed, their rows emitted
// (winEmit emits every window the watermark passed before it comes here),
// and a record for them now starts a new row. So the state held is that
// of the open windows and the closed ones a late record may still update,
// whatever the number of windows seen.
func (r *Rows) dropClosed() {
	w := r.win
	limit := w.dropLimit()
	if w.eof && r.saves != nil {
		// Every window's row is out: none stays stored to come again.
		limit = math.MaxInt64
	}
	if w.minEnd > limit {
		return
	}
	var gone []int32
	w.minEnd = math.MaxInt64
	for end, gs := range w.byEnd {
		if end > limit {
			w.minEnd = min(w.minEnd, end)
			continue
		}
		delete(w.byEnd, end)
		for _, g := range gs {
			w.shown[g] = false
		}
		gone = append(gone, gs...)
	}
	if r.saves != nil {
		r.noteDropped(gone)
	}
	r.agg.drop(gone)
}

// release releases every held record: the query ended before a
// delivered row reflected them.
func (w *winState) release() {
	for _, p := range w.pending {
		p.ack.Abandon()
	}
	w.pending, w.held = nil, 0
	if w.folded != nil {
		w.folded.Abandon()
		w.folded = nil
	}
}

// toMillis converts a time in unit to milliseconds, truncating toward zero.
func toMillis(v int64, unit arrow.TimeUnit) int64 {
	if unit <= arrow.Millisecond {
		return v * int64(unit.Multiplier()/time.Millisecond)
	}
	return v / int64(time.Millisecond/unit.Multiplier())
}

// fromMillis converts a time in milliseconds to unit, truncating toward
// zero.
func fromMillis(v int64, unit arrow.TimeUnit) int64 {
	if unit <= arrow.Millisecond {
		return v / int64(unit.Multiplier()/time.Millisecond)
	}
	return v * int64(time.Millisecond/unit.Multiplier())
}

// expand gives each row of full (the table's columns) one row per window
// it falls in, with window_start, window_end and window_time (if the query
// reads it) after the table's columns; a row whose time is NULL falls in
// none, as in Flink. It notes each row's time and the records older than
// the watermark wm. A late record's windows that end at or before limit
// are left out (their state is gone: it updates nothing there, rather than
// start a second row for a window), and a record left with none is counted
// in batchBeyond (math.MinInt64 for both: none is late).
func (w *windowRows) expand(ec *expr.EvalCtx, full arrow.RecordBatch, wm, limit int64) (arrow.RecordBatch, error) {
	ts := full.Column(w.wp.timeIdx).(*array.Timestamp)
	unit := ts.DataType().(*arrow.TimestampType).Unit
	n := int(full.NumRows())
	idx, starts, ends, times := w.idx[:0], w.starts[:0], w.ends[:0], w.times[:0]
	w.batchLate, w.batchBeyond, w.beyond, w.limit = 0, 0, w.beyond[:0], limit
	for i := range n {
		if ts.IsNull(i) {
			times = append(times, math.MinInt64)
			continue
		}
		t := toMillis(int64(ts.Value(i)), unit)
		times = append(times, t)
		if w.skip != nil && w.skip[i] {
			// Folded before: its time still counts for the watermark.
			continue
		}
		late := !w.wp.proctime && t < wm
		if late {
			w.batchLate++
		}
		k := len(starts)
		starts, ends = w.wp.spec.appendWindows(t, starts, ends)
		if late && len(ends) > k && ends[k] <= limit {
			// Its windows' ends ascend: those dropped come first.
			j := k
			for j < len(ends) && ends[j] <= limit {
				j++
			}
			if j == len(ends) {
				w.batchBeyond++
				w.beyond = append(w.beyond, i)
			}
			starts = append(starts[:k], starts[j:]...)
			ends = append(ends[:k], ends[j:]...)
		}
		for range len(starts) - k {
			idx = append(idx, i)
		}
	}
	w.idx, w.starts, w.ends, w.times = idx, starts, ends, times
	var rows arrow.RecordBatch
	if len(idx) == n {
		full.Retain()
		rows = full
	} else {
		var err error
		if rows, err = expr.TakeRows(ec, full, idx); err != nil {
			return nil, err
		}
	}
	defer rows.Release()
	nt := int(full.NumCols())
	extra := []arrow.Array{timestamps(ec, w.schema.Field(nt).Type, starts), timestamps(ec, w.schema.Field(nt+1).Type, ends)}
	if w.schema.NumFields() == nt+3 {
		// window_time is the window's last millisecond, in the time
		// attribute's unit; ends is not needed any more.
		tt := w.schema.Field(nt + 2).Type
		for k, e := range ends {
			ends[k] = fromMillis(e-1, tt.(*arrow.TimestampType).Unit)
		}
		extra = append(extra, timestamps(ec, tt, ends))
	}
	defer expr.ReleaseAll(extra)
	return array.NewRecordBatch(w.schema, append(slices.Clone(rows.Columns()), extra...), int64(len(idx))), nil
}

// timestamps is an array of type t (a TIMESTAMP) of vals, none NULL:
// copied into one buffer, without the bitmap and checks of a builder.
func timestamps(ec *expr.EvalCtx, t arrow.DataType, vals []int64) arrow.Array {
	buf := memory.NewResizableBuffer(ec.Mem())
	defer buf.Release()
	buf.Resize(len(vals) * 8)
	copy(arrow.Int64Traits.CastFromBytes(buf.Bytes()), vals)
	data := array.NewData(t, len(vals), []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// failLate settles the records later than every window they fall in (the
// batch's beyond rows, which updated nothing) by the table's policy for
// rows a query cannot use ('scan.on-eval-error': to the dead-letter topic,
// say), when it has one; without, they are accepted with their batch, as
// before, and only counted. It returns sel without the rows it settled, so
// that a state directory does not note their records as applied.
func (r *Rows) failLate(ack flow.Acker, sel []int) []int {
	w := r.winRows
	rf, ok := ack.(flow.RowFailer)
	if len(w.beyond) == 0 || !ok || !rf.FailsRows() {
		return sel
	}
	failed := map[int]bool{}
	for _, row := range w.beyond {
		if failed[row] {
			continue
		}
		err := fmt.Errorf("%w: its event time %s falls only in windows whose rows are out: each ended at or before %s (the watermark less 'window.allowed-lateness')",
			ErrLate, millisText(w.times[row]), millisText(w.limit))
		from, to := rf.FailRow(row, err)
		for k := from; k < to; k++ {
			failed[k] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(sel), func(row int) bool { return failed[row] })
}

// millisText is a time in milliseconds since the epoch as Flink shows a
// TIMESTAMP(3).
func millisText(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000")
}

// handOutWin folds a source batch into its windows' groups, holds it until
// a delivered row reflects it, and hands out what the emission policy
// emits now, if anything.
func (r *Rows) handOutWin(b flow.Batch) bool {
	w := r.win
	n := int64(b.Record.NumRows())
	now := time.Now()
	w.lastArrival = now
	if w.marks != nil {
		w.slots = w.marks.rowSlots(b.Ack, int(n), now, w.slots)
	}
	var groups []int32
	var fresh []bool
	sel, ok := r.foldSource(b, func(in arrow.RecordBatch) error {
		err := r.agg.update(r.ec, in)
		if err == nil {
			groups, fresh = slices.Clone(r.agg.touched), r.agg.fresh
		}
		return err
	})
	if !ok {
		return false
	}
	sel = r.failLate(b.Ack, sel)
	if r.saves != nil {
		if err := r.saves.note(groups, b.Ack, w.sourceRows(sel)); err != nil {
			b.Ack.Abandon()
			r.finish(EndError, err)
			return false
		}
	}
	w.seq++
	ends := r.agg.keys[w.wp.endKey]
	for t, g := range groups {
		w.track(g, fresh[t], ends.ints[g])
	}
	r.mu.Lock()
	r.stats.Late += w.batchLate
	r.stats.BeyondLateness += w.batchBeyond
	if len(groups) == 0 {
		// No row of it falls in a window WHERE keeps: processed, so
		// accepted, as a filtered batch is.
		r.stats.Filtered += n - w.batchBeyond
	}
	r.mu.Unlock()
	switch {
	case len(groups) == 0 && r.saves == nil:
		b.Ack.Done()
	case len(groups) == 0:
		// Accepted once the watermark it moved is stored.
		w.folded, w.foldedRows = b.Ack, 0
	case w.acceptFolded:
		w.folded, w.foldedRows = b.Ack, n
	default:
		w.pending = append(w.pending, pendBatch{ack: b.Ack, groups: groups, seq: w.seq, rows: n})
		w.held += n
	}
	if w.marks != nil {
		w.marks.observe(w.slots, w.times, now)
		w.wm = w.marks.advance(now)
	}
	return r.winEmit()
}

// winTick runs the window's timers when no batch came: processing time
// moved (closing processing-time windows), the source was idle (moving
// the watermark on), or early firing is due.
func (r *Rows) winTick() bool {
	w := r.win
	if w.marks != nil {
		w.wm = w.marks.advance(time.Now())
	}
	return r.winEmit()
}

// wake is when the window's next timer is due; zero for none.
func (r *Rows) wake() time.Time {
	w := r.win
	if len(w.dirty) == 0 {
		return time.Time{}
	}
	var at time.Time
	earlier := func(t time.Time) {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if !w.nextFire.IsZero() {
		earlier(w.nextFire)
	}
	if d := r.holdLinger(); d > 0 && w.held > 0 && w.holds() {
		earlier(w.lastArrival.Add(d))
	}
	minEnd := int64(math.MaxInt64)
	for _, g := range w.dirty {
		minEnd = min(minEnd, w.end[g])
	}
	m := w.marks
	switch now := time.Now(); {
	case m == nil:
		earlier(time.UnixMilli(minEnd))
	case m.allIdle(now) && m.max != math.MinInt64:
		// Processing time moves the watermark on: it passes the first
		// open window's end this long after the last record.
		base := m.max - m.delay
		earlier(m.last.Add(max(m.idle, time.Duration(minEnd-base)*time.Millisecond)))
	default:
		// A partition that holds the watermark back may go idle.
		if t := m.nextIdle(now); !t.IsZero() {
			earlier(t)
		}
	}
	return at
}

// winEmit emits the rows the policy calls for now: of every window the
// watermark passed (a final row, or an update after early rows or a late
// record), and, when early firing is due or the held records reach
// Options.MaxHeld, of every window with unreflected records. The batches
// their delivery reflects are settled when the caller moves past it.
func (r *Rows) winEmit() bool {
	w := r.win
	now := time.Now()
	if w.wp.proctime {
		w.wm = max(w.wm, now.UnixMilli())
	}
	maxHeld := r.opts.MaxHeld
	if maxHeld <= 0 {
		maxHeld = DefaultMaxHeld
	}
	linger := r.holdLinger()
	early := !w.nextFire.IsZero() && !now.Before(w.nextFire)
	if w.holds() {
		early = early || w.held >= maxHeld || (linger > 0 && w.held > 0 && (now.Sub(w.lastArrival) >= linger || r.sourceWaits()))
	}
	var emit, keep []int32
	for _, g := range w.dirty {
		if early || w.eof || w.end[g] <= w.wm {
			emit = append(emit, g)
			w.isDirty[g] = false
			w.emittedAt[g] = w.seq
		} else {
			keep = append(keep, g)
		}
	}
	w.dirty = keep
	// The timer runs from the first record not reflected yet: records
	// that keep coming do not put it off.
	switch {
	case len(keep) == 0:
		w.nextFire = time.Time{}
	case w.nextFire.IsZero() && r.opts.EarlyFire > 0:
		w.nextFire = now.Add(r.opts.EarlyFire)
	}
	// The windows whose rows are out now, and that are allowed lateness
	// past their end, go once this is done.
	defer r.dropClosed()
	if len(emit) == 0 {
		r.acceptFolded()
		return false
	}
	res, err := r.emitGroups(emit)
	if err != nil {
		r.finish(EndError, err)
		return false
	}
	var ready multiAck
	var rows int64
	pending := w.pending[:0]
	for _, p := range w.pending {
		if reflected(w, p) {
			ready = append(ready, p.ack)
			rows += p.rows
		} else {
			pending = append(pending, p)
		}
	}
	clear(w.pending[len(pending):])
	w.pending = pending
	w.held -= rows
	if w.folded != nil {
		// Folded and followed by rows: the caller confirms them with it.
		ready = append(ready, w.folded)
		rows += w.foldedRows
		w.folded = nil
	}
	if res.out == nil {
		// Every emitted row is as delivered before: they reflect these
		// batches already.
		if r.saves == nil {
			ready.Done()
		} else if !r.stored(ready) {
			return false
		}
		r.mu.Lock()
		r.stats.Unchanged += rows
		r.mu.Unlock()
		return false
	}
	r.setChanges(ready, res, 0, nil)
	return true
}

// acceptFolded accepts the batch just folded, which no emitted row
// follows (Options.AcceptFolded): the windows' state holds its effect.
func (r *Rows) acceptFolded() {
	w := r.win
	if w.folded == nil {
		return
	}
	folded := w.folded
	w.folded = nil
	if r.saves == nil {
		folded.Done()
	} else if !r.stored(folded) {
		return
	}
	r.mu.Lock()
	r.stats.Folded += w.foldedRows
	r.mu.Unlock()
}

// reflected reports whether every group p changed has had its row emitted
// since.
func reflected(w *winState, p pendBatch) bool {
	for _, g := range p.groups {
		if w.emittedAt[g] < p.seq {
			return false
		}
	}
	return true
}

// emitGroups makes the changes of groups against the rows last emitted
// for them: -U/+U for a changed row, +I for a first one, -D for one HAVING
// no longer keeps. The rows last emitted are made again from the keys and
// the aggregates' results as they were then, ahead of the rows now, so
// that one group batch gives both, as a GROUP BY's fold does.
func (r *Rows) emitGroups(groups []int32) (aggOut, error) {
	s, p, w, ec := r.agg, r.plan, r.win, r.ec
	old, now, before := w.old[:0], w.now[:0], w.before[:0]
	for _, g := range groups {
		if w.shown[g] {
			old = append(old, len(before))
			before = append(before, g)
		} else {
			old = append(old, -1)
		}
	}
	for t := range groups {
		now = append(now, len(before)+t)
	}
	w.old, w.now, w.before = old, now, before
	bs := s.builders(ec)
	for _, b := range bs {
		reserveRows(b, len(before)+len(groups))
	}
	s.appendEmitted(bs, before)
	if err := s.appendGroups(bs, groups); err != nil {
		return aggOut{}, err
	}
	gcols := make([]arrow.Array, len(bs))
	for k, b := range bs {
		gcols[k] = b.NewArray()
	}
	nOld := len(before)
	gb := array.NewRecordBatch(p.agg.groupSchema, gcols, int64(nOld+len(groups)))
	expr.ReleaseAll(gcols)
	defer gb.Release()
	keep, cols, err := groupRows(ec, p, gb)
	if err != nil {
		return aggOut{}, err
	}
	defer releaseRows(keep, cols)
	// A row before was shown (HAVING kept it when it was emitted).
	res, err := s.diff(ec, p, cols, gb.NumRows(), old, now, keep, nOld)
	if err != nil {
		return aggOut{}, err
	}
	for t, g := range groups {
		w.shown[g] = shownRow(keep, nOld, nOld+t)
	}
	s.snapshot(gb, nOld, groups)
	return res, nil
}

// multiAck settles the source batches one delivered batch of changes
// reflects.
type multiAck []flow.Acker

func (m multiAck) Mark(int, flow.Disposition) {}

func (m multiAck) Done() {
	for _, a := range m {
		a.Done()
	}
}

func (m multiAck) Abandon() {
	for _, a := range m {
		a.Abandon()
	}
}

// windowDeadline bounds a wait by the window's next timer; a wait it ends
// has errTick as its context's cause.
func (r *Rows) windowDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if r.win == nil {
		return ctx, func() {}
	}
	at := r.wake()
	if at.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadlineCause(ctx, at, errTick)
}
