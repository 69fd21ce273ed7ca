package query

// This file is the table's policy for rows that cannot be evaluated
// (kafka-sharegroup's 'scan.on-eval-error'; flow.RowFailer). A batch is
// evaluated column by column as always; only when that fails with ErrEval
// and the batch's Acker settles such rows is the batch searched (by halves,
// see hunt) for the rows at fault. Their records are settled by the policy (a dead
// letter, a reject, a release) and left out of the result; the other rows
// are evaluated together again. A record that gave several rows (a JSON
// array) is settled as a whole: when one of its rows fails, its other rows
// are left out too, since they would otherwise be delivered from a record
// that was dead-lettered. Without such a policy the query ends, and the
// same search finds the row at fault so that the error can name its
// record (RowError), when the source tells records.

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
)

// evaluateBatch is evaluate under the table's policy for rows that cannot
// be evaluated: failed lists the source rows left out because of it (their
// records settled), in order. With no such policy, or with an error other
// than ErrEval, the error is returned as evaluate returned it.
func (r *Rows) evaluateBatch(b flow.Batch) (out arrow.RecordBatch, sel, failed []int, err error) {
	out, sel, err = r.evaluate(b.Record)
	if err == nil || !errors.Is(err, ErrEval) {
		return out, sel, nil, err
	}
	rf, ok := b.Ack.(flow.RowFailer)
	if !ok || !rf.FailsRows() {
		return nil, nil, nil, r.recordError(b, err)
	}
	return r.evaluateAround(b.Record, rf)
}

// RowError is the error of a query that ended on a row it could not
// evaluate, when the source tells which record gave that row
// (flow.RowOrigins): the record goes back to the source, and its
// coordinates are what a user needs to find it, skip it or fix it.
// errors.Is(err, ErrEval) holds for it.
type RowError struct {
	Table  string
	Record flow.Origin
	Err    error
}

