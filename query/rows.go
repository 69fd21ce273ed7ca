package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Options are a run's settings.
type Options struct {
	// Applied, when set, is asked about the records of an aggregate
	// query's source rows that were delivered more than once: those it
	// reports applied already (their effect is in the destination, see
	// flow.MergeWriter) are left out of the groups, and accepted.
	Applied func(ctx context.Context, records []flow.Origin) ([]bool, error)
	// State, when set, keeps an aggregate query's groups (GROUP BY, not
	// a window): Run reads back the groups it holds, each batch's groups
	// and records are stored in it before the records are accepted, and
	// it answers for Applied when Applied is not set (see State).
	State State
	// GroupsInMemory, for a GROUP BY whose groups State keeps, bounds
	// the groups held in memory: once a stored batch leaves more, those
	// touched longest ago are let go, and a row of a group not in memory
	// reads it back from State (State.Group). The groups held are then
	// bounded by disk, not memory. 0 means DefaultGroupsInMemory; a
	// negative value keeps every group in memory. A window aggregation's
	// groups go once their window's row is out, and are all held.
	GroupsInMemory int
	// CheckpointInterval, for a query with a State, lets the batches the
	// caller moves past be stored and accepted together, in epochs of at
	// most this long (see epoch.go): an epoch ends sooner when the source
	// waits for the query to settle what it holds, or no batch comes for
	// HoldLinger. 0 stores and accepts each batch on its own.
	CheckpointInterval time.Duration
	// MaxRows ends the query after that many result rows, as LIMIT does
	// (the smaller of the two wins); 0 means no bound. The shell's
	// 'max-rows' setting.
	MaxRows int64
	// IdleTimeout ends the query, without an error, when no record arrives
	// for that long while the query waits for one; 0 means wait until
	// cancelled. Any source batch counts as an arrival, even one whose rows
	// WHERE filters out. The first wait is counted from Run, so it includes
	// joining the share group, which takes a few seconds on a real broker:
	// choose a timeout longer than that. The shell's 'idle-timeout' setting.
	IdleTimeout time.Duration
	// Alloc allocates the source's and the result's batches; nil means
	// memory.DefaultAllocator.
	Alloc memory.Allocator
	// BatchSize bounds the rows of a source batch, and so of a result
	// batch; 0 means the source's default.
	BatchSize int
	// Logger receives the source's warnings; nil means slog.Default().
	Logger *slog.Logger
	// EarlyFire, for a window aggregation, emits the running result of
	// the open windows with records not yet reflected by a delivered row
	// at most this long after such a record arrived, as updates (Flink's
	// table.exec.emit.early-fire.delay); 0 emits a window's row when it
	// closes, or when MaxHeld says so.
	EarlyFire time.Duration
	// MaxHeld, for a window aggregation, emits the running result of
	// every window with unreflected records once the records held for
	// them (locked, neither accepted nor released) reach this many, so
	// that they stay under the broker's cap of locked records per
	// partition; 0 means DefaultMaxHeld.
	MaxHeld int64
	// SourceIdleTimeout, for an event-time window aggregation, is how long
	// a partition may deliver no record before it stops holding the
	// watermark back (Flink's table.exec.source.idle-timeout): the
	// watermark is kept per partition (see "Windows" in the package
	// documentation). Once every partition is idle, the watermark moves
	// on with processing time, so that the open windows close. 0 means
	// DefaultSourceIdleTimeout; a negative value never does either, and a
	// partition named by the stream then holds the watermark back until
	// it delivers.
	SourceIdleTimeout time.Duration
	// HoldLinger, for a window aggregation, emits the running result of
	// every window with held records once no batch came for this long: a
	// source that fetches no more until what it handed out is settled
	// (kafka-sharegroup polls again only then) would otherwise wait for
	// the query while the query waits for records. 0 means
	// DefaultHoldLinger; a negative value never does (for tests of the
	// other timers). A stream that says when it waits for its reader
	// (flow.ReaderWaiter) has the results emitted as soon as it does,
	// without the wait; a negative value turns that off too.
	HoldLinger time.Duration
	// AllowedLateness, for a window aggregation, is how long after a
	// window's end (how far the watermark passed it; for processing time,
	// the clock) the window's state is kept, so that a late record updates its
	// row (-U, +U). After that its groups are dropped: the state held
	// grows with the keys and the windows open or within this lateness,
	// not with every window seen. A record for a dropped window updates
	// nothing there (it never starts a second row for the window): when
	// none of its windows is kept it is accepted unapplied, and
	// Stats.BeyondLateness counts it.
	// 0 means DefaultAllowedLateness; a negative value drops a window's
	// state as soon as its row is final (Flink's
	// table.exec.emit.allow-lateness of 0).
	AllowedLateness time.Duration
	// AcceptFolded, for a window aggregation over a source that takes
	// records (kafka-sharegroup), accepts each source batch once it is
	// folded into the windows' state (with the rows it makes emit now,
	// when the caller moves past them), instead of holding its records
	// locked until a delivered row reflects them. The state in memory is
	// then the query's checkpoint, taken after every batch: nothing is
	// held, so a window need not emit early to stay under the broker's
	// cap of locked records, and each window's row comes once, when the
	// watermark passes its end (earlier only with EarlyFire); MaxHeld and
	// HoldLinger do not apply. The price: what the open windows counted
	// is lost when the query ends before their rows come (a Ctrl-C, a
	// crash), since their records are accepted already; Stats.Folded
	// counts them. The shell and the Go API's queries set it; a pipeline
	// and kshare export do not, so that their sink (or file) holds the
	// effect of every record they accept.
	AcceptFolded bool
}

// EndReason says why a query ended.
type EndReason int

