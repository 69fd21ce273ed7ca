package filesystem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/rowfile"
	"github.com/kshare/kshare/table"
)

// policy is when a part is committed; see sinkspec.FilesystemOptions.
type policy struct {
	fileSize, maxHeldRows       int64
	rollover, check, inactivity time.Duration
}

// ErrNotCommitted is what the done callbacks of a part's batches get when
// the writer closes before the part was committed: their records are
// released and come again.
var ErrNotCommitted = errors.New("part file not committed")

// writer writes parts one after the other. Write and the policy's timers
// (run by the writer's goroutine) take turns under mu; a part is
// committed by whichever of them finds it due.
type writer struct {
	s    *sink
	name string // the uuid in the parts' names

	mu     sync.Mutex
	part   *part // the open part, or nil
	seq    int   // the next part's number
	last   time.Time
	closed bool

	idle   *time.Timer
	stop   chan struct{}
	exited chan struct{}

	written, acked, failed atomic.Int64
}

var (
	_ flow.Writer  = (*writer)(nil)
	_ flow.Flusher = (*writer)(nil)
)

func newWriter(s *sink) (*writer, error) {
	w := &writer{s: s, name: uuid.NewString(), stop: make(chan struct{}), exited: make(chan struct{})}
	w.idle = time.NewTimer(time.Hour)
	w.idle.Stop()
	go w.run()
	return w, nil
}

// run commits the open part when it is quiet for the inactivity interval
// or older than the rollover interval, until Close.
func (w *writer) run() {
	defer close(w.exited)
	tick := time.NewTicker(w.s.policy.check)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.rollIfOld()
		case <-w.idle.C:
			w.rollIfQuiet()
		case <-w.stop:
			return
		}
	}
}

func (w *writer) rollIfOld() {
	w.mu.Lock()
	w.commitIf(w.part != nil && time.Since(w.part.opened) >= w.s.policy.rollover)
}

// rollIfQuiet commits a part that got no rows for the inactivity
// interval, or waits for the rest of it.
func (w *writer) rollIfQuiet() {
	w.mu.Lock()
	quiet := time.Since(w.last)
	if w.part != nil && quiet < w.s.policy.inactivity {
		w.idle.Reset(w.s.policy.inactivity - quiet)
	}
	w.commitIf(w.part != nil && quiet >= w.s.policy.inactivity)
}

// commitIf commits the open part when due, and unlocks mu; the part's
// done callbacks are called after the unlock.
func (w *writer) commitIf(due bool) {
	var settle func()
	if due {
		settle = w.commit()
	}
	w.mu.Unlock()
	if settle != nil {
		settle()
	}
}

// Write appends rec's rows to the open part (opening one if none is), and
// commits it when the rows or bytes it holds reach the policy's bounds.
// done is called when the part holding the rows is committed, or fails.
func (w *writer) Write(_ context.Context, rec arrow.RecordBatch, done func(error)) error {
	n := rec.NumRows()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return table.Errorf(w.s.table, "write after close")
	}
	if w.part == nil {
		p, err := w.openPart()
		if err != nil {
			w.mu.Unlock()
			return err
		}
		w.part = p
		w.idle.Reset(w.s.policy.inactivity)
	}
	p := w.part
	if err := p.enc.write(rec); err != nil {
		var re *flow.RowError
		if errors.As(err, &re) {
			// Nothing of rec was written: the part goes on.
			w.mu.Unlock()
			return table.Errorf(w.s.table, "%w", err)
		}
		// The part is broken: fail it, and rec with it.
		p.dones = append(p.dones, done)
		p.rows += n
		w.written.Add(n)
		settle := w.fail(fmt.Errorf("writing %s: %w", p.tmp, err))
		w.mu.Unlock()
		settle()
		return nil
	}
	w.written.Add(n)
	p.dones = append(p.dones, done)
	p.rows += n
	w.last = time.Now()
	w.commitIf(p.enc.size() >= w.s.policy.fileSize || p.rows >= w.s.policy.maxHeldRows)
	return nil
}

// Flush commits the open part now: the end of a job's input need not wait
// for the policy.
func (w *writer) Flush() {
	w.mu.Lock()
	w.commitIf(w.part != nil)
}

// Close stops the timers and discards the open part, which was not
// committed: its batches' done callbacks get ErrNotCommitted, so their
// records are released. A job calls Flush first when its input ended.
func (w *writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	var settle func()
	if w.part != nil {
		settle = w.fail(table.Errorf(w.s.table, "%w (the writer closed first)", ErrNotCommitted))
	}
	w.mu.Unlock()
	close(w.stop)
	<-w.exited
	w.idle.Stop()
	if settle != nil {
		settle()
	}
	return nil
}

func (w *writer) Stats() flow.SinkStats {
	return flow.SinkStats{Written: w.written.Load(), Acked: w.acked.Load(), Failed: w.failed.Load()}
}

// part is a part file being written.
type part struct {
	tmp, final string
	f          *os.File
	enc        partEncoder
	opened     time.Time
	rows       int64
	dones      []func(error)
}

// openPart creates the next part under its temporary name.
func (w *writer) openPart() (*part, error) {
	base := fmt.Sprintf("part-%s-%d.%s", w.name, w.seq, w.s.ext)
	w.seq++
	p := &part{
		tmp:    filepath.Join(w.s.dir, "."+base+".inprogress"),
		final:  filepath.Join(w.s.dir, base),
		opened: time.Now(),
	}
	f, err := os.OpenFile(p.tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, table.Errorf(w.s.table, "creating a part file: %w", err)
	}
	p.f = f
	enc, err := w.s.newPartEncoder(f)
	if err != nil {
		f.Close()
		os.Remove(p.tmp)
		return nil, table.Errorf(w.s.table, "starting %s: %w", p.tmp, err)
	}
	p.enc = enc
	return p, nil
}

// commit ends the open part: the format's end (parquet's footer), a sync,
// the rename to its final name and a sync of the directory. It returns
// what calls the part's done callbacks, with nil once the part is
// durable under its final name, else with the error. mu is held.
func (w *writer) commit() func() {
	p := w.part
	if p.rows == 0 {
		// Only a row the format refused reached it: no file to keep.
		return w.fail(errors.New("empty part"))
	}
	err := p.enc.finish()
	if err == nil {
		err = p.f.Sync()
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rowfile.Publish(p.tmp, p.final)
	}
	if err != nil {
		return w.fail(fmt.Errorf("committing %s: %w", p.final, err))
	}
	w.part = nil
	w.acked.Add(p.rows)
	return func() {
		for _, done := range p.dones {
			done(nil)
		}
	}
}

// fail drops the open part (its file removed; a rename that failed may
// have left it under its final name, which then holds whole rows, never a
// cut one) and returns what fails its batches. mu is held.
func (w *writer) fail(err error) func() {
	p := w.part
	w.part = nil
	p.enc.abort()
	p.f.Close()
	os.Remove(p.tmp)
	w.failed.Add(p.rows)
	err = table.Errorf(w.s.table, "%w", err)
	return func() {
		for _, done := range p.dones {
			done(err)
		}
	}
}
