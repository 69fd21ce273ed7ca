package mlpredict

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Source reads a table through a model. Each Open opens the model anew
// (model.Bound.Open), so each query has its own budget of
// 'max-concurrent-operations' and 'rate-limit'.
type Source struct {
	// Table is the name of the table read, for messages.
	Table string
	// Input is the table's source.
	Input flow.Source
	// Model is the model, its options as the query set them.
	Model *model.Bound
	// Features are the positions, among the columns of the input's
	// batches, of the columns passed to the model, in the order of its
	// INPUT columns.
	Features []int
}

var _ flow.Source = (*Source)(nil)

// Open opens the model and the input's stream, which it reads in batches
// of about a quarter of 'max-concurrent-operations' rows (fewer if o asks;
// see batchSize), paced by the calls (flow.OpenOptions.Pace).
func (s *Source) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	limit := int(s.Model.Options.Int(model.OptMaxConcurrentOperations))
	pred, err := s.Model.Open(model.OpenOptions{Alloc: o.Alloc, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	// Batches of about a quarter of the calls allowed keep several batches
	// in calls at once, so that results come out as calls finish, while
	// the rows in calls stay within 'max-concurrent-operations': a batch
	// that had to wait for another's slots would wait behind its slowest
	// call. The input is paced by the calls: a share group's members take
	// about what they keep busy, and leave the rest to other processes.
	inOpts := o
	if size := batchSize(limit); inOpts.BatchSize <= 0 || inOpts.BatchSize > size {
		inOpts.BatchSize = size
	}
	inOpts.Pace = limit
	in, err := s.Input.Open(ctx, inOpts)
	if err != nil {
		pred.Close()
		return nil, err
	}
	fs := slices.Clone(in.Schema().Fields())
	for _, c := range s.Model.Def.Output {
		fs = append(fs, arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable()})
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st := &stream{
		src:    s,
		in:     in,
		pred:   pred,
		schema: arrow.NewSchema(fs, nil),
		mem:    o.Alloc,
		log:    o.Logger.With("table", s.Table, "model", s.Model.Def.Name),
		ctx:    sctx,
		cancel: cancel,
		// Two batches more than the calls allowed wait at the model's
		// slots, so that a slot a call frees is taken at once by a row
		// of them, not when a whole batch's calls have ended and the
		// input has given the next: with exactly the calls allowed held,
		// one process at 64 calls of 50 ms reached 0.84x the ideal rate,
		// with a batch more 0.87x to 0.90x, with two 0.90x to 0.91x
		// (1,150 to 1,165 rows/s against 1,140 to 1,149, side by side).
		hold:   limit + 2*inOpts.BatchSize,
		batch:  inOpts.BatchSize,
		need:   o.Limit,
		ready:  make(chan struct{}, 1),
		pulled: make(chan struct{}),
	}
	st.cond = sync.NewCond(&st.mu)
	go st.pull()
	return st, nil
}

// batchSize is the size of the input's batches for limit calls at once: the
// largest divisor of limit up to a quarter of it (rounded up), so that
// whole batches fill every slot. Batches of a quarter rounded up left slots
// empty: of 10, batches of 3 had 9 in calls, since a fourth did not fit.
func batchSize(limit int) int {
	q := (limit + 3) / 4
	for d := q; d > 1; d-- {
		if limit%d == 0 {
			return d
		}
	}
	return 1
}

// stream is an open ML_PREDICT: a goroutine (pull) takes the input's
// batches while few enough rows are held, a goroutine per batch calls the
// model, and Next hands out the results in the order they finish.
type stream struct {
	src    *Source
	in     flow.Stream
	pred   model.Predictor
	schema *arrow.Schema
	mem    memory.Allocator
	log    *slog.Logger

	// ctx is the calls' and the pulls' scope: StopFetching and Close end
	// it.
	ctx    context.Context
	cancel context.CancelFunc

	// hold bounds the rows taken from the input and not yet handed to
	// the reader (held), unless none is held: a next batch (of batch rows
	// at most) is taken only if it fits. need, if above 0, is the
	// most rows the reader needs (flow.OpenOptions.Limit): a batch is
	// taken only while the rows handed out (given) and held are fewer,
	// so that a LIMIT calls the model no more than it must.
	hold  int
	batch int
	need  int64

	mu       sync.Mutex
	cond     *sync.Cond // signals a change of held, stopped or closed
	held     int
	given    int64
	done     []result // calls finished, not handed out yet
	inFlight int      // batches in calls
	stopped  bool     // StopFetching or Close
	pullErr  error    // why pull ended (io.EOF for a bounded input)
	calls    sync.WaitGroup
	ready    chan struct{} // a result or the end of pull, for Next
	pulled   chan struct{} // closed when pull returns
	closed   bool
}

// result is a source batch and what the model made of it.
type result struct {
	b        flow.Batch
	out      arrow.RecordBatch
	outcomes []model.Outcome
	err      error
}

func (st *stream) Schema() *arrow.Schema { return st.schema }

// Stats are the input's counts, with the model's calls.
func (st *stream) Stats() flow.Stats {
	s := st.in.Stats()
	m := st.pred.Stats()
	s.Model = &m
	return s
}

// pull takes the input's batches and starts a call for each while the
// rows held allow it.
func (st *stream) pull() {
	defer close(st.pulled)
	for {
		st.mu.Lock()
		for !st.stopped && ((st.held > 0 && st.held+st.batch > st.hold) || (st.need > 0 && st.given+int64(st.held) >= st.need)) {
			st.cond.Wait()
		}
		stopped := st.stopped
		st.mu.Unlock()
		if stopped {
			st.end(context.Canceled)
			return
		}
		b, err := st.in.Next(st.ctx)
		if err != nil {
			st.end(err)
			return
		}
		st.mu.Lock()
		if st.stopped {
			st.mu.Unlock()
			st.drop(b)
			st.end(context.Canceled)
			return
		}
		if st.need > 0 {
			b = cut(b, st.need-st.given-int64(st.held))
		}
		n := int(b.Record.NumRows())
		st.held += n
		st.inFlight++
		st.calls.Add(1)
		st.mu.Unlock()
		go st.call(b)
	}
}

// cut keeps the first room rows of b for the model and releases the
// records of the others, which the reader does not need: a LIMIT's
// input may bring more than it asked in one batch (two members each
// polling up to the limit, say). The cut falls between records, so that
// no record is both answered and released; a first record of more rows
// than room is kept whole.
func cut(b flow.Batch, room int64) flow.Batch {
	n := b.Record.NumRows()
	if room >= n {
		return b
	}
	k := max(room, 1)
	if ro, ok := b.Ack.(flow.RowOrigins); ok {
		same := func(i int64) bool {
			a, okA := ro.RowOrigin(int(i - 1))
			c, okC := ro.RowOrigin(int(i))
			return okA && okC && a.Topic == c.Topic && a.Partition == c.Partition && a.Offset == c.Offset
		}
		j := k
		for j > 0 && same(j) {
			j--
		}
		if j == 0 {
			for j = k; j < n && same(j); j++ {
			}
		}
		k = j
	}
	if k >= n {
		return b
	}
	for row := k; row < n; row++ {
		b.Ack.Mark(int(row), flow.Release)
	}
	rec := b.Record.NewSlice(0, k)
	b.Record.Release()
	b.Record = rec
	if b.Kinds != nil {
		b.Kinds = b.Kinds[:k]
	}
	return b
}

// end records why pull stopped and wakes Next.
func (st *stream) end(err error) {
	st.mu.Lock()
	st.pullErr = err
	st.mu.Unlock()
	st.signal()
}

func (st *stream) signal() {
	select {
	case st.ready <- struct{}{}:
	default:
	}
}

// call predicts one source batch and queues the result for Next.
func (st *stream) call(b flow.Batch) {
	defer st.calls.Done()
	in, err := st.features(b.Record)
	r := result{b: b, err: err}
	if err == nil {
		r.out, r.outcomes, r.err = st.pred.Predict(st.ctx, in)
		in.Release()
	}
	st.mu.Lock()
	st.inFlight--
	if st.stopped {
		st.held -= int(b.Record.NumRows())
		st.mu.Unlock()
		st.discard(r)
		st.cond.Broadcast()
		st.signal()
		return
	}
	st.done = append(st.done, r)
	st.mu.Unlock()
	st.signal()
}

// features is the batch of the columns passed to the model.
func (st *stream) features(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(st.src.Features))
	fs := make([]arrow.Field, len(st.src.Features))
	for i, k := range st.src.Features {
		if k < 0 || k >= int(rec.NumCols()) {
			return nil, table.Errorf(st.src.Table, "ML_PREDICT: feature column %d is not in the source's batch of %d columns", k, rec.NumCols())
		}
		cols[i], fs[i] = rec.Column(k), rec.Schema().Field(k)
	}
	return array.NewRecordBatch(arrow.NewSchema(fs, nil), cols, rec.NumRows()), nil
}