const (
	// Running: the query has not ended.
	Running EndReason = iota
	// EndLimit: LIMIT rows were delivered.
	EndLimit
	// EndMaxRows: Options.MaxRows rows were delivered.
	EndMaxRows
	// EndIdle: no record arrived for Options.IdleTimeout.
	EndIdle
	// EndEOF: a bounded source had no more records.
	EndEOF
	// EndCancelled: the context given to Run ended; Err returns its error.
	EndCancelled
	// EndError: reading or evaluating failed; Err returns why.
	EndError
	// EndClosed: the caller closed the query before it ended by itself.
	EndClosed
)

// endReasons are the EndReasons' names, in the constants' order.
var endReasons = [...]string{Running: "running", EndLimit: "limit", EndMaxRows: "max-rows", EndIdle: "idle",
	EndEOF: "eof", EndCancelled: "cancelled", EndError: "error", EndClosed: "closed"}

func (r EndReason) String() string {
	if r >= 0 && int(r) < len(endReasons) {
		return endReasons[r]
	}
	return fmt.Sprintf("EndReason(%d)", int(r))
}

// Stats count a query's work.
type Stats struct {
	// Source is the stream's counters (records, acknowledgements, ...),
	// as they stood when the query ended, or now while it runs.
	Source flow.Stats
	// Batches and Rows count the result batches and rows handed out.
	Batches, Rows int64
	// Delivered counts result rows settled as delivered: handed out and
	// neither released nor rejected by the caller.
	Delivered int64
	// Released and Rejected count result rows the caller released or
	// rejected with ReleaseRow and RejectRow.
	Released, Rejected int64
	// Filtered counts source rows WHERE filtered out. Their records are
	// accepted (see Rows): consumed from the share group, not left for
	// another consumer; unless TakesNothing.
	Filtered int64
	// TakesNothing says the table's source is a flow.Looker (a peek, the
	// kafka connector's plain reader): it accepts nothing, filtered
	// records included.
	TakesNothing bool
	// Applied counts the source rows of an aggregate query left out
	// because their records, delivered again, were applied already
	// (Options.Applied); their records are accepted like Filtered's.
	Applied int64
	// Restored counts the groups an aggregate query found in its State
	// when it started (those beyond Options.GroupsInMemory are read back
	// when a row needs them); Committed, the batches it stored there;
	// Groups, the groups the State held at the last of them, in memory or
	// not, and LastCommit when that was and LastCommitTook how long it
	// took. Awaiting counts the records folded since, which the next
	// commit stores (see epoch.go).
	Restored, Committed, Groups int64
	LastCommit                  time.Time
	LastCommitTook              time.Duration
	Awaiting                    int64
	// Unchanged counts the source rows of an aggregate query that changed
	// no result row (a MAX that stayed, a group HAVING hides); their
	// records are accepted like Filtered's.
	Unchanged int64
	// EvalFailed counts source rows left out because they could not be
	// evaluated, their records settled by the table's policy
	// (flow.RowFailer: 'scan.on-eval-error').
	EvalFailed int64
	// Late counts the records of a window aggregation older than the
	// watermark when they arrived: each updated its window's row, unless
	// BeyondLateness counts it too.
	Late int64
	// Folded counts the records of a window aggregation accepted once
	// folded into the windows' state, before a delivered row reflected
	// them (Options.AcceptFolded).
	Folded int64
	// BeyondLateness counts the late records whose every window's state
	// had been dropped (Options.AllowedLateness): each updated nothing
	// and was accepted, as a filtered one is.
	BeyondLateness int64
	// Elapsed is the time since Run, frozen when the query ends.
	Elapsed time.Duration
	// Working is Elapsed without the wait that an idle timeout ended:
	// the time rates are measured over.
	Working time.Duration
}

// errIdle is the cause of a wait's context when the idle timeout ran out.
var errIdle = errors.New("idle timeout")

