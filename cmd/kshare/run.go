package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/kshare/kshare/options"
)

func init() {
	register(&command{
		name:    "run",
		summary: "run a script's INSERT INTO ... SELECT pipelines as a service: logs, health endpoints, SIGTERM drains",
		run:     runRunCmd,
	})
}

const runSynopsis = "-f FILE... [--state-dir DIR] [--log-format text|json] [--metrics-addr HOST:PORT] [--drain-timeout D]"

// defaultDrainTimeout is --drain-timeout's default: within the 30 s that
// Kubernetes (terminationGracePeriodSeconds) and systemd (TimeoutStopSec,
// 90 s) wait after SIGTERM before they kill, with room for leaving the
// group after it.
const defaultDrainTimeout = 10 * time.Second

// errRunSelect is the error of a SELECT in a kshare run script.
var errRunSelect = errors.New("a SELECT has nowhere to print its rows in kshare run; write them to a table with INSERT INTO ... SELECT (a 'print' table prints them), or run the SELECT in the shell (kshare -f)")

// errStoppedAtOnce is kshare run's error when a second signal cut the
// drain short.
var errStoppedAtOnce = errors.New("stopped at once by a second signal: what the sinks had not acknowledged was released, and comes again")

// errNoInsert is the error of a kshare run script without an INSERT.
var errNoInsert = errors.New("no INSERT INTO ... SELECT to run: kshare run runs a script's pipelines, which its CREATE TABLE and SET statements prepare")

type runFlags struct {
	scripts     []scriptSource
	logFormat   string
	metricsAddr string
	drain       time.Duration
	stateDir    string
	help        bool
}

func runRunCmd(ctx context.Context, std stdio, args []string) error {
	var f runFlags
	fs := newFlagSet("run", runSynopsis, std)
	// As kshare export's: a usage error is one line and a pointer to -h.
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "see kshare run --help\n") }
	fs.BoolVar(&f.help, "h", false, "print this help")
	fs.BoolVar(&f.help, "help", false, "print this help")
	fs.Var(scriptFlag{list: &f.scripts, file: true}, "f", "run the statements of `file` (CREATE TABLE, SET, INSERT INTO ... SELECT); repeatable, in order")
	fs.StringVar(&f.stateDir, "state-dir", "", "keep each aggregate job's state in a folder of `dir`, so that kshare run started again on it continues the counts (the 'state-dir' setting; a SET in the script comes after it)")
	fs.StringVar(&f.logFormat, "log-format", "text", "how the log on standard error is written: text (key=value) or json (one object per line)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz at http://`host:port` while running")
	options.DurationVar(fs, &f.drain, "drain-timeout", defaultDrainTimeout, "on SIGTERM or SIGINT, wait this `duration` for the sink to acknowledge the batches in flight, then release what is left")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if f.help {
		fmt.Fprintf(fs.Output(), "usage: kshare run %s\n\n", runSynopsis)
		fmt.Fprint(fs.Output(), runHelp)
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	switch {
	case len(f.scripts) == 0:
		return usagef(fs, "-f is required: the script of the pipelines to run")
	case f.logFormat != "text" && f.logFormat != "json":
		return usagef(fs, "--log-format must be text or json, got %q", f.logFormat)
	}
	if err := checkMetricsAddr(fs, f.metricsAddr); err != nil {
		return err
	}
	r := &runner{log: newLogger(std.err, f.logFormat), drain: f.drain}
	return r.fail(r.run(ctx, f))
}

const runHelp = `Runs the statements of the -f files (CREATE TABLE, SET, INSERT INTO ...
SELECT) and then their INSERT jobs in the foreground, as a service: under
systemd, in a container. Several copies of one pipeline with the same
'share-group-id' split its records between them: the broker hands each
record to one of them.

  - The log (slog's) goes to standard error, as text or JSON lines.
  - A SELECT in the script is refused (a service has nowhere to print its
    rows), and so is a script without an INSERT; all before anything runs.
  - --metrics-addr serves /metrics (Prometheus), /healthz (200 while the
    process lives) and /readyz (200 once every job runs and the brokers of
    its source and sink answer; 503 with the reason otherwise).
  - SIGTERM or SIGINT drains: no record is fetched any more, those fetched
    and not yet in a batch are released at once, the batches in flight get
    --drain-timeout to be acknowledged by the sink (their records are then
    accepted), the rest is released. Exit status 0. A second SIGTERM or
    SIGINT stops at once: what the sinks have not acknowledged is released
    (it comes again), and kshare run exits with status 1.
  - A job that fails stops the run: the others drain, and kshare run exits
    with status 1 and the job's error.
  - When every job has finished its input (a bounded source, or the
    'idle-timeout' setting), kshare run exits 0.
  - --state-dir keeps the groups of each aggregate job (GROUP BY) in a
    folder of its own there (named after the table it writes), and
    accepts a job's records only once the groups that count them are
    stored: killed and started again on the same directory, the job
    continues its counts, and a record the share group hands out again
    is not counted twice. Without it an aggregate job started again
    counts from nothing.

`
