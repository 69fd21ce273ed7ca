package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// DefaultInFlight is how many batches a job writes at once by default.
const DefaultInFlight = 8

// Options configure a job.
type Options struct {
	// ID names the job; Statement is the INSERT as written.
	ID, Statement string
	// InFlight bounds the batches written and not yet acknowledged; 0
	// means DefaultInFlight.
	InFlight int
	// Chore, when set, runs every ChoreEvery while the job runs (from a
	// goroutine of the job's, never two at once): upkeep of the sink's,
	// such as forgetting the identities of records settled for good.
	Chore      func(ctx context.Context)
	ChoreEvery time.Duration
	// Merge, for an aggregate written into a flow.MergeWriter, is how
	// each column merges (query.Plan.MergeOps): the changes are written
	// with WriteMerged and the records they reflect. nil writes changes
	// as they are.
	Merge []flow.MergeOp
	// State, when set, is the query's state (query.Options.State), closed
	// once the query is: after the last batch's groups are stored.
	State io.Closer
}

// Job is a running pipeline. It owns its goroutine, its query and its
// writer: Stop (or the end of the input) closes them.
type Job struct {
	opts    Options
	rows    *query.Rows
	w       flow.Writer
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time

	// drain is closed by Drain: no batch waits for a slot any more.
	drain     chan struct{}
	drainOnce sync.Once

	mu       sync.Mutex
	state    table.JobState
	err      error
	stopped  bool
	draining bool
	ended    time.Time
}

var _ table.Job = (*Job)(nil)

// Start runs rows into w until rows ends, a write fails or Stop. The job
// owns rows and w from then on, and closes both. ctx carries values only:
// the job lives until Stop or its end, not ctx's.
func Start(ctx context.Context, rows *query.Rows, w flow.Writer, cancel context.CancelFunc, o Options) *Job {
	if o.InFlight <= 0 {
		o.InFlight = DefaultInFlight
	}
	j := &Job{opts: o, rows: rows, w: w, cancel: cancel, done: make(chan struct{}), drain: make(chan struct{}), started: time.Now(), state: table.JobRunning}
	go j.run(ctx)
	return j
}

// chores runs o.Chore every o.ChoreEvery until stop is closed.
func (j *Job) chores(ctx context.Context, stop <-chan struct{}) {
	t := time.NewTicker(j.opts.ChoreEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			j.opts.Chore(ctx)
		}
	}
}

func (j *Job) ID() string        { return j.opts.ID }
func (j *Job) Statement() string { return j.opts.Statement }

// fail records the job's first error and stops its reading.
func (j *Job) fail(err error) {
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	j.mu.Unlock()
	j.cancel()
}

func (j *Job) run(ctx context.Context) {
	defer close(j.done)
	if j.opts.Chore != nil && j.opts.ChoreEvery > 0 {
		stop, ended := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(ended)
			j.chores(ctx, stop)
		}()
		// Deferred before close(j.done) runs: the chores end first.
		defer func() {
			close(stop)
			<-ended
		}()
	}
	// A batch in flight holds a slot until it is settled.
	slots := make(chan struct{}, j.opts.InFlight)
	if mw, ok := j.w.(flow.MergeWriter); ok && j.opts.Merge != nil {
		j.writeChanges(ctx, func(ctx context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error {
			origins, err := j.rows.ChangeOrigins()
			if err != nil {
				return err
			}
			return mw.WriteMerged(ctx, rec, kinds, j.opts.Merge, origins, done)
		})
	} else if cw, ok := j.w.(flow.ChangelogWriter); ok && j.rows.Plan().Updating() {
		j.writeChanges(ctx, cw.WriteChanges)
	} else if j.rows.Plan().Updating() && j.rows.InsertOnly() {
		// A window aggregation whose rows come once (query.Rows.InsertOnly;
		// INSERT checked it): each batch is appended, and settled once the
		// sink acknowledged it, as an updating one is.
		j.writeChanges(ctx, func(ctx context.Context, rec arrow.RecordBatch, _ []flow.RowKind, done func(error)) error {
			if err := j.w.Write(ctx, rec, done); err != nil {
				return err
			}
			if f, ok := j.w.(flow.Flusher); ok {
				// A writer that acknowledges when it commits (filesystem
				// parts) commits now: the next batch waits for this one.
				f.Flush()
			}
			return nil
		})
	} else {
		j.writeBatches(ctx, slots)
	}
	j.end(ctx, slots)
	if j.opts.State != nil {
		if err := j.opts.State.Close(); err != nil {
			j.fail(fmt.Errorf("job %s: closing its state: %w", j.opts.ID, err))
		}
	}
}