func (e *RowError) Error() string {
	o := e.Record
	delivery := ""
	if o.DeliveryCount > 0 {
		delivery = fmt.Sprintf(" (delivery %d)", o.DeliveryCount)
	}
	return fmt.Sprintf("table '%s', record %s[%d]@%d%s: %v", options.Cut(e.Table), o.Topic, o.Partition, o.Offset, delivery, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// recordError is err, an evaluation of source batch b that failed, with the
// record of the row at fault when b's Acker tells records (RowError); err
// as it is otherwise, or when no row fails alone.
func (r *Rows) recordError(b flow.Batch, err error) error {
	ro, ok := b.Ack.(flow.RowOrigins)
	if !ok || !errors.Is(err, ErrEval) {
		return err
	}
	h := &hunt{r: r, src: b.Record, limited: r.remaining >= 0}
	if r.agg != nil {
		// An aggregate's rows are folded, not delivered: no LIMIT cut.
		h.probe, h.limited = r.probeAgg, false
	}
	var f *failedRow
	if !errors.As(h.run(0, int(b.Record.NumRows())), &f) {
		return err
	}
	o, ok := ro.RowOrigin(f.row)
	if !ok {
		return err
	}
	return &RowError{Table: r.plan.tbl.Name(), Record: o, Err: f.err}
}

// failedRow ends a hunt without a RowFailer at the first row that fails.
type failedRow struct {
	row int
	err error
}

func (f *failedRow) Error() string { return fmt.Sprintf("row %d: %v", f.row, f.err) }

// evaluateAround finds the rows of src that fail, has rf settle their
// records, and evaluates the other rows as one batch.
func (r *Rows) evaluateAround(src arrow.RecordBatch, rf flow.RowFailer) (arrow.RecordBatch, []int, []int, error) {
	h := &hunt{r: r, src: src, rf: rf, limited: r.remaining >= 0}
	if err := h.run(0, int(src.NumRows())); err != nil {
		return nil, nil, nil, err
	}
	r.mu.Lock()
	r.stats.EvalFailed += int64(len(h.failed))
	r.mu.Unlock()
	if len(h.good) == 0 {
		return nil, nil, h.failed, nil
	}
	rest, err := expr.TakeRows(r.ec, src, h.good)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rest.Release()
	out, sel, err := r.evaluate(rest)
	if err != nil {
		// Each of these rows evaluated without the others: an expression
		// that fails only with them is a bug to report, not a row to
		// settle.
		return nil, nil, nil, fmt.Errorf("query: rows that evaluated apart failed together: %w", err)
	}
	// A new selection: sel may be shared (Rows.identity).
	mapped := make([]int, len(sel))
	for k, s := range sel {
		mapped[k] = h.good[s]
	}
	return out, mapped, h.failed, nil
}

// hunt looks for the rows of a batch that cannot be evaluated by halves:
// a part that evaluates is good as a whole, one that fails is split, so a
// few bad rows among many cost a few evaluations of the batch rather than
// one per row. Under LIMIT it goes row by row and stops at the row that
// fills it, as evaluate's cut does: rows after it are not delivered, so
// they cannot fail (and their records are released, not dead-lettered).
// Without a RowFailer it stops at the first row that fails, with that row
// (failedRow) as its error.
type hunt struct {
	r   *Rows
	src arrow.RecordBatch
	rf  flow.RowFailer // nil: find the first failing row
	// probe, if set, evaluates a part instead of Rows.evaluate (an
	// aggregate's, see probeAgg); never with limited.
	probe   func(part arrow.RecordBatch) error
	limited bool
	next    int    // rows before it are decided
	good    []int  // rows that evaluated, in order
	kept    []bool // under LIMIT, of each good row: WHERE kept it
	nkept   int64
	failed  []int // rows left out, in order
}

func (h *hunt) run(lo, hi int) error {
	lo = max(lo, h.next)
	if lo >= hi || (h.limited && h.nkept == h.r.remaining) {
		return nil
	}
	if h.limited && hi-lo > 1 {
		return h.split(lo, hi)
	}
	part := h.src.NewSlice(int64(lo), int64(hi))
	var (
		out arrow.RecordBatch
		sel []int
		err error
	)
	if h.probe != nil {
		err = h.probe(part)
	} else {
		out, sel, err = h.r.evaluate(part)
	}
	part.Release()
	if err == nil {
		if out != nil {
			out.Release()
		}
		for i := lo; i < hi; i++ {
			h.good, h.kept = append(h.good, i), append(h.kept, len(sel) > 0)
		}
		h.nkept += int64(len(sel))
		h.next = hi
		return nil
	}
	switch {
	case !errors.Is(err, ErrEval):
		return err
	case hi-lo > 1:
		return h.split(lo, hi)
	case h.rf == nil:
		return &failedRow{row: lo, err: err}
	}
	from, to := h.rf.FailRow(lo, err)
	// The record's rows before lo evaluated, but go with it.
	for len(h.good) > 0 && h.good[len(h.good)-1] >= from {
		if h.kept[len(h.kept)-1] {
			h.nkept--
		}
		h.good, h.kept = h.good[:len(h.good)-1], h.kept[:len(h.kept)-1]
	}
	h.next = max(to, lo+1)
	for j := from; j < h.next; j++ {
		h.failed = append(h.failed, j)
	}
	return nil
}

func (h *hunt) split(lo, hi int) error {
	mid := lo + (hi-lo)/2
	if err := h.run(lo, mid); err != nil {
		return err
	}
	return h.run(mid, hi)
}

// probeAgg evaluates what an aggregate query computes of each row of part
// before folding it (WHERE, the keys, the calls' FILTERs and arguments),
// and leaves the groups alone: a row whose error comes from the groups
// themselves (a SUM that overflows) fails no probe, and is not named.
func (r *Rows) probeAgg(part arrow.RecordBatch) error {
	rec, sel, err := r.filter(part)
	if err != nil {
		return err
	}
	defer rec.Release()
	if len(sel) == 0 {
		return nil
	}
	in, err := r.selected(rec, sel)
	if err != nil {
		return err
	}
	defer in.Release()
	ns := slices.Clone(r.agg.plan.keys)
	for _, c := range r.agg.plan.calls {
		for _, n := range []expr.Node{c.filter, c.arg} {
			if n != nil {
				ns = append(ns, n)
			}
		}
	}
	vals, err := expr.EvalArgs(r.ec, in, ns...)
	if err == nil {
		expr.ReleaseAll(vals)
	}
	return err
}

// countBelow counts the rows of sorted that are below n.
func countBelow(sorted []int, n int) int {
	return sort.SearchInts(sorted, n)
}

// aggEvalError is the error of an aggregate or window query whose
// evaluation failed: the table's policy for such rows applies only to
// queries that deliver rows one by one, since a group has folded rows in
// already, so the query ends and says why.
func aggEvalError(ack flow.Acker, err error) error {
	rf, ok := ack.(flow.RowFailer)
	if !ok || !rf.FailsRows() || !errors.Is(err, ErrEval) {
		return err
	}
	// Wrapped, not retold: a RowError inside still tells its record.
	return fmt.Errorf("%w ('scan.on-eval-error' settles such rows only in queries without GROUP BY, aggregates or windows; this one ends)", err)
}
