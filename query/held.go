package query

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/types"
)

// Held is a result batch taken out of its Rows with Hold, to be settled
// later and from any goroutine: a worker pool works on the rows of several
// batches at once and settles each batch when its last row is done, while
// Next goes on reading.
//
// Its records stay locked to this consumer until Done; the connector renews
// their locks meanwhile, so a row that takes longer than the lock is not
// handed to another consumer. The query's stream stays open while a batch
// is held: Next may end the query, but Close waits for every held batch to
// be settled before it closes the stream (whose closing releases whatever
// is still unsettled).
type Held struct {
	r     *Rows
	ack   flow.Acker
	out   arrow.RecordBatch
	sel   []int
	marks []flow.Disposition
	drop  int64
	once  sync.Once
}

// Hold takes the current batch out of r: Next and Close no longer settle
// it; the caller must call Done on it exactly once. It returns ErrNoBatch
// when no batch is out.
func (r *Rows) Hold() (*Held, error) {
	if r.cur == nil {
		return nil, ErrNoBatch
	}
	if r.agg != nil {
		// The next batch's changes may replace this one's rows, so they
		// must reach their destination in order, one batch at a time.
		return nil, fmt.Errorf("%w: an aggregate query's batches are settled in order by Next; Hold is for queries without aggregation", ErrUpdating)
	}
	h := &Held{r: r, ack: r.cur, out: r.curOut, sel: r.curSel, marks: r.curMarks, drop: r.curDrop}
	r.cur, r.curOut, r.curSel, r.curMarks, r.curDrop = nil, nil, nil, nil, 0
	r.mu.Lock()
	r.held++
	r.mu.Unlock()
	return h, nil
}

// RecordBatch is the held result batch, valid until Done.
func (h *Held) RecordBatch() arrow.RecordBatch { return h.out }

// Len is the number of rows of the batch.
func (h *Held) Len() int { return len(h.sel) }

// Columns are the result's columns.
func (h *Held) Columns() []types.Column { return h.r.plan.Columns() }

// Row is row i of the batch, read by column name; valid until Done.
func (h *Held) Row(i int) Row { return Row{cols: h.r.plan.Columns(), rec: h.out, i: i} }

// Source is the source's settling handle together with the source row that
// result row i came from, for a caller that asks the source about the
// record behind a row (its topic and offset, say) through an optional
// interface of the Acker.
func (h *Held) Source(i int) (flow.Acker, int) { return h.ack, h.sel[i] }

// Mark sets the disposition of row i (default Accept: delivered). It is
// not safe for concurrent use; call it before Done.
func (h *Held) Mark(i int, d flow.Disposition) {
	if i < 0 || i >= len(h.sel) {
		return
	}
	h.marks[i] = d
	h.ack.Mark(h.sel[i], sourceMark(h.sel, h.marks, i))
}

// Done settles the batch as Rows.Next settles the current batch: unmarked
// rows are delivered, their records accepted. Later calls do nothing.
func (h *Held) Done() {
	h.once.Do(func() {
		r := h.r
		r.settleBatch(h.ack, h.out, h.marks, h.drop)
		r.mu.Lock()
		r.held--
		last := r.held == 0
		ended := r.end != Running
		r.heldCond().Broadcast()
		r.mu.Unlock()
		if last && ended {
			// The query ended while this batch was out; its stream
			// waited for it.
			r.closeStream()
		}
	})
}

// heldCond is signalled when a held batch is settled; it needs r.mu.
func (r *Rows) heldCond() *sync.Cond {
	if r.heldC == nil {
		r.heldC = sync.NewCond(&r.mu)
	}
	return r.heldC
}

// waitHeld waits until no batch is held.
func (r *Rows) waitHeld() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.held > 0 {
		r.heldCond().Wait()
	}
}