// writeBatches writes the batches of a query without aggregation, up to
// cap(slots) at once: each is held (query.Rows.Hold) until the sink
// acknowledged it.
func (j *Job) writeBatches(ctx context.Context, slots chan struct{}) {
	for j.rows.Next() {
		h, err := j.rows.Hold()
		if err != nil {
			j.fail(fmt.Errorf("job %s: %w", j.opts.ID, err))
			break
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			// Stopped while the sink is behind: the batch was not
			// written.
			release(h)
			h.Done()
			continue
		case <-j.drain:
			// Draining: only what is in flight is finished.
			release(h)
			h.Done()
			continue
		}
		settle := func(err error) {
			if err != nil {
				err = withRecord(h, err)
				release(h)
				if !j.isStopped() {
					j.fail(fmt.Errorf("job %s: %w", j.opts.ID, err))
				}
			}
			h.Done()
			<-slots
		}
		if err := j.writeHeld(ctx, h, nil, settle); err != nil {
			settle(err)
			break
		}
	}
}

// writeHeld writes the rows of h at rows (all of them when rows is nil)
// and calls settle with the outcome. A row a flow.RefusedBySource sink
// refuses (a *flow.RowError: a constraint, a value out of range) goes by
// its source table's policy for rows a query cannot use
// ('scan.on-eval-error': reject, release, or the dead-letter topic), as a
// row the query could not evaluate does, and the batch is written again
// without the rows of its record; otherwise the job fails, naming the row
// and its record. The write again
// runs in a goroutine of its own: settle may be called by the sink's
// flusher, which must not wait for its own next write. It holds the
// batch's slot until settle, which the job's end waits for.
func (j *Job) writeHeld(ctx context.Context, h *query.Held, rows []int, settle func(error)) error {
	rec := h.RecordBatch()
	if rows != nil {
		sub, err := takeRows(rec, rows)
		if err != nil {
			return err
		}
		defer sub.Release() // a sink keeps what it needs of a batch
		rec = sub
	}
	at := func(r int) int {
		if rows == nil {
			return r
		}
		return rows[r]
	}
	rb, bySource := j.w.(flow.RefusedBySource)
	bySource = bySource && rb.RefusedBySource()
	done := func(err error) {
		var re *flow.RowError
		if !bySource || !errors.As(err, &re) || re.Row < 0 || re.Row >= int(rec.NumRows()) {
			settle(err)
			return
		}
		rest, ok := failRefused(h, at(re.Row), withRecord(h, &flow.RowError{Row: at(re.Row), Err: re.Err}), rows)
		if !ok {
			settle(err)
			return
		}
		if len(rest) == 0 {
			settle(nil)
			return
		}
		go func() {
			if werr := j.writeHeld(ctx, h, rest, settle); werr != nil {
				settle(werr)
			}
		}()
	}
	if ow, ok := j.w.(flow.OriginWriter); ok {
		origins, err := heldOrigins(h)
		if err != nil {
			return err
		}
		if rows != nil {
			sub := make([]flow.Origin, len(rows))
			for i, r := range rows {
				sub[i] = origins[r]
			}
			origins = sub
		}
		return ow.WriteFrom(ctx, rec, origins, done)
	}
	return j.w.Write(ctx, rec, done)
}

// failRefused settles the record of h's row refused by its source's
// policy for rows a query cannot use, when that settles rows itself, and
// returns the rows of rows (all of h's when nil) left to write: without
// the rows of that record. ok is false when the policy is to fail.
func failRefused(h *query.Held, refused int, err error, rows []int) (rest []int, ok bool) {
	ack, row := h.Source(refused)
	rf, fails := ack.(flow.RowFailer)
	if !fails || !rf.FailsRows() {
		return nil, false
	}
	from, to := rf.FailRow(row, err)
	if rows == nil {
		rows = make([]int, h.Len())
		for i := range rows {
			rows[i] = i
		}
	}
	for _, r := range rows {
		a, sr := h.Source(r)
		if a == ack && sr >= from && sr < to {
			continue
		}
		rest = append(rest, r)
	}
	return rest, true
}

