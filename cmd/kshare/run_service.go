package main

// This file is kshare run's service: the script's jobs, their ends, the
// drain and /readyz.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/pipeline"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
)

// runner is one kshare run: its jobs, and where it is in its life for
// /readyz.
type runner struct {
	log   *slog.Logger
	drain time.Duration

	mu    sync.Mutex
	jobs  []table.Job
	phase runPhase
}

type runPhase int

const (
	phaseStarting runPhase = iota // running the scripts' statements
	phaseRunning                  // every job started
	phaseStopping                 // draining, or a job ended
)

// fail logs err, the reason the run ends badly, and turns it into exit
// status 1 (the log has said it all); nil stays nil.
func (r *runner) fail(err error) error {
	if err == nil {
		return nil
	}
	r.log.Error("kshare run failed", "err", err)
	return exitError{code: 1}
}

func (r *runner) run(ctx context.Context, f runFlags) error {
	// The scripts are read and checked whole before anything runs: a
	// mistake at their end must not leave the jobs of their start
	// running.
	texts := make([]string, len(f.scripts))
	for i, s := range f.scripts {
		b, err := os.ReadFile(s.name)
		if err != nil {
			return fmt.Errorf("reading -f %s: %w", s.name, err)
		}
		texts[i] = string(b)
	}
	if err := checkRunScripts(f.scripts, texts); err != nil {
		return err
	}
	eng := engine{kshare.New(kshare.WithLogger(r.log))}
	if f.metricsAddr != "" {
		m, err := startMetrics(f.metricsAddr, map[string]http.Handler{
			"/healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }),
			"/readyz":  http.HandlerFunc(r.serveReady),
		}, pipeline.Collector(eng.Jobs))
		if err != nil {
			return err
		}
		defer m.stop()
		r.log.Info("serving metrics and health", "metrics", "http://"+m.addr.String()+"/metrics",
			"healthz", "http://"+m.addr.String()+"/healthz", "readyz", "http://"+m.addr.String()+"/readyz")
	}
	if f.stateDir != "" {
		if err := eng.Set(query.SettingStateDir, f.stateDir); err != nil {
			return fmt.Errorf("--state-dir: %w", err)
		}
	}
	for i, s := range f.scripts {
		if err := execScript(ctx, eng, s.name, texts[i], r.result); err != nil {
			// What started is stopped: its records go back to the group.
			r.stopAll()
			return err
		}
	}
	return r.wait(ctx)
}

// checkRunScripts refuses, before anything runs, a script that does not
// parse, a SELECT (a service has nowhere to print its rows) and scripts
// without an INSERT (nothing would run).
func checkRunScripts(scripts []scriptSource, texts []string) error {
	inserts := 0
	var names []string
	for i, s := range scripts {
		names = append(names, s.name)
		for _, st := range statements(texts[i]) {
			sts, err := parse.Parse(st.Text)
			if err != nil {
				return &sqlshell.ScriptError{Name: s.name, Line: st.Line, Col: st.Col, Err: err}
			}
			for _, x := range sts {
				switch x.(type) {
				case *table.Select:
					return &sqlshell.ScriptError{Name: s.name, Line: st.Line, Col: st.Col, Err: errRunSelect}
				case *table.Insert:
					inserts++
				}
			}
		}
	}
	if inserts == 0 {
		return fmt.Errorf("%s: %w", strings.Join(names, ", "), errNoInsert)
	}
	return nil
}

// result logs what a statement of the script did, and keeps the job an
// INSERT started.
func (r *runner) result(res *table.Result) {
	if res.Job != nil {
		r.mu.Lock()
		r.jobs = append(r.jobs, res.Job)
		r.mu.Unlock()
		r.log.Info("job started", "job", res.Job.ID(), "statement", res.Job.Statement())
		return
	}
	if len(res.Rows) > 0 {
		r.log.Info("result", "columns", res.Columns, "rows", res.Rows)
	}
	if res.Message != "" {
		r.log.Info(res.Message)
	}
}

func (r *runner) setPhase(p runPhase) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