// Next hands out the next result that has rows, settling at once the
// source batches none of whose rows goes on.
//
// A deadline of ctx that passes while calls are in flight (a query's idle
// timeout: no record arrived for so long) is waited out until they end:
// their records did arrive, and the time a model takes on them is not
// idle. Cancelling ctx ends Next at once.
func (st *stream) Next(ctx context.Context) (flow.Batch, error) {
	idle := false
	for {
		st.mu.Lock()
		if st.closed {
			st.mu.Unlock()
			return flow.Batch{}, errors.New("ML_PREDICT: Next after Close")
		}
		if len(st.done) > 0 {
			r := st.done[0]
			st.done = st.done[1:]
			// Its rows count as handed out from the moment they are no
			// longer held, so that pull, woken now, does not take them
			// for room under a LIMIT; settle takes back those it does not
			// hand out.
			rows := r.b.Record.NumRows()
			st.held -= int(rows)
			st.given += rows
			st.mu.Unlock()
			st.cond.Broadcast()
			b, ok, err := st.settle(r)
			handed := int64(0)
			if ok && err == nil {
				handed = b.Record.NumRows()
			}
			if rows > handed {
				st.takeBack(rows - handed)
			}
			if err != nil || ok {
				return b, err
			}
			continue
		}
		busy := st.inFlight > 0
		end := st.pullErr != nil && !busy
		err := st.pullErr
		st.mu.Unlock()
		switch {
		case end:
			return flow.Batch{}, err
		case idle && !busy:
			return flow.Batch{}, ctx.Err()
		}
		wait := ctx.Done()
		if idle {
			wait = nil
		}
		select {
		case <-st.ready:
		case <-wait:
			// Look again: a batch may have come while Next waited.
			st.mu.Lock()
			busy = st.inFlight > 0 || len(st.done) > 0
			st.mu.Unlock()
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) || !busy {
				return flow.Batch{}, ctx.Err()
			}
			idle = true
		}
	}
}