// takeRows is rec's rows at rows, in order.
func takeRows(rec arrow.RecordBatch, rows []int) (arrow.RecordBatch, error) {
	cols, err := flow.Take(memory.DefaultAllocator, rec.Columns(), rows)
	if err != nil {
		return nil, err
	}
	out := array.NewRecordBatch(rec.Schema(), cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// withRecord is err with the source record of the row a sink refused (a
// *flow.RowError of h's batch) named first, when the source tells its
// records: what a user needs to find the record, and to see that it went
// back to the share group.
func withRecord(h *query.Held, err error) error {
	var re *flow.RowError
	if !errors.As(err, &re) || re.Row < 0 || re.Row >= h.Len() {
		return err
	}
	ack, row := h.Source(re.Row)
	ro, ok := ack.(flow.RowOrigins)
	if !ok {
		return err
	}
	o, ok := ro.RowOrigin(row)
	if !ok {
		return err
	}
	delivery := ""
	if o.DeliveryCount > 0 {
		delivery = fmt.Sprintf(" (delivery %d)", o.DeliveryCount)
	}
	return fmt.Errorf("source record %s[%d]@%d%s: %w", o.Topic, o.Partition, o.Offset, delivery, err)
}

// heldOrigins tells the record and share group of each row of h, for an
// OriginWriter. INSERT checks that the source can tell them; a source that
// cannot (a share group read 'at-most-once' settles nothing and knows no
// records) fails the job here, before its first row is written.
func heldOrigins(h *query.Held) ([]flow.Origin, error) {
	origins := make([]flow.Origin, h.Len())
	for i := range origins {
		ack, row := h.Source(i)
		ro, ok := ack.(flow.RowOrigins)
		if ok {
			origins[i], ok = ro.RowOrigin(row)
		}
		if !ok || origins[i].Group == "" {
			return nil, errNoOrigin
		}
	}
	return origins, nil
}

var errNoOrigin = errors.New("the sink writes exactly once, and needs each row's source record and share group, which this query's source does not tell: " +
	"read a 'kafka-sharegroup' table with 'scan.delivery-guarantee' = 'at-least-once' (its default), or write the sink 'at-least-once'")

// writeChanges writes the batches of an updating query (GROUP BY, windows)
// one at a time with write: a batch's rows replace earlier ones (or, merged,
// add to them), and the query settles
// a batch's records when Next moves past it (query.Rows), so Next comes
// only once the sink acknowledged the batch. A batch the sink failed, or
// that a Stop caught unacknowledged, has its records released
// (query.Rows.ReleaseBatch, which ends the query: its groups still count
// them).
func (j *Job) writeChanges(ctx context.Context, write func(ctx context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error) {
	var kinds []flow.RowKind
	for j.rows.Next() {
		rec := j.rows.RecordBatch()
		kinds = kinds[:0]
		for i := range int(rec.NumRows()) {
			kinds = append(kinds, j.rows.Op(i))
		}
		res := make(chan error, 1)
		err := write(ctx, rec, kinds, func(err error) { res <- err })
		if err == nil {
			select {
			case err = <-res:
			case <-ctx.Done():
				err = context.Cause(ctx)
			}
		}
		if err != nil {
			j.rows.ReleaseBatch()
			if !j.isStopped() {
				j.fail(fmt.Errorf("job %s: %w", j.opts.ID, err))
			}
			return
		}
	}
}

// end finishes the job once its input ended, a write failed or Stop: it
// waits for what is in flight (cap(slots)), closes the writer and the
// query, and says how the job ended.
func (j *Job) end(ctx context.Context, slots chan struct{}) {
	if ctx.Err() == nil {
		// A writer that holds its acknowledgements until it commits
		// (filesystem parts) commits now rather than by its policy.
		if f, ok := j.w.(flow.Flusher); ok {
			f.Flush()
		}
	}
	// The input ended (or a drain ended it): the batches in flight are
	// waited for (taking every slot), unless Stop or a failure (both
	// cancel ctx) comes first. Closing the writer then fails what it has
	// not had acknowledged, so that those batches are released, not
	// waited for.
	taken := 0
	for taken < cap(slots) && ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
			taken++
		case <-ctx.Done():
		}
	}
	j.w.Close()
	for ; taken < cap(slots); taken++ {
		slots <- struct{}{}
	}
	rerr := j.rows.Err()
	j.rows.Close()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil && rerr != nil && !((j.stopped || j.draining) && errors.Is(rerr, context.Canceled)) {
		j.err = fmt.Errorf("job %s: %w", j.opts.ID, rerr)
	}
	switch {
	case j.err != nil:
		j.state = table.JobFailed
	case j.stopped || j.draining:
		j.state = table.JobStopped
	default:
		j.state = table.JobFinished
	}
	j.ended = time.Now()
	j.cancel()
}

// release marks every row of h to be released: past a batch's first
// failure which of its rows arrived is unknown, so all of its records come
// again.
func release(h *query.Held) {
	for i := range h.Len() {
		h.Mark(i, flow.Release)
	}
}

func (j *Job) isStopped() bool {
	stopped, _ := j.status()
	return stopped
}

// Err is why the job failed, or nil.
func (j *Job) Err() error {
	_, err := j.status()
	return err
}

func (j *Job) status() (stopped bool, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stopped, j.err
}

// Wait waits for the job's end or ctx's, and returns the job's error.
func (j *Job) Wait(ctx context.Context) error {
	select {
	case <-j.done:
		return j.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop ends the job and waits for it: what it held and had not had
// acknowledged is released. Stopping an ended job does nothing.
func (j *Job) Stop() {
	j.mu.Lock()
	if j.state == table.JobRunning {
		j.stopped = true
	}
	j.mu.Unlock()
	j.cancel()
	<-j.done
}

// Drain ends the job gently and waits for it: it reads no more records
// (the source releases at once those it fetched and had not put in a
// batch), waits up to timeout for the sink to acknowledge the batches in
// flight, whose records are then accepted, and then stops as Stop does:
// what is still unacknowledged is released. A batch that was read and not
// yet written is released at once. It returns the job's error: nil when it
// drained (its state is then STOPPED) or had finished. Draining an ended
// job does nothing.
func (j *Job) Drain(timeout time.Duration) error {
	j.mu.Lock()
	if j.state == table.JobRunning {
		j.draining = true
	}
	j.mu.Unlock()
	j.drainOnce.Do(func() { close(j.drain) })
	j.rows.StopFetching()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-j.done:
	case <-t.C:
		j.Stop()
	}
	return j.Err()
}

// Stats counts the job's work so far.
func (j *Job) Stats() table.JobStats {
	qs := j.rows.Stats()
	ws := j.w.Stats()
	j.mu.Lock()
	defer j.mu.Unlock()
	end := time.Now()
	if !j.ended.IsZero() {
		end = j.ended
	}
	return table.JobStats{State: j.state, Read: qs.Rows, Written: ws.Written, Acked: ws.Acked,
		Accepted: qs.Source.Accepted, Released: qs.Source.Released, Rejected: qs.Source.Rejected,
		Errors: ws.Failed, Applied: qs.Applied, Restored: qs.Restored,
		Kept: kept(j.opts.State, qs), Err: j.err, Uptime: end.Sub(j.started), SourceDown: qs.Source.Unreachable, Sink: ws, Model: qs.Source.Model}
}

// kept is what a job with a state directory says of its state: the
// query's checkpoints and the folder's size.
func kept(st io.Closer, qs query.Stats) table.KeptStats {
	k := table.KeptStats{Dir: stateDir(st), Stored: qs.Committed, Groups: qs.Groups, Last: qs.LastCommit, Took: qs.LastCommitTook, Awaiting: qs.Awaiting}
	if s, ok := st.(interface{ Size() int64 }); ok {
		k.Bytes = s.Size()
	}
	return k
}

// stateDir is the folder of a job's state, "" for none.
func stateDir(st io.Closer) string {
	if d, ok := st.(interface{ Dir() string }); ok {
		return d.Dir()
	}
	return ""
}
