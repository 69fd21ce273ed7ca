package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/query"
)

// Row is one row handed to a worker: its values by column name (query.Row)
// and, when the source can tell, the record it came from.
type Row struct {
	query.Row
	origin    flow.Origin
	hasOrigin bool
}

// Origin is the record behind the row: topic, partition, offset, delivery
// count and key. ok is false when the table's source does not tell.
func (r Row) Origin() (o flow.Origin, ok bool) { return r.origin, r.hasOrigin }

// Func works on one row. It returns nil when the row is done (its record
// is accepted), an error to have the row delivered again (released), or an
// error wrapped with Reject to have it never delivered again (rejected). A
// panic releases the row and is logged with its stack. ctx ends at the
// row's timeout (Config.Timeout) and when the pool stops (see Config.Drain).
type Func func(ctx context.Context, r Row) error

// ErrReject marks an error as final: the row's record is rejected, never
// delivered again. Wrap an error with Reject, or with fmt.Errorf("...: %w",
// worker.ErrReject).
var ErrReject = errors.New("rejected")

// ErrStop marks an error after which going on is pointless (a worker
// program that cannot start, say): the row is released, no new row starts,
// running rows get Config.Drain to finish, and Run returns the error. Wrap
// an error with Stop.
var ErrStop = errors.New("stop")

// Stop wraps err so that the pool stops after releasing the row.
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (e stopError) Error() string        { return e.err.Error() }
func (e stopError) Unwrap() []error      { return []error{e.err, ErrStop} }
func (e stopError) Is(target error) bool { return target == ErrStop }

// Reject wraps err so that the row is rejected rather than released.
func Reject(err error) error {
	if err == nil {
		return ErrReject
	}
	return rejectError{err}
}

type rejectError struct{ err error }

func (e rejectError) Error() string        { return e.err.Error() }
func (e rejectError) Unwrap() []error      { return []error{e.err, ErrReject} }
func (e rejectError) Is(target error) bool { return target == ErrReject }

// Config are a pool's settings.
type Config struct {
	// Concurrency is how many rows run at once; at least 1.
	Concurrency int
	// Timeout bounds each row: its context ends after Timeout, and a row
	// that fails after that is logged as timed out. 0: no bound.
	Timeout time.Duration
	// Drain is how long rows already running may go on once the context
	// given to Run ends: no new row starts, and after Drain the running
	// rows' contexts end too. 0 ends them at once.
	Drain time.Duration
	// StopQuery, if set, cancels the context the query was started with;
	// a Func's ErrStop calls it, so that a Run waiting for the next row
	// stops too. Without it such a Run stops at the next row.
	StopQuery context.CancelCauseFunc
	// Logger receives a line per row that failed, timed out, panicked or
	// was rejected, with the record's coordinates; nil means slog.Default().
	Logger *slog.Logger
}

// ErrConcurrency is returned for a Config.Concurrency below 1.
var ErrConcurrency = errors.New("concurrency must be at least 1")

// Stats count a pool's rows.
type Stats struct {
	// Accepted, Released and Rejected count rows by outcome; Running
	// counts rows started and not finished.
	Accepted, Released, Rejected, Running int64
	// Panics and TimedOut count released rows whose function panicked or
	// ran past Config.Timeout.
	Panics, TimedOut int64
	// Query is the query's counts (records, acknowledgements, ...).
	Query query.Stats
	// First is when the first row started, Last when the last one so
	// far finished; zero before.
	First, Last time.Time
}

// Done is the rows finished, whatever their outcome.
func (s Stats) Done() int64 { return s.Accepted + s.Released + s.Rejected }

// Rate is rows finished per second from the first row's start to the last
// one's end: the pool's pace without the time the query took to join its
// group.
func (s Stats) Rate() float64 {
	if d := s.Last.Sub(s.First).Seconds(); d > 0 {
		return float64(s.Done()) / d
	}
	return 0
}

// Pool runs a Func over the rows of one query; see Run.
type Pool struct {
	cfg  Config
	rows *query.Rows
	fn   Func
	log  *slog.Logger

	accepted, released, rejected, running atomic.Int64
	panics, timedOut                      atomic.Int64
	stop                                  context.CancelCauseFunc // ends Run's context: see ErrStop
	first, last                           atomic.Int64            // Unix nanoseconds
}

