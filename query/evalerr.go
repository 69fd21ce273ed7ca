package query

// This file is the table's policy for rows that cannot be evaluated
// (kafka-sharegroup's 'scan.on-eval-error'; table.RowFailer). A batch is
// evaluated column by column as always; only when that fails with ErrEval
// and the batch's Acker settles such rows does the batch go row by row, to
// find the rows at fault. Their records are settled by the policy (a dead
// letter, a reject, a release) and left out of the result; the other rows
// are evaluated together again. A record that gave several rows (a JSON
// array) is settled as a whole: when one of its rows fails, its other rows
// are left out too, since they would otherwise be delivered from a record
// that was dead-lettered.

import (
	"errors"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/table"
)

// evaluateBatch is evaluate under the table's policy for rows that cannot
// be evaluated: failed lists the source rows left out because of it (their
// records settled), in order. With no such policy, or with an error other
// than ErrEval, the error is returned as evaluate returned it.
func (r *Rows) evaluateBatch(b table.Batch) (out arrow.RecordBatch, sel, failed []int, err error) {
	out, sel, err = r.evaluate(b.Record)
	if err == nil || !errors.Is(err, ErrEval) {
		return out, sel, nil, err
	}
	rf, ok := b.Ack.(table.RowFailer)
	if !ok || !rf.FailsRows() {
		return nil, nil, nil, err
	}
	return r.evaluateAround(b.Record, rf)
}

// evaluateAround evaluates src row by row to find the rows that fail, has
// rf settle their records, and evaluates the other rows as one batch. It
// stops at the row that fills LIMIT, as evaluate's cut does: rows after it
// are not delivered, so they cannot fail.
func (r *Rows) evaluateAround(src arrow.RecordBatch, rf table.RowFailer) (arrow.RecordBatch, []int, []int, error) {
	n := int(src.NumRows())
	var (
		good   []int  // rows that evaluated, in order
		kept   []bool // of each good row: WHERE kept it
		nkept  int64
		failed []int
	)
	for i := 0; i < n; {
		if r.remaining >= 0 && nkept == r.remaining {
			break
		}
		row := src.NewSlice(int64(i), int64(i+1))
		o, s, err := r.evaluate(row)
		row.Release()
		if err == nil {
			if o != nil {
				o.Release()
			}
			good, kept = append(good, i), append(kept, len(s) > 0)
			if len(s) > 0 {
				nkept++
			}
			i++
			continue
		}
		if !errors.Is(err, ErrEval) {
			return nil, nil, nil, err
		}
		from, to := rf.FailRow(i, err)
		// The record's rows before i evaluated, but go with it.
		for len(good) > 0 && good[len(good)-1] >= from {
			if kept[len(kept)-1] {
				nkept--
			}
			good, kept = good[:len(good)-1], kept[:len(kept)-1]
		}
		for j := from; j < max(to, i+1); j++ {
			failed = append(failed, j)
		}
		i = max(to, i+1)
	}
	r.mu.Lock()
	r.stats.EvalFailed += int64(len(failed))
	r.mu.Unlock()
	if len(good) == 0 {
		return nil, nil, failed, nil
	}
	rest, err := takeRows(r.ec, src, good)
	if err != nil {
		return nil, nil, nil, err
	}
	defer rest.Release()
	out, sel, err := r.evaluate(rest)
	if err != nil {
		// Each of these rows evaluated alone: an expression that fails
		// only with others is a bug to report, not a row to settle.
		return nil, nil, nil, fmt.Errorf("query: the rows that evaluated one by one failed together: %w", err)
	}
	for k, s := range sel {
		sel[k] = good[s]
	}
	return out, sel, failed, nil
}

// countBelow counts the rows of sorted that are below n.
func countBelow(sorted []int, n int) int {
	return sort.SearchInts(sorted, n)
}

// aggEvalError is the error of an aggregate or window query whose
// evaluation failed: the table's policy for such rows applies only to
// queries that deliver rows one by one, since a group has folded rows in
// already, so the query ends and says why.
func aggEvalError(ack table.Acker, err error) error {
	rf, ok := ack.(table.RowFailer)
	if !ok || !rf.FailsRows() || !errors.Is(err, ErrEval) {
		return err
	}
	return &Error{Kind: ErrEval, Msg: err.Error() + " ('scan.on-eval-error' settles such rows only in queries without GROUP BY, aggregates or windows; this one ends)"}
}
