package query

// This file runs an interval join (planned in interval.go): the rows of
// two streams whose keys are equal and whose event times are within a
// bound of each other, as Flink's interval join makes them.
//
// Each side's rows are kept, by key, until the other side's watermark
// passes the last time a row of that side could still match them; a row
// of either side is joined with the other side's kept rows when it
// arrives, so each pair is made once, by the later of its two rows. The
// kept rows are in the query's State (a state directory), written before
// the batch that brought them is handed on: a record is accepted once its
// row is stored and the pairs it made are delivered, so a query started
// again on the state meets the rows of records accepted long ago. A
// record that comes again (its process died before its accept reached the
// broker) is joined again and stored under the same key: its pairs may be
// delivered twice, never lost (at-least-once).
//
// An outer side's row that met no row of the other side by the time it
// leaves is handed on with NULLs for the other side's columns; it is
// deleted from the State only once that row was delivered (Done), so that
// a crash in between hands it on again rather than never.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
)

// JoinState is a State that an interval join keeps its rows in: Put
// stores keys[i] = values[i] (a nil value deletes the key) in one write,
// durable when it returns, next to the groups Commit stores (and read back
// by Groups), and records no records; it commits nothing else the State
// ties to its commits (a sink's transaction). Package state's Store is
// one.
type JoinState interface {
	State
	Put(keys, values [][]byte) error
}

// intervalJoin is the source of an interval join's rows: each batch the
// left's columns (its source columns), then the right's.
type intervalJoin struct {
	names [2]string // the tables, for messages
	in    [2]flow.Source
	// keys are the positions of each side's key columns in its batches,
	// in the order of the ON's equalities; times those of the sides'
	// event times (their WATERMARK columns), delay the WATERMARKs' delays.
	keys  [2][]int
	times [2]int
	delay [2]time.Duration
	// A pair's right time less its left time is within [lower, upper] (ms).
	lower, upper int64
	// outer[s] keeps side s's rows that meet none (LEFT: the left side,
	// RIGHT: the right, FULL: both), with NULLs for the other side.
	outer [2]bool
	// residual, for an outer join, says which pairs (the left's columns,
	// then the right's) meet the ON's conditions other than the keys and
	// times; nil: every pair within the bound does.
	residual func(memory.Allocator, arrow.RecordBatch) ([]bool, error)
	// fields are the joined batches' columns.
	fields []arrow.Field
}

// errJoinNeedsState says that an interval join runs with a state directory.
var errJoinNeedsState = errors.New("an interval join keeps the rows of both sides until the watermarks pass them, so that their records can be accepted before the rows leave; " +
	"it runs as a job with a state directory: INSERT INTO a sink with SET 'state-dir' = '/var/lib/kshare' (or kshare run --state-dir DIR)")

// Open refuses: an interval join is opened by Run, with the query's State.
func (j *intervalJoin) Open(context.Context, flow.OpenOptions) (flow.Stream, error) {
	return nil, fmt.Errorf("%w: %w", ErrState, errJoinNeedsState)
}

// joinVersion is the first byte of a kept row's stored value, told apart
// from a group's (groupVersion) and the watermark's (marksVersion).
const joinVersion = 0x81

// joinKeyPrefix starts a kept row's key in the State: a group's key starts
// with 0 or 1, the watermark's with 0xff 'w'.
var joinKeyPrefix = []byte{0xff, 'j'}

// kept is a row one side keeps.
type kept struct {
	rec     arrow.RecordBatch // the row: the side's columns
	t       int64             // its event time (ms)
	matched bool              // it met a row of the other side
	origin  flow.Origin
	key     []byte // in the State
	val     []byte // in the State; val[joinFlagAt] says matched
}

// joinFlagAt is where the matched flag is in a kept row's value.
const joinFlagAt = 2

// sideBatch is a batch of one side, or its stream's error.
type sideBatch struct {
	side int
	b    flow.Batch
	err  error
}