// New returns a pool that runs fn on the rows of rows with cfg. Run starts
// it; Stats may be read from any goroutine meanwhile.
func New(rows *query.Rows, cfg Config, fn Func) (*Pool, error) {
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("%w, got %d", ErrConcurrency, cfg.Concurrency)
	}
	if fn == nil {
		return nil, errors.New("worker: nil function")
	}
	if err := CheckPlan(rows.Plan()); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Pool{cfg: cfg, rows: rows, fn: fn, log: log}, nil
}

// CheckPlan reports a query whose rows a pool cannot work on: an updating
// one (query.ErrUpdating). New checks it; a caller that checks the plan
// before it runs the query refuses it without joining the share group.
func CheckPlan(p *query.Plan) error {
	if p.Updating() {
		// A worker settles each row's records by the row's outcome; an
		// aggregate's row is a change of a group that reflects many.
		return fmt.Errorf("worker: %w: a worker runs its function on rows of one record each, and an aggregate's rows are changes of groups; run GROUP BY and aggregates in the shell", query.ErrUpdating)
	}
	return nil
}

// Stats counts the pool's rows so far.
func (p *Pool) Stats() Stats {
	return Stats{
		Accepted: p.accepted.Load(), Released: p.released.Load(), Rejected: p.rejected.Load(),
		Running: p.running.Load(), Panics: p.panics.Load(), TimedOut: p.timedOut.Load(),
		Query: p.rows.Stats(), First: unixNano(p.first.Load()), Last: unixNano(p.last.Load()),
	}
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Run works through the query's rows until it ends (LIMIT, max rows, idle
// timeout, an error) or ctx ends, then waits for the running rows (at most
// Config.Drain after ctx ended), settles them, and closes the query. Rows
// taken from the query and not started are released. The error is the
// query's (context.Canceled when ctx ended it), or nil.
//
// rows should have been started with ctx (or a context that ends with it),
// so that a Run waiting for the next row stops when ctx ends.
func (p *Pool) Run(ctx context.Context) (Stats, error) {
	ctx, p.stop = context.WithCancelCause(ctx)
	defer p.stop(nil)
	// Running rows do not end with ctx: they have Config.Drain to finish.
	base, stopRows := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRows()
	finished := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		t := time.NewTimer(p.cfg.Drain)
		defer t.Stop()
		select {
		case <-finished:
		case <-t.C:
			stopRows()
		}
	})

	tasks := make(chan task)
	var workers sync.WaitGroup
	for range p.cfg.Concurrency {
		workers.Go(func() {
			for t := range tasks {
				if ctx.Err() != nil {
					// The pool is stopping (ctx ended, or a Func's
					// ErrStop). dispatch may have handed this row over
					// as it happened: select picks at random among
					// ready cases, so only a check here keeps "no new
					// row starts" true.
					p.released.Add(1)
					t.b.finish(t.i, flow.Release)
					continue
				}
				p.run(base, t)
			}
		})
	}
	p.dispatch(ctx, tasks)
	close(tasks)
	workers.Wait()
	close(finished)
	watch.Wait()
	p.rows.Close()
	err := p.rows.Err()
	if cause := context.Cause(ctx); errors.Is(cause, ErrStop) || (cause != nil && (err == nil || errors.Is(err, context.Canceled))) {
		// A Func stopped the pool, or ctx ended while a batch was being
		// handed out, before the query saw it, or the query saw only a
		// plain cancellation: the cause (a signal, say) says why.
		err = cause
	}
	return p.Stats(), err
}

// task is row i of a held batch.
type task struct {
	b *batch
	i int
}

// batch is a held batch and the outcome of each of its rows so far; the
// worker that finishes its last row settles it.
type batch struct {
	h     *query.Held
	marks []flow.Disposition
	left  atomic.Int32
}

func (b *batch) finish(i int, d flow.Disposition) {
	// Each row's mark is written by the one worker that ran it; the
	// atomic countdown orders those writes before the settling.
	b.marks[i] = d
	if b.left.Add(-1) == 0 {
		for j, d := range b.marks {
			if d != flow.Accept {
				b.h.Mark(j, d)
			}
		}
		b.h.Done()
	}
}

