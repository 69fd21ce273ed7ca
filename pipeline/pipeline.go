// Package pipeline runs INSERT INTO ... SELECT jobs: it reads a query's
// result batches, writes each to a sink and settles the batch's source
// records only once the sink acknowledged every row of it. A batch the sink
// refuses, or that is still unacknowledged when the job stops, has its
// records released, never accepted: the broker hands them out again. That
// is the delivery promise across the hop: at least once, end to end.
//
// Several batches are in flight at once (Options.InFlight): a batch is taken
// out of the query with query.Rows.Hold, so that reading goes on while the
// sink's acknowledgements come back.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

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
}

// Job is a running pipeline. It owns its goroutine, its query and its
// writer: Stop (or the end of the input) closes them.
type Job struct {
	opts    Options
	rows    *query.Rows
	w       table.Writer
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time

	mu      sync.Mutex
	state   table.JobState
	err     error
	stopped bool
	ended   time.Time
}

var _ table.Job = (*Job)(nil)

// Start runs rows into w until rows ends, a write fails or Stop. The job
// owns rows and w from then on, and closes both. ctx carries values only:
// the job lives until Stop or its end, not ctx's.
func Start(ctx context.Context, rows *query.Rows, w table.Writer, cancel context.CancelFunc, o Options) *Job {
	if o.InFlight <= 0 {
		o.InFlight = DefaultInFlight
	}
	j := &Job{opts: o, rows: rows, w: w, cancel: cancel, done: make(chan struct{}), started: time.Now(), state: table.JobRunning}
	go j.run(ctx)
	return j
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
	slots := make(chan struct{}, j.opts.InFlight)
	var inflight sync.WaitGroup
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
		}
		inflight.Add(1)
		settle := func(err error) {
			if err != nil {
				release(h)
				if !j.isStopped() {
					j.fail(fmt.Errorf("job %s: %w", j.opts.ID, err))
				}
			}
			h.Done()
			<-slots
			inflight.Done()
		}
		if err := j.w.Write(ctx, h.RecordBatch(), settle); err != nil {
			settle(err)
			break
		}
	}
	if j.isStopped() || j.Err() != nil {
		// Closing the writer fails what it has not had acknowledged, so
		// that those batches are released, not waited for.
		j.w.Close()
		inflight.Wait()
	} else {
		// A writer that holds its acknowledgements until it commits
		// (filesystem parts) commits now rather than by its policy.
		if f, ok := j.w.(table.Flusher); ok {
			f.Flush()
		}
		inflight.Wait()
		j.w.Close()
	}
	rerr := j.rows.Err()
	j.rows.Close()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil && rerr != nil && !(j.stopped && errors.Is(rerr, context.Canceled)) {
		j.err = fmt.Errorf("job %s: %w", j.opts.ID, rerr)
	}
	switch {
	case j.err != nil:
		j.state = table.JobFailed
	case j.stopped:
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
		h.Mark(i, table.Release)
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
		Errors: ws.Failed, Err: j.err, Uptime: end.Sub(j.started)}
}