// Rows is a running query: a sequence of Arrow record batches, read with
// Next and RecordBatch. It implements arrow-go's array.RecordReader, so it
// can be handed to an IPC writer, pqarrow or Flight as it is.
//
// # Settling: what becomes of the records behind the rows
//
// Every result batch comes from one source batch: result row i is source row
// sel[i] (WHERE drops rows, LIMIT cuts the batch; over a window TVF a source
// row gives a row per window it falls in). Moving on settles the batch
// handed out before:
//
//   - Next and Close settle the current batch as delivered: its records are
//     accepted, except the rows the caller released (ReleaseRow, the broker
//     hands the record out again) or rejected (RejectRow, it never does).
//     Rows WHERE filtered out are accepted too: the query has processed them,
//     and releasing them would hand them to the next consumer only to be
//     filtered again.
//   - A source batch in which WHERE keeps no row is settled at once, its
//     records accepted, and never handed out.
//   - When LIMIT (or Options.MaxRows) is reached in the middle of a batch,
//     the result batch is cut there and the source rows after the last
//     delivered one are released. The next Next (or Close) settles that last
//     batch and closes the stream, which releases whatever the source had
//     fetched ahead.
//   - When the query ends by cancel, idle timeout or an error, a source batch
//     that was read but not handed out is abandoned (every record released),
//     and the stream is closed.
//
// So a record is accepted only when its row was handed to the caller and the
// caller moved on, or when WHERE dropped it.
//
// # Aggregates
//
// The rows of a query with GROUP BY or aggregates (Plan.Updating) are
// changes of its result, each with its kind (Op): each source batch is
// folded into the groups and gives one result batch, the changes of the
// groups it touched. Moving past that batch accepts every record of the
// source batch, since the changes reflect them all; a source batch that
// changed no row is accepted at once. When the query ends, the source
// batch behind the current result batch is accepted only if the caller
// moved past it (Next, Close), and every record fetched after it is
// released. A row reflects many records, so ReleaseRow, RejectRow and Hold
// refuse it with ErrUpdating; ReleaseBatch releases the whole source batch
// and ends the query. Options.MaxRows ends the query after the batch of
// changes that reaches it, never in the middle of one. The result covers
// the records this query received; another consumer of the share group
// aggregates the others.
//
// # Ending
//
// Next returns false when the query ends. Err is then nil for LIMIT,
// max-rows, idle timeout and the end of a bounded source, the context's
// error (context.Canceled, say) for a cancel, and the failure otherwise;
// EndReason tells which. A program that writes a file should treat a
// non-nil Err as "incomplete"; a shell may treat context.Canceled (Ctrl-C)
// as a normal end.
//
// Rows is not safe for concurrent use, except Stats and EndReason, which any
// goroutine may call. To stop a Next that is waiting, cancel the context
// given to Run.
type Rows struct {
	// ctx is the query's scope. A stored context is unusual; here it is the
	// lifetime the caller chose for the query when it called Run (as with
	// database/sql's QueryContext), and RecordReader's Next has no
	// context parameter to take it from.
	ctx    context.Context
	plan   *Plan
	opts   Options
	stream flow.Stream
	ec     *expr.EvalCtx
	start  time.Time
	refs   atomic.Int64

	// stopFetching cancels ctx for StopFetching (and at the end, to free
	// it); the stream is opened with the caller's context, not ctx.
	stopFetching context.CancelFunc

	// The batch handed out, if any.
	cur      flow.Acker
	curOut   arrow.RecordBatch
	curSel   []int
	curMarks []flow.Disposition
	curDrop  int64              // rows of the current source batch WHERE dropped, accepted on settling
	curOps   []RowKind          // of an aggregate query: each row's kind of change
	aggMarks []flow.Disposition // of an aggregate query: curMarks' buffer
	selBuf   []int              // of an aggregate query: filter's rows' buffer
	ident    []int              // of a query without WHERE: see identity
	curIn    []int              // of an aggregate query: the source rows folded into the current batch
	applied  int                // of the last source batch folded: rows left out by Options.Applied

	// agg is an aggregate query's groups; nil for other queries.
	agg *aggState
	// saves is what the next Commit to Options.State stores, and
	// stateBuf its buffers; saves is nil without a State.
	saves    *saves
	stateBuf stateWrite
	// epoch is the batches moved past that the State does not hold yet.
	epoch epoch
	// win is a window aggregation's time and held batches; nil for other
	// queries. winRows makes the rows of a window TVF, of an aggregation
	// (win's) or of a query that reads them as they are; nil without one.
	win     *winState
	winRows *windowRows
	// spoiled ends an aggregate query at the next Next: a batch of it was
	// released, and the groups still count its records (see ReleaseBatch).
	spoiled  error
	waited   bool      // a wait has happened: later waits count from their own start
	ticked   bool      // the last wait ended by a window's timer, not a batch
	waitFrom time.Time // when the last wait began

	remaining int64 // rows still allowed; -1: unbounded
	capReason EndReason
	capHit    bool // the last batch handed out reached the bound

	mu      sync.Mutex // guards the fields below, which Stats reads
	end     EndReason
	err     error
	stats   Stats
	final   *flow.Stats
	closed  bool
	closeEr error
	held    int        // batches out with Hold and not settled
	heldC   *sync.Cond // see heldCond
}

var _ array.RecordReader = (*Rows)(nil)

// Run starts p: it opens the table's source and returns the running query.
// ctx bounds the whole query (see Rows): cancelling it ends the query. The
// caller must Close (or Release) the Rows.
func Run(ctx context.Context, p *Plan, o Options) (*Rows, error) {
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	rctx, stopFetching := context.WithCancel(ctx)
	r := &Rows{ctx: rctx, stopFetching: stopFetching, plan: p, opts: o, ec: expr.NewEvalCtx(o.Alloc), start: time.Now(), remaining: -1}
	r.refs.Store(1)
	if p.agg != nil {
		r.agg = newAggState(p.agg)
	}
	switch {
	case p.window != nil && p.agg == nil:
		r.winRows = newWindowRows(p)
	case p.window != nil:
		r.win = newWinState(p, o)
		_, r.win.locksNothing = p.tbl.Source.(flow.Looker)
		r.win.acceptFolded = o.AcceptFolded
		r.winRows = r.win.windowRows
		r.agg.keepEmitted()
		if p.window.spec.fn != "CUMULATE" {
			// Its windows are all one size long: the start tells the end.
			r.agg.implied = p.window.endKey
		}
		r.agg.part, r.agg.parts = p.window.startKey, map[int64]map[string]int32{}
	}
	if o.State != nil && (p.agg != nil || !(p.JoinsStreams() || p.KeepsLookups())) {
		if err := r.openState(); err != nil {
			stopFetching()
			return nil, err
		}
	}
	if n, ok := p.Limit(); ok {
		r.remaining, r.capReason = n, EndLimit
	}
	if o.MaxRows > 0 && (r.remaining < 0 || o.MaxRows < r.remaining) {
		r.remaining, r.capReason = o.MaxRows, EndMaxRows
	}
	if r.remaining == 0 {
		// LIMIT 0: nothing to read, so no consumer need join the group.
		r.end, r.closed = r.capReason, true
		stopFetching()
		return r, nil
	}
	oo := flow.OpenOptions{Alloc: o.Alloc, BatchSize: o.BatchSize, Logger: o.Logger}
	if r.remaining > 0 && p.where == nil && p.agg == nil {
		// Every record read gives the result a row or more, so the bound
		// is as many records as the query can need. With WHERE or an
		// aggregation it says nothing of how many records that is (WHERE
		// may drop thousands before it keeps one), and polls of the
		// bound's size would read them a few at a time.
		oo.Limit = r.remaining
	}
	st, err := r.openSource(ctx, oo)
	if err != nil {
		stopFetching()
		if errors.Is(err, errJoinNeedsState) {
			return nil, err // the join's, of no one table
		}
		return nil, tableError("open", p.tbl.Name(), err)
	}
	if err := checkStreamSchema(p, st.Schema()); err != nil {
		stopFetching()
		st.Close()
		return nil, err
	}
	r.stream = st
	if pt, ok := st.(flow.Partitioned); ok && r.win != nil && r.win.marks != nil {
		r.win.marks.name(pt.Partitions(), time.Now())
	}
	return r, nil
}