// settle reads one result: the rows the model answered make the batch
// handed out (ok false when there are none, the source batch then
// settled); the others' records are released or failed.
func (st *stream) settle(r result) (flow.Batch, bool, error) {
	if r.err != nil {
		st.discard(r)
		return flow.Batch{}, false, r.err
	}
	defer r.b.Record.Release()
	defer r.out.Release()
	ack := r.b.Ack
	rf, fails := ack.(flow.RowFailer)
	fails = fails && rf.FailsRows()
	n := len(r.outcomes)
	gone := make([]bool, n) // rows of records a RowFailer settled
	var sel []int
	for i, o := range r.outcomes {
		if gone[i] {
			continue
		}
		switch o.Class {
		case model.OK:
			sel = append(sel, i)
		case model.Retry:
			// The share group hands it out again. Waiting o.Delay here
			// would hold the record's lock and the batch's other rows;
			// the redelivery is the wait.
			ack.Mark(i, flow.Release)
		default:
			if fails {
				from, to := rf.FailRow(i, o.Err)
				for k := max(from, 0); k < min(to, n); k++ {
					gone[k] = true
				}
				continue
			}
			st.rejected(ack, i, o.Err)
			ack.Mark(i, flow.Reject)
		}
	}
	sel = slices.DeleteFunc(sel, func(i int) bool { return gone[i] })
	if len(sel) == 0 {
		ack.Done()
		return flow.Batch{}, false, nil
	}
	rec, err := st.join(r.b.Record, r.out, sel)
	if err != nil {
		ack.Abandon()
		return flow.Batch{}, false, table.Errorf(st.src.Table, "ML_PREDICT: %w", err)
	}
	return flow.Batch{Record: rec, Ack: flow.MapAck(ack, sel)}, true, nil
}