// wait runs the jobs until they all finish their input (nil), one fails
// (the others are drained, and its error returned) or ctx ends (a signal:
// every job is drained, and nil returned unless a job failed meanwhile).
func (r *runner) wait(ctx context.Context) error {
	r.mu.Lock()
	jobs := slices.Clone(r.jobs)
	r.phase = phaseRunning
	r.mu.Unlock()
	// One waiter per job, each ending with its job: every job is stopped
	// or drained before wait returns.
	ended := make(chan table.Job, len(jobs))
	var waiters sync.WaitGroup
	defer waiters.Wait()
	for _, j := range jobs {
		waiters.Go(func() {
			_ = j.Wait(context.Background())
			ended <- j
		})
	}
	left := len(jobs)
	var failed error
	for left > 0 && failed == nil {
		select {
		case j := <-ended:
			left--
			failed = r.ended(j)
		case <-ctx.Done():
			r.log.Info("draining", "cause", context.Cause(ctx).Error(), "drain_timeout", r.drain.String())
			r.setPhase(phaseStopping)
			forced := r.drainAll(signalAgain(ctx))
			for ; left > 0; left-- {
				if err := r.ended(<-ended); err != nil && failed == nil {
					failed = err
				}
			}
			switch {
			case failed != nil:
				return failed
			case forced:
				return errStoppedAtOnce
			}
			r.log.Info("drained; exiting")
			return nil
		}
	}
	if failed != nil {
		// The others finish what they have in flight before the process
		// goes.
		r.setPhase(phaseStopping)
		r.drainAll(signalAgain(ctx))
		for ; left > 0; left-- {
			r.ended(<-ended)
		}
		return failed
	}
	r.log.Info("every job finished its input; exiting")
	return nil
}

// ended logs how job j ended and returns its error.
func (r *runner) ended(j table.Job) error {
	st := j.Stats()
	attrs := []any{"job", j.ID(), "state", string(st.State), "rows_written", st.Acked, "accepted", st.Accepted, "released", st.Released, "rejected", st.Rejected}
	if st.Sink.Duplicates > 0 {
		// An exactly-once sink found these rows' records written already.
		attrs = append(attrs, "duplicates_skipped", st.Sink.Duplicates)
	}
	if st.Applied > 0 {
		// An aggregate merged exactly once (or kept in a state directory)
		// found these records, delivered again, in the destination (or
		// the state) already: not folded again.
		attrs = append(attrs, "applied_skipped", st.Applied)
	}
	if st.Restored > 0 {
		attrs = append(attrs, "groups_restored", st.Restored)
	}
	if st.Err != nil {
		r.log.Error("job failed", append(attrs, "err", st.Err)...)
		return st.Err
	}
	r.log.Info("job ended", attrs...)
	return nil
}

// drainAll drains every job at once, each within r.drain, unless again
// closes first (a second signal): then every job stops at once, what the
// sinks have not acknowledged is released, and drainAll reports that it
// forced them.
func (r *runner) drainAll(again <-chan struct{}) (forced bool) {
	r.mu.Lock()
	jobs := slices.Clone(r.jobs)
	r.mu.Unlock()
	// Each drain says when it returned; drainAll waits for them all.
	ended := make(chan struct{}, len(jobs))
	for _, j := range jobs {
		go func() {
			_ = j.Drain(r.drain) // its error is the job's, logged by ended
			ended <- struct{}{}
		}()
	}
	for left := len(jobs); left > 0; {
		select {
		case <-ended:
			left--
		case <-again:
			again, forced = nil, true
			r.log.Warn("second signal: stopping at once; what the sinks have not acknowledged is released")
			r.stopAll()
		}
	}
	return forced
}

// stopAll stops every job at once.
func (r *runner) stopAll() {
	r.mu.Lock()
	jobs := slices.Clone(r.jobs)
	r.mu.Unlock()
	for _, j := range jobs {
		j.Stop()
	}
}

// ready says whether the run is ready, and why not: every job runs, and
// the brokers of its source and sink answer.
func (r *runner) ready() (string, bool) {
	r.mu.Lock()
	phase, jobs := r.phase, slices.Clone(r.jobs)
	r.mu.Unlock()
	switch phase {
	case phaseStarting:
		return "starting: running the script's statements", false
	case phaseStopping:
		return "stopping: draining the jobs", false
	}
	for _, j := range jobs {
		st := j.Stats()
		switch {
		case st.State != table.JobRunning:
			return fmt.Sprintf("job %s is %s", j.ID(), st.State), false
		case !st.SourceDown.IsZero():
			return fmt.Sprintf("job %s: no broker of its source has answered since %s", j.ID(), st.SourceDown.Format(time.RFC3339)), false
		case !st.Sink.Unreachable.IsZero():
			return fmt.Sprintf("job %s: no broker of its sink has answered since %s", j.ID(), st.Sink.Unreachable.Format(time.RFC3339)), false
		}
	}
	return fmt.Sprintf("%s running", count(len(jobs), "job")), true
}

// serveReady is /readyz: 200 when ready, else 503 with the reason.
func (r *runner) serveReady(w http.ResponseWriter, _ *http.Request) {
	why, ok := r.ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %s\n", why)
		return
	}
	fmt.Fprintf(w, "ready: %s\n", why)
}

// newLogger is kshare run's log: log/slog's text or JSON on w.
func newLogger(w io.Writer, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}