// openSource opens the table's source; a join of two streams with the
// query's State, without which it does not run.
func (r *Rows) openSource(ctx context.Context, oo flow.OpenOptions) (flow.Stream, error) {
	if k, ok := r.opts.State.(interface{ Keep() flow.Keep }); ok {
		oo.Keep = k.Keep()
	}
	ij, ok := r.plan.tbl.Source.(*intervalJoin)
	if !ok {
		return r.plan.tbl.Source.Open(ctx, oo)
	}
	js, ok := r.opts.State.(JoinState)
	if !ok {
		return nil, fmt.Errorf("%w: %w", ErrState, errJoinNeedsState)
	}
	return ij.open(ctx, oo, js, sourceIdleTimeout(r.opts), allowedLateness(r.opts))
}

// tableError says what failed on which table: "read table 't': ...". A
// source's error that is a table.Error of the table already (the
// connectors' are) gets the verb, so that the table is said once.
func tableError(verb, name string, err error) error {
	if te, ok := err.(*table.Error); ok && te.Table == name && te.Op == "" {
		return &table.Error{Table: name, Op: verb, Err: te.Err}
	}
	return &table.Error{Table: name, Op: verb, Err: err}
}

// checkStreamSchema makes sure the stream's batches are the table's columns,
// which the plan's column indexes assume.
func checkStreamSchema(p *Plan, s *arrow.Schema) error {
	want := p.tbl.Schema().Arrow()
	if s.NumFields() != want.NumFields() {
		return table.Errorf(p.tbl.Name(), "the source's batches have %d columns, the table %d", s.NumFields(), want.NumFields())
	}
	for i := range want.Fields() {
		if !arrow.TypeEqual(s.Field(i).Type, want.Field(i).Type) {
			return table.Errorf(p.tbl.Name(), "the source's column %d ('%s') is %s, the table's ('%s') %s", i, s.Field(i).Name, s.Field(i).Type, want.Field(i).Name, want.Field(i).Type)
		}
	}
	return nil
}

// Plan is the query's plan.
func (r *Rows) Plan() *Plan { return r.plan }

// Columns are the result's columns with their Flink types, for headers.
func (r *Rows) Columns() []types.Column { return r.plan.Columns() }

// Schema is the Arrow schema of every result batch.
func (r *Rows) Schema() *arrow.Schema { return r.plan.Schema() }

// RecordBatch is the current result batch. It is valid until the next call
// of Next, Close or the last Release, unless the caller retains it (which
// does not delay its settling).
func (r *Rows) RecordBatch() arrow.RecordBatch { return r.curOut }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch; array.RecordReader still requires it.
func (r *Rows) Record() arrow.RecordBatch { return r.curOut }

// Err is why the query ended, or nil; see Rows.
func (r *Rows) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// EndReason is why the query ended, or Running.
func (r *Rows) EndReason() EndReason {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.end
}

// Stats counts the query's work so far.
func (r *Rows) Stats() Stats {
	r.mu.Lock()
	s := r.stats
	final := r.final
	running := r.end == Running
	r.mu.Unlock()
	if final != nil {
		s.Source = *final
	} else if r.stream != nil {
		// Running, or ended while held batches keep the stream open.
		s.Source = r.stream.Stats()
	}
	_, s.TakesNothing = r.plan.tbl.Source.(flow.Looker)
	if running {
		s.Elapsed = time.Since(r.start)
		s.Working = s.Elapsed
	}
	return s
}

// Retain adds a reference; Release drops one and closes the query with the
// last.
func (r *Rows) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one closes the query (see Close).
func (r *Rows) Release() {
	if r.refs.Add(-1) == 0 {
		r.Close()
	}
}

// ReleaseRow marks result row i of the current batch for redelivery: when
// the batch is settled, its record is released, and the broker hands it to a
// consumer again (its delivery count goes up). Use it for a row whose
// processing failed and should be retried, by this or another worker. A
// record that gave several rows (a JSON array value) is released if any of
// its rows is, so its other rows come again too.
func (r *Rows) ReleaseRow(i int) error { return r.mark(i, flow.Release) }

// ReleaseBatch marks every row of the current batch for redelivery, for a
// batch that could not be written: which of its rows arrived is unknown, so
// all come again.
//
// Of an aggregate query, it releases every record folded into the batch.
// The groups cannot take them out again (MIN and MAX forget what they
// passed over), so later results would count them twice when they come
// back: the query ends at the next Next, with an error that says so. Use it
// when a batch could not be written and the query is to stop.
func (r *Rows) ReleaseBatch() error {
	if r.cur == nil {
		return ErrNoBatch
	}
	if r.agg != nil {
		if r.win != nil {
			// The batch reflects whole source batches: they go back.
			r.cur.Abandon()
			r.cur = multiAck(nil)
		}
		for _, j := range r.curIn {
			r.cur.Mark(j, flow.Release)
		}
		for i := range r.curMarks {
			r.curMarks[i] = flow.Release
		}
		r.spoiled = fmt.Errorf("%w: a batch of the aggregate's changes was released, and its groups still count the released records, so the query stopped", ErrUpdating)
		return nil
	}
	for i := range r.curSel {
		if err := r.mark(i, flow.Release); err != nil {
			return err
		}
	}
	return nil
}

// RejectRow marks result row i of the current batch as never to be
// delivered again: when the batch is settled, its record is rejected (the
// broker archives it). Use it for a row that no retry can fix.
func (r *Rows) RejectRow(i int) error { return r.mark(i, flow.Reject) }