// takeBack uncounts n rows Next counted as handed out and did not hand
// out (released, rejected, or a failed batch), and wakes pull: there is
// room for them again.
func (st *stream) takeBack(n int64) {
	st.mu.Lock()
	st.given -= n
	st.mu.Unlock()
	st.cond.Broadcast()
}

// rejected logs a row the model refused under a table without a policy
// for such rows: it is rejected, as trying again gives the same.
func (st *stream) rejected(ack flow.Acker, row int, err error) {
	args := []any{"err", err}
	if ro, ok := ack.(flow.RowOrigins); ok {
		if o, ok := ro.RowOrigin(row); ok {
			args = append(args, "topic", o.Topic, "partition", o.Partition, "offset", o.Offset, "delivery_count", o.DeliveryCount)
		}
	}
	st.log.Warn("rejected a record the model refused", args...)
}

// join is the rows sel of src followed by the same rows of out.
func (st *stream) join(src, out arrow.RecordBatch, sel []int) (arrow.RecordBatch, error) {
	cols, err := flow.Take(st.mem, append(slices.Clone(src.Columns()), out.Columns()...), sel)
	if err != nil {
		return nil, err
	}
	rec := array.NewRecordBatch(st.schema, cols, int64(len(sel)))
	for _, c := range cols {
		c.Release()
	}
	return rec, nil
}

// drop gives back a source batch nobody will read.
func (st *stream) drop(b flow.Batch) {
	b.Ack.Abandon()
	b.Record.Release()
}

// discard gives back a result nobody will read: its records are
// released.
func (st *stream) discard(r result) {
	if r.out != nil {
		r.out.Release()
	}
	st.drop(r.b)
}

// StopFetching: see flow.FetchStopper. The calls in flight end, and the
// records of every batch not handed out are released.
func (st *stream) StopFetching() {
	st.stop()
	if fs, ok := st.in.(flow.FetchStopper); ok {
		fs.StopFetching()
	}
}

// stop ends the pulls and the calls and releases what finished and was
// not handed out.
func (st *stream) stop() {
	st.mu.Lock()
	st.stopped = true
	done := st.done
	st.done = nil
	for _, r := range done {
		st.held -= int(r.b.Record.NumRows())
	}
	st.mu.Unlock()
	st.cancel()
	st.cond.Broadcast()
	for _, r := range done {
		st.discard(r)
	}
	st.signal()
}

// Close ends the calls in flight (their records are released), waits for
// them, closes the model and then the input's stream, which settles what
// is left.
func (st *stream) Close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.mu.Unlock()
	st.stop()
	<-st.pulled
	st.calls.Wait()
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	perr := st.pred.Close()
	err := st.in.Close()
	if err == nil && perr != nil {
		err = fmt.Errorf("model '%s': %w", options.Cut(st.src.Model.Def.Name), perr)
	}
	return err
}