// dispatch hands rows to the workers, one at a time as they ask for them,
// until the query ends or ctx does.
func (p *Pool) dispatch(ctx context.Context, tasks chan<- task) {
	for p.rows.Next() {
		h, err := p.rows.Hold()
		if err != nil {
			// Next returned a batch, so there is one to hold.
			panic(fmt.Sprintf("worker: hold after Next: %v", err))
		}
		b := &batch{h: h, marks: make([]flow.Disposition, h.Len())}
		b.left.Store(int32(h.Len()))
		for i := 0; i < h.Len(); i++ {
			select {
			case tasks <- task{b, i}:
				continue
			case <-ctx.Done():
			}
			// Stopping: what was not started goes back at once.
			for j := i; j < h.Len(); j++ {
				p.released.Add(1)
				b.finish(j, flow.Release)
			}
			return
		}
	}
}

// run runs the function on one row and records its outcome.
func (p *Pool) run(base context.Context, t task) {
	p.running.Add(1)
	defer p.running.Add(-1)
	p.first.CompareAndSwap(0, time.Now().UnixNano())
	defer func() {
		// Rows finish out of order: keep the latest end.
		now := time.Now().UnixNano()
		for {
			old := p.last.Load()
			if old >= now || p.last.CompareAndSwap(old, now) {
				return
			}
		}
	}()
	row := Row{Row: t.b.h.Row(t.i)}
	if ack, src := t.b.h.Source(t.i); ack != nil {
		if o, ok := ack.(flow.RowOrigins); ok {
			row.origin, row.hasOrigin = o.RowOrigin(src)
		}
	}
	ctx, cancel := base, context.CancelFunc(func() {})
	if p.cfg.Timeout > 0 {
		ctx, cancel = context.WithTimeout(base, p.cfg.Timeout)
	}
	stack, err := call(ctx, p.fn, row)
	timedOut := err != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) && base.Err() == nil
	cancel()
	d := flow.Accept
	switch {
	case err == nil:
		p.accepted.Add(1)
	case errors.Is(err, ErrStop):
		d = flow.Release
		p.released.Add(1)
		p.log.Error("row released; stopping", append(row.logAttrs(), "err", err)...)
		p.stop(err)
		if p.cfg.StopQuery != nil {
			p.cfg.StopQuery(err)
		}
	case stack != nil:
		d = flow.Release
		p.released.Add(1)
		p.panics.Add(1)
		p.log.Error("row released: the worker panicked", append(row.logAttrs(), "panic", err, "stack", string(stack))...)
	case errors.Is(err, ErrReject):
		d = flow.Reject
		p.rejected.Add(1)
		p.log.Warn("row rejected", append(row.logAttrs(), "err", err)...)
	case timedOut:
		d = flow.Release
		p.released.Add(1)
		p.timedOut.Add(1)
		p.log.Warn("row released: it ran past the timeout", append(row.logAttrs(), "timeout", p.cfg.Timeout, "err", err)...)
	default:
		d = flow.Release
		p.released.Add(1)
		p.log.Warn("row released", append(row.logAttrs(), "err", err)...)
	}
	t.b.finish(t.i, d)
}

// call runs fn, turning a panic into an error with its stack.
func call(ctx context.Context, fn Func, row Row) (stack []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			stack, err = debug.Stack(), fmt.Errorf("panic: %v", v)
		}
	}()
	return nil, fn(ctx, row)
}

// logAttrs are the row's coordinates for a log line.
func (r Row) logAttrs() []any {
	if !r.hasOrigin {
		return []any{"row", r.Index()}
	}
	o := r.origin
	return []any{"topic", o.Topic, "partition", o.Partition, "offset", o.Offset, "delivery_count", o.DeliveryCount}
}

// Run runs fn over rows with cfg; see Pool.Run.
func Run(ctx context.Context, rows *query.Rows, cfg Config, fn Func) (Stats, error) {
	p, err := New(rows, cfg, fn)
	if err != nil {
		rows.Close()
		return Stats{}, err
	}
	return p.Run(ctx)
}