// ErrNoBatch is returned by ReleaseRow and RejectRow when no batch is out:
// before the first Next, or after the query ended.
var ErrNoBatch = errors.New("no current batch")

func (r *Rows) mark(i int, d flow.Disposition) error {
	if r.cur == nil {
		return ErrNoBatch
	}
	if r.agg != nil {
		return fmt.Errorf("%w: row %d is an aggregate's result, which reflects many records; release the whole batch with ReleaseBatch", ErrUpdating, i)
	}
	if i < 0 || i >= len(r.curSel) {
		return fmt.Errorf("row %d out of range: the current batch has %d rows", i, len(r.curSel))
	}
	r.curMarks[i] = d
	r.cur.Mark(r.curSel[i], sourceMark(r.curSel, r.curMarks, i))
	return nil
}

// sourceMark is the disposition of the source row behind result row i,
// given each result row's (marks): the rows of one source row (a window
// TVF's, one per window) are next to each other in sel, and, as for a
// record that gave several rows, one released row releases the source
// row, else one rejected row rejects it.
func sourceMark(sel []int, marks []flow.Disposition, i int) flow.Disposition {
	lo, hi := i, i+1
	for lo > 0 && sel[lo-1] == sel[i] {
		lo--
	}
	for hi < len(sel) && sel[hi] == sel[i] {
		hi++
	}
	d := flow.Accept
	for _, m := range marks[lo:hi] {
		switch {
		case m == flow.Release:
			return flow.Release
		case m == flow.Reject:
			d = flow.Reject
		}
	}
	return d
}

// distinctRows is the number of source rows of a selection in order.
func distinctRows(sel []int) int {
	n := 0
	for k, s := range sel {
		if k == 0 || s != sel[k-1] {
			n++
		}
	}
	return n
}

// settle settles the batch handed out, as delivered.
func (r *Rows) settle() {
	if r.cur == nil {
		return
	}
	ack := r.cur
	stored := r.saves != nil && r.curOps != nil && r.spoiled == nil
	if stored {
		if err := r.noteState(ack, r.curIn); err != nil {
			// Not stored, so not accepted: the records go back, and
			// the groups, which count them, are of no more use.
			ack.Abandon()
			r.curOut.Release()
			r.cur, r.curOut, r.curSel, r.curMarks, r.curDrop = nil, nil, nil, nil, 0
			r.curOps, r.curIn = nil, nil
			r.finish(EndError, err)
			return
		}
	}
	r.countSettled(r.curOut, r.curMarks, r.curDrop)
	r.cur, r.curOut, r.curSel, r.curMarks, r.curDrop = nil, nil, nil, nil, 0
	r.curOps, r.curIn = nil, nil
	if !stored {
		ack.Done()
		return
	}
	// Accepted once the State holds the batch's effect (epoch.go).
	r.stored(ack)
}

// settleBatch settles one batch as delivered and counts its rows: the
// current one, or one taken out with Hold.
func (r *Rows) settleBatch(ack flow.Acker, out arrow.RecordBatch, marks []flow.Disposition, drop int64) {
	r.countSettled(out, marks, drop)
	ack.Done()
}

// countSettled counts the rows of a batch settled as delivered, and frees
// its result batch out.
func (r *Rows) countSettled(out arrow.RecordBatch, marks []flow.Disposition, drop int64) {
	var rel, rej int64
	for _, m := range marks {
		switch m {
		case flow.Release:
			rel++
		case flow.Reject:
			rej++
		}
	}
	out.Release()
	r.mu.Lock()
	r.stats.Delivered += int64(len(marks)) - rel - rej
	r.stats.Released += rel
	r.stats.Rejected += rej
	r.stats.Filtered += drop
	r.mu.Unlock()
}

// finish ends the query: it records why and closes the stream, so that what
// the source holds goes back to the broker at once.
func (r *Rows) finish(reason EndReason, err error) {
	if len(r.epoch.acks) > 0 {
		// The batches moved past are stored and accepted before the
		// stream closes (which releases what is not settled), unless
		// the query failed, or a batch was released (its groups count
		// records that go back: see ReleaseBatch): the groups are then
		// no state to store.
		if reason == EndError || r.spoiled != nil {
			r.abandonEpoch()
		} else if cerr := r.commitEpoch(); cerr != nil {
			reason, err = EndError, cerr
		}
	}
	r.mu.Lock()
	if r.end == Running {
		r.end, r.err = reason, err
		r.stats.Elapsed = time.Since(r.start)
		r.stats.Working = r.stats.Elapsed
		if reason == EndIdle && !r.waitFrom.IsZero() {
			r.stats.Working = r.waitFrom.Sub(r.start)
		}
	}
	r.mu.Unlock()
	r.closeStream()
}

