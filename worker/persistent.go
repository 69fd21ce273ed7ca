package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kshare/kshare/internal/procpool"
)

// Persistent runs long-lived copies of a program, each of which reads rows
// as JSON lines on its standard input and answers each with one JSON line
// on its standard output:
//
//	{"status": "accept" | "release" | "reject", "output": <any JSON>, "error": "why"}
//
// so that what the program loads once (a model, say) serves many rows. A
// copy that dies, answers something that is not such a line (the line is
// logged, quoted), or runs past the row's context is killed with its
// process group and started again for the next row, and the row is
// released. Its standard error is logged line by line with the coordinates
// of the row it is working on when the line is read (a line written just
// before an answer may be read after the next row started). Run is a Func;
// at most Procs rows may run at once. Package procpool runs the copies.
type Persistent struct {
	Command // Argv, Out and Logger as for Command; Encode too
	// Procs is how many copies run, one per concurrent row.
	Procs int

	once sync.Once
	pool *procpool.Pool
}

func (p *Persistent) procs() *procpool.Pool {
	p.once.Do(func() {
		p.pool = &procpool.Pool{Argv: p.Argv, Procs: p.Procs, Logger: p.Logger}
	})
	return p.pool
}

// Run hands one row to an idle copy and waits for its answer.
func (p *Persistent) Run(ctx context.Context, r Row) error {
	// A row that cannot be written is rejected before a copy is taken.
	line, err := p.encode(r)
	if err != nil {
		return err
	}
	a, err := p.procs().Do(ctx, line, r.logAttrs())
	if err != nil {
		if errors.Is(err, procpool.ErrGaveUp) {
			return Stop(err)
		}
		return err
	}
	why := a.Error
	if why == "" {
		why = "no reason given"
	}
	switch a.Status {
	case procpool.Reject:
		return Reject(fmt.Errorf("%s: the worker rejected the row: %s", p.Argv[0], why))
	case procpool.Release:
		return fmt.Errorf("%s: the worker released the row: %s", p.Argv[0], why)
	}
	if p.Out != nil {
		return p.Out.Write(r, a.Output)
	}
	return nil
}

// Close ends every copy: it closes their standard input, which tells a
// well-behaved worker to exit, and kills those still running after grace.
func (p *Persistent) Close(grace time.Duration) {
	p.procs().Close(grace)
}