// joinStream is an open interval join.
type joinStream struct {
	j      *intervalJoin
	st     JoinState
	mem    memory.Allocator
	log    *slog.Logger
	in     [2]flow.Stream
	schema *arrow.Schema
	side   [2]*arrow.Schema // each side's batches'
	marks  [2]*watermarks
	rows   [2]map[string][]*kept
	ended  [2]bool
	eof    bool

	batches chan sideBatch
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// mu guards gone: the keys of rows that left with their NULLs, whose
	// batch was delivered, to delete at the next write.
	mu   sync.Mutex
	gone [][]byte

	// late is how long past the other side's watermark a row is kept
	// (ms): Options.AllowedLateness, so that a record delivered again
	// later still meets the rows it would have met.
	late int64
	// beyond counts the rows later than their side's watermark by more
	// than that, which the rows they could meet may have left.
	beyond int64

	slots []int32
	times []int64
	kbuf  []byte
	enc   [2]flow.RowEncoder // each side's kept rows, for the State
}

// open opens both sides and reads the rows st keeps back.
func (j *intervalJoin) open(ctx context.Context, o flow.OpenOptions, st JoinState, idle time.Duration, late int64) (flow.Stream, error) {
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Limit = 0 // a row may meet none: the rows needed say nothing of the records
	s := &joinStream{j: j, st: st, mem: o.Alloc, log: o.Logger, schema: arrow.NewSchema(j.fields, nil), batches: make(chan sideBatch), late: late}
	now := time.Now()
	for k := range 2 {
		s.rows[k] = map[string][]*kept{}
		s.marks[k] = newWatermarks(j.delay[k], idle, now)
	}
	if err := s.restore(); err != nil {
		s.release()
		return nil, err
	}
	for k := range 2 {
		in, err := j.in[k].Open(ctx, o)
		if err != nil {
			s.closeInputs()
			s.release()
			return nil, tableError("open", j.names[k], err)
		}
		s.in[k] = in
		s.side[k] = in.Schema()
		if p, ok := in.(flow.Partitioned); ok {
			s.marks[k].name(p.Partitions(), now)
		}
	}
	if want := len(s.side[0].Fields()) + len(s.side[1].Fields()); want != len(j.fields) {
		s.closeInputs()
		s.release()
		return nil, fmt.Errorf("interval join of '%s' and '%s': the sides' batches have %d columns, the join %d", options.Cut(j.names[0]), options.Cut(j.names[1]), want, len(j.fields))
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(2)
	go s.read(rctx, 0)
	go s.read(rctx, 1)
	return s, nil
}

// read hands side's batches to Next until its stream ends or the join
// closes; a batch nobody took goes back.
func (s *joinStream) read(ctx context.Context, side int) {
	defer s.wg.Done()
	for {
		b, err := s.in[side].Next(ctx)
		select {
		case s.batches <- sideBatch{side: side, b: b, err: err}:
		case <-ctx.Done():
			if err == nil {
				b.Ack.Abandon()
				b.Record.Release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

func (s *joinStream) Schema() *arrow.Schema { return s.schema }

// Stats adds up both sides'.
func (s *joinStream) Stats() flow.Stats {
	var out flow.Stats
	for _, in := range s.in {
		st := in.Stats()
		out.Add(st)
		out.AckUnconfirmed += st.AckUnconfirmed
		out.Consumers = append(out.Consumers, st.Consumers...)
		if !st.Unreachable.IsZero() && (out.Unreachable.IsZero() || st.Unreachable.Before(out.Unreachable)) {
			out.Unreachable, out.Brokers = st.Unreachable, st.Brokers
		}
	}
	return out
}

func (s *joinStream) StopFetching() {
	for _, in := range s.in {
		if fs, ok := in.(flow.FetchStopper); ok {
			fs.StopFetching()
		}
	}
}

func (s *joinStream) Close() error {
	s.cancel()
	s.wg.Wait()
	err := s.closeInputs()
	// The rows that left with their NULLs and were delivered since the
	// last write go now, else a query started again would hand them on
	// again.
	if perr := s.put(nil, nil); perr != nil {
		s.log.Warn("interval join: rows delivered with NULLs stay in the state and will be handed on again", "err", perr)
	}
	if s.beyond > 1 {
		s.log.Warn("interval join: rows came later than their side's watermark less 'window.allowed-lateness' and may have missed rows of the other side", "rows", s.beyond)
	}
	s.release()
	return err
}

func (s *joinStream) closeInputs() error {
	var errs []error
	for k, in := range s.in {
		if in != nil {
			if err := in.Close(); err != nil {
				errs = append(errs, tableError("close", s.j.names[k], err))
			}
		}
	}
	return errors.Join(errs...)
}

// release frees the rows kept in memory; the State keeps them.
func (s *joinStream) release() {
	for k := range 2 {
		for _, ks := range s.rows[k] {
			for _, r := range ks {
				r.rec.Release()
			}
		}
		s.rows[k] = nil
	}
}

// tick is how often the join looks again at what the watermarks let
// leave while a side is idle and its watermark moves with processing time.
const joinTick = time.Second

// Next joins the next batch of either side. Rows that leave with their
// NULLs once the watermarks pass them come in the batch that moved the
// watermark, or in a batch of their own when only time moved it.
func (s *joinStream) Next(ctx context.Context) (flow.Batch, error) {
	for {
		if s.eof {
			return flow.Batch{}, io.EOF
		}
		b, ok, err := s.wait(ctx)
		if err != nil || ok {
			return b, err
		}
	}
}

// wait waits for a batch of either side, or for the watermarks to let rows
// leave; ok is false when neither came of it.
func (s *joinStream) wait(ctx context.Context) (flow.Batch, bool, error) {
	now := time.Now()
	var wake <-chan time.Time
	if at := s.wakeAt(now); !at.IsZero() {
		t := time.NewTimer(at.Sub(now))
		defer t.Stop()
		wake = t.C
	}
	select {
	case <-ctx.Done():
		return flow.Batch{}, false, ctx.Err()
	case sb := <-s.batches:
		switch {
		case errors.Is(sb.err, io.EOF):
			s.ended[sb.side] = true
			if !s.ended[0] || !s.ended[1] {
				return flow.Batch{}, false, nil
			}
			// Both ended: every kept row's time has passed.
			s.eof = true
			return s.leave(math.MaxInt64, math.MaxInt64)
		case sb.err != nil:
			return flow.Batch{}, false, tableError("read", s.j.names[sb.side], sb.err)
		}
		b, err := s.join(sb.side, sb.b)
		if err != nil {
			sb.b.Ack.Abandon()
			return flow.Batch{}, false, err
		}
		return b, true, nil
	case <-wake:
		now := time.Now()
		return s.leave(s.marks[0].advance(now), s.marks[1].advance(now))
	}
}

// wakeAt is when Next looks at the watermarks again without a batch: when
// a partition goes idle, or while a side is all idle and rows are kept.
func (s *joinStream) wakeAt(now time.Time) time.Time {
	var at time.Time
	kept := len(s.rows[0]) > 0 || len(s.rows[1]) > 0
	for k := range 2 {
		t := s.marks[k].nextIdle(now)
		if kept && s.marks[k].allIdle(now) {
			t = now.Add(joinTick)
		}
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// outRow is a row of a joined batch: its left and right parts, each a row
// of a batch (nil: NULLs).
type outRow struct {
	l, r   arrow.RecordBatch
	li, ri int
}

// join joins a batch of side with the other side's kept rows, keeps its
// rows that may still meet some, stores what changed and returns the
// pairs (then the rows that left with NULLs).
func (s *joinStream) join(side int, b flow.Batch) (flow.Batch, error) {
	defer b.Record.Release()
	j, other := s.j, 1-side
	rec := b.Record
	n := int(rec.NumRows())
	now := time.Now()
	if b.Kinds != nil {
		return flow.Batch{}, fmt.Errorf("interval join: table '%s' is a changelog; an interval join takes tables of inserts", options.Cut(j.names[side]))
	}
	ro, tells := b.Ack.(flow.RowOrigins)
	if !tells && n > 0 {
		return flow.Batch{}, fmt.Errorf("%w: interval join: table '%s' does not tell the records of its rows, which the join keeps its rows by", ErrState, options.Cut(j.names[side]))
	}
	s.slots = s.marks[side].rowSlots(b.Ack, n, now, s.slots)
	s.times = eventTimes(rec.Column(j.times[side]), s.times)
	keyCols := make([]arrow.Array, len(j.keys[side]))
	for k, c := range j.keys[side] {
		keyCols[k] = rec.Column(c)
	}
	// A row later than its side's watermark by more than the lateness
	// may have missed rows of the other side, which that watermark let
	// go: the table's policy for rows a query cannot use settles it
	// ('scan.on-eval-error': to the dead-letter topic, say) if it has
	// one; else it meets the rows still kept, and is counted.
	skip := s.beyondRows(side, b.Ack, n)
	// The pairs each row makes with the other side's kept rows.
	var cand []outRow
	var candOf []int // the batch's row of each candidate
	var candKept []*kept
	keys := make([]string, n)
	valid := make([]bool, n)
	for i := range n {
		t := s.times[i]
		var ok bool
		s.kbuf, ok = flow.AppendKey(s.kbuf[:0], keyCols, i)
		if !ok || t == math.MinInt64 || skip[i] {
			continue // a NULL key or time meets nothing
		}
		valid[i], keys[i] = true, string(s.kbuf)
		for _, k := range s.rows[other][keys[i]] {
			d := k.t - t // the right's time less the left's
			if side == 1 {
				d = t - k.t
			}
			if d < j.lower || d > j.upper {
				continue
			}
			o := outRow{l: rec, li: i, r: k.rec}
			if side == 1 {
				o = outRow{l: k.rec, r: rec, ri: i}
			}
			cand, candOf, candKept = append(cand, o), append(candOf, i), append(candKept, k)
		}
	}
	if j.residual != nil && len(cand) > 0 {
		// An outer join's other conditions say which pairs count.
		pairs, err := s.build(cand)
		if err != nil {
			return flow.Batch{}, err
		}
		meets, err := j.residual(s.mem, pairs)
		pairs.Release()
		if err != nil {
			return flow.Batch{}, fmt.Errorf("interval join: the ON's conditions: %w", err)
		}
		var keep []int
		for i, ok := range meets {
			if ok {
				keep = append(keep, i)
			}
		}
		cand, candOf, candKept = pick(cand, keep), pick(candOf, keep), pick(candKept, keep)
	}

	// What changes in the State: the rows kept, the kept rows that met
	// their first row, the rows that left.
	var puts, vals [][]byte
	matched := make([]bool, n)
	for k, i := range candOf {
		matched[i] = true
		if r := candKept[k]; !r.matched {
			r.matched = true
			if j.outer[other] {
				r.val[joinFlagAt] = 1
				puts, vals = append(puts, r.key), append(vals, r.val)
			}
		}
	}
	// A row stays while rows of the other side may still come that it
	// meets: rows of times at or past the other side's watermark.
	owm := s.marks[other].wm
	var out []outRow
	var from []int
	ci := 0
	var prev flow.Origin
	ordinal := 0
	for i := range n {
		for ; ci < len(cand) && candOf[ci] == i; ci++ {
			out, from = append(out, cand[ci]), append(from, i)
		}
		var origin flow.Origin
		if tells {
			origin, _ = ro.RowOrigin(i)
		}
		if i > 0 && origin.Topic == prev.Topic && origin.Partition == prev.Partition && origin.Offset == prev.Offset {
			ordinal++
		} else {
			ordinal = 0
		}
		prev = origin
		if skip[i] {
			continue
		}
		if !valid[i] || s.gone1(side, s.times[i], owm) {
			if j.outer[side] && !matched[i] {
				out, from = append(out, s.alone(side, rec, i)), append(from, i)
			}
			continue
		}
		r, err := s.keep(side, rec, i, s.times[i], matched[i], origin, ordinal, keys[i])
		if err != nil {
			return flow.Batch{}, err
		}
		puts, vals = append(puts, r.key), append(vals, r.val)
	}
	s.marks[side].observe(s.slots, s.times, now)
	s.marks[side].advance(now)
	s.marks[other].advance(now)
	left, dropped := s.expire()
	// res holds what it needs of the rows that left.
	defer releaseKept(dropped)
	defer releaseKept(left)
	puts, vals = append(puts, stateKeys(dropped)...), append(vals, make([][]byte, len(dropped))...)
	if err := s.put(puts, vals); err != nil {
		return flow.Batch{}, err
	}
	for _, r := range left {
		out = append(out, s.alone(r.side, r.k.rec, 0))
	}
	res, err := s.build(out)
	if err != nil {
		return flow.Batch{}, err
	}
	ack := &joinAck{in: flow.MapAck(b.Ack, from), n: len(from), s: s, left: left}
	return flow.Batch{Record: res, Ack: ack}, nil
}

// beyondRows finds the rows of a batch of side (its times in s.times)
// later than the side's watermark by more than the lateness, and settles
// them by the table's policy if it has one: those it settled are true.
func (s *joinStream) beyondRows(side int, ack flow.Acker, n int) []bool {
	skip := make([]bool, n)
	wm := s.marks[side].wm
	if wm == math.MinInt64 {
		return skip
	}
	rf, fails := ack.(flow.RowFailer)
	fails = fails && rf.FailsRows()
	for i, t := range s.times {
		if t == math.MinInt64 || t+s.late >= wm || skip[i] {
			continue
		}
		if !fails {
			if s.beyond++; s.beyond == 1 {
				s.log.Warn("interval join: a row came later than its side's watermark less 'window.allowed-lateness'; it meets the rows of the other side still kept, and may miss some that left (set 'scan.on-eval-error' on the table to send such rows to a dead-letter topic instead, or raise the lateness)",
					"table", s.j.names[side], "time", millisText(t), "watermark", millisText(wm))
			}
			continue
		}
		err := fmt.Errorf("%w: its event time %s is later than the watermark of '%s' (%s) less 'window.allowed-lateness': the rows of '%s' it could meet may have left the join",
			ErrLate, millisText(t), options.Cut(s.j.names[side]), millisText(wm), options.Cut(s.j.names[1-side]))
		from, to := rf.FailRow(i, err)
		for k := max(from, 0); k < min(to, n); k++ {
			skip[k] = true
		}
	}
	return skip
}

// pick is xs at keep.
func pick[T any](xs []T, keep []int) []T {
	out := make([]T, len(keep))
	for i, k := range keep {
		out[i] = xs[k]
	}
	return out
}

// gone1 reports whether a row of side at time t can meet no row of the
// other side that is still to come, whose watermark is owm.
func (s *joinStream) gone1(side int, t, owm int64) bool {
	if owm == math.MinInt64 {
		return false
	}
	if side == 0 {
		// The right rows it meets are at t+lower .. t+upper.
		return t+s.j.upper+s.late < owm
	}
	// The left rows it meets are at t-upper .. t-lower.
	return t-s.j.lower+s.late < owm
}

// leaving is a kept row that left, of side.
type leaving struct {
	side int
	k    *kept
}

func releaseKept(ls []leaving) {
	for _, l := range ls {
		l.k.rec.Release()
	}
}

// expire takes the rows the watermarks passed out of the sides: those to
// hand on with NULLs (an outer side's that met none), and the others,
// whose State keys go now. The caller releases both's rows once it made
// its batch (which may hold pairs of them).
func (s *joinStream) expire() (left []leaving, dropped []leaving) {
	for side := range 2 {
		owm := s.marks[1-side].wm
		if owm == math.MinInt64 {
			continue
		}
		for key, ks := range s.rows[side] {
			stay := ks[:0]
			for _, r := range ks {
				if !s.gone1(side, r.t, owm) {
					stay = append(stay, r)
					continue
				}
				if s.j.outer[side] && !r.matched {
					left = append(left, leaving{side, r})
					continue
				}
				dropped = append(dropped, leaving{side, r})
			}
			if len(stay) == 0 {
				delete(s.rows[side], key)
			} else {
				clear(ks[len(stay):])
				s.rows[side][key] = stay
			}
		}
	}
	// In time order, as a reader would expect them.
	slices.SortFunc(left, func(a, b leaving) int { return cmp.Compare(a.k.t, b.k.t) })
	return left, dropped
}

// stateKeys are the State keys of ls's rows.
func stateKeys(ls []leaving) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = l.k.key
	}
	return out
}

// leave hands on the rows the watermarks wl and wr let leave when no
// batch came; ok is false when none did.
func (s *joinStream) leave(wl, wr int64) (flow.Batch, bool, error) {
	s.marks[0].wm, s.marks[1].wm = max(s.marks[0].wm, wl), max(s.marks[1].wm, wr)
	left, dropped := s.expire()
	defer releaseKept(dropped)
	defer releaseKept(left)
	if err := s.put(stateKeys(dropped), make([][]byte, len(dropped))); err != nil {
		return flow.Batch{}, false, err
	}
	if len(left) == 0 {
		return flow.Batch{}, false, nil
	}
	out := make([]outRow, len(left))
	for i, r := range left {
		out[i] = s.alone(r.side, r.k.rec, 0)
	}
	res, err := s.build(out)
	if err != nil {
		return flow.Batch{}, false, err
	}
	return flow.Batch{Record: res, Ack: &joinAck{in: flow.NoAck{}, s: s, left: left}}, true, nil
}

// alone is row i of side's batch rec with NULLs for the other side.
func (s *joinStream) alone(side int, rec arrow.RecordBatch, i int) outRow {
	if side == 0 {
		return outRow{l: rec, li: i}
	}
	return outRow{r: rec, ri: i}
}

// put writes what changed, with the keys of the rows that left with their
// NULLs since the last write and were delivered.
func (s *joinStream) put(keys, values [][]byte) error {
	s.mu.Lock()
	gone := s.gone
	s.gone = nil
	s.mu.Unlock()
	keys, values = append(keys, gone...), append(values, make([][]byte, len(gone))...)
	if len(keys) == 0 {
		return nil
	}
	if err := s.st.Put(keys, values); err != nil {
		s.mu.Lock()
		s.gone = append(gone, s.gone...)
		s.mu.Unlock()
		return fmt.Errorf("%w: storing the rows of an interval join: %w", ErrState, err)
	}
	return nil
}

// keep keeps row i of side's batch rec, as the State will hold it.
func (s *joinStream) keep(side int, rec arrow.RecordBatch, i int, t int64, matched bool, origin flow.Origin, ordinal int, key string) (*kept, error) {
	skey := appendJoinKey(nil, side, origin, ordinal)
	if old := s.find(side, key, skey); old != nil {
		// Its record came again: the row kept stays, as met as it was.
		old.matched = old.matched || matched
		if old.matched {
			old.val[joinFlagAt] = 1
		}
		return old, nil
	}
	row := rec.NewSlice(int64(i), int64(i)+1)
	r := &kept{rec: row, t: t, matched: matched, origin: origin, key: skey}
	val, err := appendJoinValue(nil, side, r, &s.enc[side])
	if err != nil {
		row.Release()
		return nil, fmt.Errorf("%w: interval join: storing a row of '%s': %w", ErrState, options.Cut(s.j.names[side]), err)
	}
	r.val = val
	s.rows[side][key] = append(s.rows[side][key], r)
	return r, nil
}

// find is the row side keeps under State key skey, among those of join
// key key; nil if none.
func (s *joinStream) find(side int, key string, skey []byte) *kept {
	for _, r := range s.rows[side][key] {
		if bytes.Equal(r.key, skey) {
			return r
		}
	}
	return nil
}

// appendJoinKey is the State's key of a kept row: the side, then its
// record's topic, partition and offset and its place among the record's
// rows.
func appendJoinKey(b []byte, side int, o flow.Origin, ordinal int) []byte {
	b = append(b, joinKeyPrefix...)
	b = append(b, byte(side))
	b = binary.AppendUvarint(b, uint64(len(o.Topic)))
	b = append(b, o.Topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(o.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(o.Offset))
	return binary.AppendUvarint(b, uint64(ordinal))
}

// appendJoinValue is the State's value of a kept row: joinVersion, the
// side, the matched flag, the State key, the event time, the record's
// group, topic, partition and offset, and the row as an Arrow IPC stream.
func appendJoinValue(b []byte, side int, r *kept, enc *flow.RowEncoder) ([]byte, error) {
	flag := byte(0)
	if r.matched {
		flag = 1
	}
	b = append(b, joinVersion, byte(side), flag)
	b = binary.AppendUvarint(b, uint64(len(r.key)))
	b = append(b, r.key...)
	b = binary.AppendVarint(b, r.t)
	for _, s := range []string{r.origin.Group, r.origin.Topic} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, int64(r.origin.Partition))
	b = binary.AppendVarint(b, r.origin.Offset)
	return enc.Append(b, r.rec)
}

// errShortRow says a kept row's stored value ends early.
var errShortRow = errors.New("stored row of an interval join ends early")

// readJoinValue reads what appendJoinValue wrote.
func readJoinValue(v []byte, mem memory.Allocator) (side int, r *kept, err error) {
	if len(v) < 3 || v[0] != joinVersion || v[1] > 1 {
		return 0, nil, errShortRow
	}
	side = int(v[1])
	r = &kept{matched: v[joinFlagAt] == 1, val: slices.Clone(v)}
	rest := v[3:]
	var key []byte
	if key, rest, err = readBytes(rest); err != nil {
		return 0, nil, err
	}
	r.key = slices.Clone(key)
	var k int
	if r.t, k = binary.Varint(rest); k <= 0 {
		return 0, nil, errShortRow
	}
	rest = rest[k:]
	var group, topic []byte
	if group, rest, err = readBytes(rest); err != nil {
		return 0, nil, err
	}
	if topic, rest, err = readBytes(rest); err != nil {
		return 0, nil, err
	}
	p, k := binary.Varint(rest)
	if k <= 0 {
		return 0, nil, errShortRow
	}
	rest = rest[k:]
	off, k := binary.Varint(rest)
	if k <= 0 {
		return 0, nil, errShortRow
	}
	rest = rest[k:]
	r.origin = flow.Origin{Group: string(group), Topic: string(topic), Partition: int32(p), Offset: off}
	if r.rec, err = flow.ReadRows(rest, mem); err != nil {
		return 0, nil, err
	}
	if r.rec.NumRows() != 1 {
		r.rec.Release()
		return 0, nil, fmt.Errorf("stored row of an interval join holds %d rows", r.rec.NumRows())
	}
	return side, r, nil
}

// restore reads the rows the State keeps back.
func (s *joinStream) restore() error {
	n := 0
	err := s.st.Groups(func(_, v []byte) error {
		if len(v) == 0 || v[0] != joinVersion {
			return nil
		}
		side, r, err := readJoinValue(v, s.mem)
		if err != nil {
			return err
		}
		keyCols := make([]arrow.Array, len(s.j.keys[side]))
		for k, c := range s.j.keys[side] {
			if c >= int(r.rec.NumCols()) {
				r.rec.Release()
				return fmt.Errorf("a stored row of '%s' has %d columns", options.Cut(s.j.names[side]), r.rec.NumCols())
			}
			keyCols[k] = r.rec.Column(c)
		}
		key, ok := flow.AppendKey(nil, keyCols, 0)
		if !ok {
			r.rec.Release()
			return errShortRow
		}
		s.rows[side][string(key)] = append(s.rows[side][string(key)], r)
		n++
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: reading the rows of an interval join back (%d read): %w", ErrState, n, err)
	}
	return nil
}

// build makes a joined batch of rows.
func (s *joinStream) build(rows []outRow) (arrow.RecordBatch, error) {
	nl := len(s.side[0].Fields())
	cols := make([]arrow.Array, 0, len(s.j.fields))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for c, f := range s.j.fields {
		part := func(o outRow) (arrow.RecordBatch, int, int) {
			if c < nl {
				return o.l, o.li, c
			}
			return o.r, o.ri, c - nl
		}
		a, err := gatherColumn(s.mem, f.Type, rows, part)
		if err != nil {
			return nil, fmt.Errorf("interval join: column '%s': %w", f.Name, err)
		}
		cols = append(cols, a)
	}
	rec := array.NewRecordBatch(s.schema, cols, int64(len(rows)))
	return rec, nil
}

// gatherColumn is one column of rows, each row's value found by part (its
// batch, row and column; a nil batch for NULL), made of runs of
// consecutive rows of one batch.
func gatherColumn(mem memory.Allocator, typ arrow.DataType, rows []outRow, part func(outRow) (arrow.RecordBatch, int, int)) (arrow.Array, error) {
	if len(rows) == 0 {
		return array.MakeArrayOfNull(mem, typ, 0), nil
	}
	var pieces []arrow.Array
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	for i := 0; i < len(rows); {
		rec, at, col := part(rows[i])
		k := i + 1
		for ; k < len(rows); k++ {
			r2, at2, _ := part(rows[k])
			if r2 != rec || (rec != nil && at2 != at+(k-i)) {
				break
			}
		}
		if rec == nil {
			pieces = append(pieces, array.MakeArrayOfNull(mem, typ, k-i))
		} else {
			pieces = append(pieces, array.NewSlice(rec.Column(col), int64(at), int64(at+k-i)))
		}
		i = k
	}
	if len(pieces) == 1 {
		pieces[0].Retain()
		return pieces[0], nil
	}
	return array.Concatenate(pieces, mem)
}

// eventTimes are col's values in ms (math.MinInt64 for NULL), into buf.
func eventTimes(col arrow.Array, buf []int64) []int64 {
	buf = buf[:0]
	ts, ok := col.(*array.Timestamp)
	if !ok {
		for range col.Len() {
			buf = append(buf, math.MinInt64)
		}
		return buf
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	for i := range ts.Len() {
		if ts.IsNull(i) {
			buf = append(buf, math.MinInt64)
			continue
		}
		buf = append(buf, toMillis(int64(ts.Value(i)), unit))
	}
	return buf
}

// joinAck settles a joined batch: its first n rows are pairs and rows of
// the batch that came (their records settled as MapAck says), the rest
// rows that left with NULLs, whose records were settled long ago: once
// they are delivered, their State keys go at the next write.
type joinAck struct {
	in   flow.Acker
	n    int
	s    *joinStream
	left []leaving
	// kept are the rows of left marked Release: not delivered, so they
	// stay in the State (a query started again hands them on).
	kept map[int]bool
	once sync.Once
}

var (
	_ flow.RowOrigins = (*joinAck)(nil)
	_ flow.RowFailer  = (*joinAck)(nil)
)

func (a *joinAck) Mark(row int, d flow.Disposition) {
	switch {
	case row < a.n:
		a.in.Mark(row, d)
	case d == flow.Release:
		if a.kept == nil {
			a.kept = map[int]bool{}
		}
		a.kept[row-a.n] = true
	}
}

func (a *joinAck) Done() {
	a.in.Done()
	a.once.Do(func() {
		a.s.mu.Lock()
		for i, l := range a.left {
			if !a.kept[i] {
				a.s.gone = append(a.s.gone, l.k.key)
			}
		}
		a.s.mu.Unlock()
	})
}

func (a *joinAck) Abandon() {
	// Rows that left with NULLs and were not delivered stay in the
	// State: a query started again on it hands them on.
	a.in.Abandon()
}

func (a *joinAck) FailsRows() bool {
	rf, ok := a.in.(flow.RowFailer)
	return ok && rf.FailsRows()
}

func (a *joinAck) FailRow(row int, err error) (from, to int) {
	rf, ok := a.in.(flow.RowFailer)
	if !ok || row >= a.n {
		return row, row + 1
	}
	return rf.FailRow(row, err)
}

func (a *joinAck) RowOrigin(row int) (flow.Origin, bool) {
	if row >= a.n {
		if k := row - a.n; k < len(a.left) {
			return a.left[k].k.origin, true
		}
		return flow.Origin{}, false
	}
	ro, ok := a.in.(flow.RowOrigins)
	if !ok {
		return flow.Origin{}, false
	}
	return ro.RowOrigin(row)
}