func (r *Rows) closeStream() {
	r.mu.Lock()
	if r.closed || r.held > 0 {
		// A held batch keeps the stream open (see Held); the last one's
		// Done closes it.
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	r.stopFetching()
	if r.win != nil {
		r.win.release()
	}
	if r.agg != nil {
		r.agg.release()
	}
	if r.stream == nil {
		return
	}
	err := r.stream.Close()
	final := r.stream.Stats()
	r.mu.Lock()
	r.final = &final
	if err != nil {
		r.closeEr = tableError("close", r.plan.tbl.Name(), err)
		if r.err == nil {
			r.err = r.closeEr
		}
	}
	r.mu.Unlock()
}

// StopFetching ends the query's reading but not its batches, which is how
// a pipeline drains: a Next waiting for a batch returns false (EndCancelled,
// Err context.Canceled); a source that is a flow.FetchStopper fetches no
// more records and releases at once those it fetched and did not hand out
// (another source releases them at Close); the batches taken out with Hold
// can still be settled, their records accepted, until Close. Unlike the
// rest of Rows it is safe from any goroutine.
func (r *Rows) StopFetching() {
	r.stopFetching()
	if fs, ok := r.stream.(flow.FetchStopper); ok {
		fs.StopFetching()
	}
}

// Close settles the current batch as delivered, waits until every batch
// taken out with Hold is settled, closes the stream (which releases every
// record fetched and not handed out) and returns the error of closing it,
// if any. It is safe to call more than once.
func (r *Rows) Close() error {
	r.settle()
	reason := EndClosed
	if r.capHit {
		reason = r.capReason // the bound was reached; Close only came first
	}
	r.finish(reason, nil)
	r.waitHeld()
	r.closeStream()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeEr
}

// Next settles the batch handed out before (see Rows) and waits for the next
// result batch. It returns false when the query has ended; see Err and
// EndReason.
func (r *Rows) Next() bool {
	r.settle()
	if r.EndReason() != Running {
		return false
	}
	if r.capHit {
		r.finish(r.capReason, nil)
		return false
	}
	if r.spoiled != nil {
		r.finish(EndError, r.spoiled)
		return false
	}
	for {
		b, ok := r.wait()
		if !ok {
			return false
		}
		if b.Record == nil {
			// A window's timer, or the end of a bounded source, which
			// closes every window.
			if r.winTick() {
				return true
			}
			continue
		}
		if r.handOut(b) {
			return true
		}
		if r.EndReason() != Running {
			return false
		}
	}
}

// wait reads the next source batch, ending the query on EOF, idle timeout,
// cancel or error.
func (r *Rows) wait() (flow.Batch, bool) {
	if err := r.ctx.Err(); err != nil {
		r.finish(EndCancelled, err)
		return flow.Batch{}, false
	}
	if r.win != nil && r.win.eof {
		r.finish(r.win.endAs, nil)
		return flow.Batch{}, false
	}
	if len(r.epoch.acks) > 0 && r.sourceWaits() {
		// Nothing more comes until the epoch's records are settled.
		if !r.endEpoch() {
			return flow.Batch{}, false
		}
	}
	wctx, cancelTick := r.windowDeadline(r.ctx)
	defer cancelTick()
	if at := r.epochDeadline(time.Now()); !at.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadlineCause(wctx, at, errEpoch)
		defer cancel()
	}
	if d := r.opts.IdleTimeout; d > 0 {
		from := time.Now()
		switch {
		case !r.waited:
			from = r.start
		case r.ticked:
			// A window's timer ended the last wait, not a record: the
			// idle time goes on counting.
			from = r.waitFrom
		}
		r.waitFrom = from
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadlineCause(wctx, from.Add(d), errIdle)
		defer cancel()
	}
	r.waited, r.ticked = true, false
	b, err := r.stream.Next(wctx)
	if err == nil {
		if cerr := r.ctx.Err(); cerr != nil {
			// Cancelled while the batch was on its way: the caller asked
			// for no more rows, so none reach it, and the batch goes back.
			b.Record.Release()
			b.Ack.Abandon()
			r.finish(EndCancelled, cerr)
			return flow.Batch{}, false
		}
		return b, true
	}
	switch {
	case errors.Is(err, io.EOF) && r.win != nil:
		r.win.eof, r.win.endAs = true, EndEOF
		return flow.Batch{}, true
	case errors.Is(err, io.EOF):
		r.finish(EndEOF, nil)
	case r.ctx.Err() != nil:
		r.finish(EndCancelled, r.ctx.Err())
	case wctx.Err() != nil && context.Cause(wctx) == errIdle && r.win != nil:
		// The idle timeout is how a reader of a queue, which has no end,
		// says that its input has ended: every window closes, as at the
		// end of a bounded source.
		r.win.eof, r.win.endAs = true, EndIdle
		return flow.Batch{}, true
	case wctx.Err() != nil && context.Cause(wctx) == errIdle:
		r.finish(EndIdle, nil)
	case wctx.Err() != nil && context.Cause(wctx) == errEpoch:
		// No batch came in time: the epoch ends, and the wait goes on
		// (its idle time counted from where it began).
		r.ticked = true
		if !r.endEpoch() {
			return flow.Batch{}, false
		}
		return r.wait()
	case wctx.Err() != nil && context.Cause(wctx) == errTick:
		r.ticked = true
		return flow.Batch{}, true
	default:
		r.finish(EndError, tableError("read", r.plan.tbl.Name(), err))
	}
	return flow.Batch{}, false
}

// handOut evaluates a source batch and makes it the current result batch.
// It returns false when the batch gave no rows (it is then settled) or the
// query ended (it is then abandoned).
func (r *Rows) handOut(b flow.Batch) bool {
	if r.win != nil {
		return r.handOutWin(b)
	}
	if r.agg != nil {
		return r.handOutAgg(b)
	}
	out, sel, failed, err := r.evaluateBatch(b)
	n := int(b.Record.NumRows())
	b.Record.Release() // out holds what it needs
	if err != nil {
		b.Ack.Abandon()
		r.finish(EndError, err)
		return false
	}
	if len(sel) == 0 {
		// Every row was filtered out: processed, so accepted.
		b.Ack.Done()
		r.mu.Lock()
		r.stats.Filtered += int64(n - len(failed))
		r.mu.Unlock()
		return false
	}
	// Rows after the last delivered one, if LIMIT cut the batch, go back;
	// WHERE's drops before it are accepted with the batch.
	seen := n
	if last := sel[len(sel)-1]; r.remaining >= 0 && int64(len(sel)) == r.remaining {
		for j := last + 1; j < n; j++ {
			b.Ack.Mark(j, flow.Release)
		}
		seen = last + 1
	}
	kept := len(sel)
	if r.winRows != nil {
		kept = distinctRows(sel) // a HOP's row may give several
	}
	r.curDrop = int64(seen - kept - countBelow(failed, seen))
	r.cur, r.curOut, r.curSel = b.Ack, out, sel
	if b.Kinds != nil {
		// A changelog's rows keep their kinds.
		r.curOps = make([]RowKind, len(sel))
		for i, j := range sel {
			r.curOps[i] = b.Kinds[j]
		}
	}
	r.curMarks = make([]flow.Disposition, len(sel))
	if r.remaining >= 0 {
		r.remaining -= int64(len(sel))
		r.reached(r.remaining == 0)
	}
	r.mu.Lock()
	r.stats.Batches++
	r.stats.Rows += int64(len(sel))
	r.mu.Unlock()
	return true
}

// reached notes whether the batch just handed out reached the query's
// bound. If it did, the source stops fetching now, before the batch is
// settled: a share-group member that saw its records settled would poll
// again, and the records it took would go back with their delivery count
// raised, though the query wants no more.
func (r *Rows) reached(hit bool) {
	r.capHit = hit
	if fs, ok := r.stream.(flow.FetchStopper); ok && hit {
		fs.StopFetching()
	}
}

// evaluate filters, cuts and projects one source batch. sel maps the
// result's rows to the source's.
func (r *Rows) evaluate(src arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	p := r.plan
	rec, sel, err := r.filter(src)
	if err != nil {
		return nil, nil, err
	}
	defer rec.Release()
	if r.remaining >= 0 && int64(len(sel)) > r.remaining {
		sel = sel[:r.remaining]
	}
	if len(sel) == 0 {
		return nil, nil, nil
	}
	in, err := r.selected(rec, sel)
	if err != nil {
		return nil, nil, err
	}
	defer in.Release()
	cols, err := expr.EvalArgs(r.ec, in, p.exprs...)
	if err != nil {
		return nil, nil, err
	}
	defer expr.ReleaseAll(cols)
	if r.winRows != nil {
		// A window TVF's rows are src's once per window: each result row
		// is settled through the source row it came from.
		sel = r.winRows.sources(sel)
	}
	return array.NewRecordBatch(p.schema, cols, int64(len(sel))), sel, nil
}

// filter narrows a source batch to the columns the plan reads and returns
// it (to be released) with the rows WHERE keeps.
func (r *Rows) filter(src arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	p := r.plan
	full, err := r.extend(src)
	if err != nil {
		return nil, nil, err
	}
	// A window's rows are the source's once per window they fall in.
	n := int(full.NumRows())
	rec := narrowBatch(p, full)
	full.Release()
	var sel []int
	if r.agg != nil {
		// An aggregate reads sel only while its batch is current (curIn),
		// and the next batch is filtered after that one is settled: one
		// buffer serves every batch. Other queries hand sel out (Hold).
		sel = r.selBuf[:0]
		defer func() { r.selBuf = sel }()
	}
	if p.where != nil {
		mask, err := p.where.Eval(r.ec, rec)
		if err != nil {
			rec.Release()
			return nil, nil, err
		}
		m := mask.(*array.Boolean)
		for i := 0; i < n; i++ {
			if m.IsValid(i) && m.Value(i) {
				sel = append(sel, i)
			}
		}
		mask.Release()
	} else if r.agg == nil {
		sel = r.identity(n)
	} else {
		if cap(sel) < n {
			sel = make([]int, 0, n)
		}
		for i := range n {
			sel = append(sel, i)
		}
	}
	return rec, sel, nil
}

// identity is the selection of every row of a batch of n rows, 0 to n-1,
// shared by every batch of a query without WHERE: nobody writes into a
// selection (evaluateAround maps its rows into a new one), and its
// capacity is cut at n, so an append copies.
func (r *Rows) identity(n int) []int {
	if len(r.ident) < n {
		r.ident = make([]int, max(n, 2*len(r.ident)))
		for i := range r.ident {
			r.ident[i] = i
		}
	}
	return r.ident[:n:n]
}

// selected is the batch of rows sel of rec: rec itself, a slice of it when
// only the tail was cut, or the rows taken. The caller releases it.
func (r *Rows) selected(rec arrow.RecordBatch, sel []int) (arrow.RecordBatch, error) {
	switch {
	case len(sel) == int(rec.NumRows()):
		rec.Retain()
		return rec, nil
	case sel[len(sel)-1] == len(sel)-1:
		return rec.NewSlice(0, int64(len(sel))), nil
	}
	return expr.TakeRows(r.ec, rec, sel)
}

// ErrUpdating is returned by ReleaseRow, RejectRow and Hold on an aggregate
// query: its rows are changes of groups, each reflecting many records, so
// they cannot be settled one by one.
var ErrUpdating = errors.New("the query's result is updating")

// Op is the kind of change row i of the current batch is: always Insert
// for a query without aggregation; see Plan.Updating.
func (r *Rows) Op(i int) RowKind {
	if r.curOps == nil {
		return Insert
	}
	return r.curOps[i]
}

// foldSource filters a source batch and hands the rows WHERE keeps to
// fold, if any; it releases the batch's record. On an error it abandons
// the batch and ends the query (ok false).
func (r *Rows) foldSource(b flow.Batch, fold func(in arrow.RecordBatch) error) (sel []int, ok bool) {
	r.applied = 0
	var skip []bool
	var err error
	if r.opts.Applied != nil {
		skip, err = r.appliedRows(b.Ack, int(b.Record.NumRows()))
	}
	var rec arrow.RecordBatch
	if err == nil {
		if r.winRows != nil {
			// A window's rows are made without the applied ones.
			r.winRows.skip = skip
		}
		rec, sel, err = r.filter(b.Record)
		if r.winRows != nil {
			r.winRows.skip = nil
		} else if skip != nil {
			kept := sel[:0]
			for _, row := range sel {
				if !skip[row] {
					kept = append(kept, row)
				}
			}
			sel = kept
		}
	}
	if err == nil && len(sel) > 0 {
		var in arrow.RecordBatch
		if in, err = r.selected(rec, sel); err == nil {
			err = fold(in)
			in.Release()
		}
	}
	if rec != nil {
		rec.Release()
	}
	if err != nil {
		// The source batch is held until here: the search for the
		// record at fault reads it.
		err = aggEvalError(b.Ack, r.recordError(b, err))
		b.Record.Release()
		b.Ack.Abandon()
		r.finish(EndError, err)
		return nil, false
	}
	b.Record.Release()
	return sel, true
}

// appliedRows says which of a source batch's n rows have records that
// Options.Applied reports applied already (nil for none), to be left out.
// Only records delivered more than once are asked about: a record's first
// delivery cannot have been applied.
func (r *Rows) appliedRows(ack flow.Acker, n int) ([]bool, error) {
	ro, ok := ack.(flow.RowOrigins)
	if !ok {
		return nil, nil
	}
	var again []flow.Origin
	var at []int // the row of each of again
	for row := range n {
		if o, ok := ro.RowOrigin(row); ok && o.DeliveryCount > 1 {
			again = append(again, o)
			at = append(at, row)
		}
	}
	if len(again) == 0 {
		return nil, nil
	}
	applied, err := r.opts.Applied(r.ctx, again)
	if err != nil {
		return nil, fmt.Errorf("looking up the records delivered again: %w", err)
	}
	var skip []bool
	k := 0
	for i, a := range applied {
		if a {
			if skip == nil {
				skip = make([]bool, n)
			}
			skip[at[i]] = true
			k++
		}
	}
	r.applied = k
	r.mu.Lock()
	r.stats.Applied += int64(k)
	r.mu.Unlock()
	return skip, nil
}

// ChangeOrigins are the records of the source rows the current batch of
// an aggregate's changes reflects (flow.MergeWriter): the rows folded
// into the groups, not those WHERE dropped or whose records were applied
// already. It is an error for another batch, or a source that does not
// tell its records.
func (r *Rows) ChangeOrigins() ([]flow.Origin, error) {
	if r.agg == nil || r.curOps == nil {
		return nil, errors.New("the current batch is not an aggregate's changes")
	}
	ro, ok := r.cur.(flow.RowOrigins)
	if !ok {
		return nil, errors.New("the source does not tell the records of its rows")
	}
	out := make([]flow.Origin, len(r.curIn))
	for i, row := range r.curIn {
		if out[i], ok = ro.RowOrigin(row); !ok {
			return nil, fmt.Errorf("the source does not tell the record of its row %d", row)
		}
	}
	return out, nil
}

// handOutAgg folds a source batch into the groups and makes the groups'
// changes the current result batch (see "Aggregates" in Rows). It returns
// false when no group changed (the batch is then settled) or the query
// ended (the batch is then abandoned).
func (r *Rows) handOutAgg(b flow.Batch) bool {
	n := int(b.Record.NumRows())
	var res aggOut
	sel, ok := r.foldSource(b, func(in arrow.RecordBatch) (err error) {
		res, err = r.agg.changes(r.ec, r.plan, in)
		return err
	})
	if !ok {
		return false
	}
	drop := int64(n - len(sel) - r.applied) // WHERE's
	if res.out == nil {
		// No group changed: WHERE or HAVING dropped the rows, or the
		// groups' rows are what was delivered already. Processed, so
		// accepted, once the groups (which may have changed behind a
		// HAVING) are stored.
		stored := r.saves != nil && len(sel) > 0
		if stored {
			if err := r.noteState(b.Ack, sel); err != nil {
				b.Ack.Abandon()
				r.finish(EndError, err)
				return false
			}
		}
		r.mu.Lock()
		r.stats.Filtered += drop
		r.stats.Unchanged += int64(len(sel))
		r.mu.Unlock()
		if stored {
			r.stored(b.Ack)
		} else {
			b.Ack.Done()
		}
		return false
	}
	r.setChanges(b.Ack, res, drop, sel)
	return true
}

// setChanges makes a batch of changes the current result batch, settled
// with ack.
func (r *Rows) setChanges(ack flow.Acker, res aggOut, drop int64, sel []int) {
	k := len(res.ops)
	r.curDrop = drop
	r.cur, r.curOut, r.curOps, r.curIn = ack, res.out, res.ops, sel
	// max-rows ends the query after the batch that reaches it: a batch of
	// changes is never cut, so every record of it stays reflected.
	// Rows have no source row of their own (see mark): no curSel. The
	// marks are only ReleaseBatch's, and an aggregate's batch cannot be
	// held, so one buffer serves every batch.
	r.curSel = nil
	if cap(r.aggMarks) < k {
		r.aggMarks = make([]flow.Disposition, k)
	}
	r.aggMarks = r.aggMarks[:k]
	clear(r.aggMarks)
	r.curMarks = r.aggMarks
	if r.remaining >= 0 {
		r.remaining = max(0, r.remaining-int64(k))
		r.reached(r.remaining == 0)
	}
	r.mu.Lock()
	r.stats.Batches++
	r.stats.Rows += int64(k)
	r.mu.Unlock()
}

// OutputBatch is the current batch as a destination writes it (see
// Plan.OutputSchema): RecordBatch itself, or for an updating query a new
// batch with each row's op first. The caller releases it.
func (r *Rows) OutputBatch() arrow.RecordBatch {
	if r.curOut == nil {
		return nil
	}
	if !r.plan.Updating() {
		r.curOut.Retain()
		return r.curOut
	}
	b := array.NewStringBuilder(r.opts.Alloc)
	defer b.Release()
	n := int(r.curOut.NumRows())
	b.Reserve(n)
	for i := range n {
		b.Append(r.Op(i).String())
	}
	ops := b.NewArray()
	defer ops.Release()
	cols := append([]arrow.Array{ops}, r.curOut.Columns()...)
	return array.NewRecordBatch(r.plan.OutputSchema(), cols, r.curOut.NumRows())
}
