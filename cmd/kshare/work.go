package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"golang.org/x/term"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/worker"
)

func init() {
	register(&command{
		name:    "work",
		summary: "run a program on each row of a SELECT, many at once, accepting a record once its program succeeded",
		run:     runWorkCmd,
	})
}

const workSynopsis = "--init FILE --query SELECT [--concurrency N] [--timeout D] [--reject-exit-codes 65] [--persistent] [--out FILE] [--max-rows N] [--idle-timeout D] [--drain-timeout D] [--stats] [--metrics-addr HOST:PORT] -- COMMAND [ARG...]"

// intList is a flag of integers separated by commas.
type intList struct{ vals *[]int }

func (l intList) String() string {
	if l.vals == nil {
		return ""
	}
	var s []string
	for _, v := range *l.vals {
		s = append(s, strconv.Itoa(v))
	}
	return strings.Join(s, ",")
}

func (l intList) Set(s string) error {
	*l.vals = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 255 {
			return fmt.Errorf("%q is not an exit status (0 to 255)", f)
		}
		*l.vals = append(*l.vals, n)
	}
	return nil
}

func runWorkCmd(ctx context.Context, std stdio, args []string) error {
	var (
		q           queryFlags
		out         string
		concurrency int
		timeout     time.Duration
		drain       time.Duration
		rejectCodes = []int{65}
		persistent  bool
		pollRecords int
	)
	fs := newFlagSet("work", workSynopsis, std)
	q.register(fs, "worked on", "working")
	fs.IntVar(&concurrency, "concurrency", 1, "how many rows run at once (processes, or copies with --persistent)")
	fs.DurationVar(&timeout, "timeout", 0, "kill a row's process group after this `duration` and release the row (0: no bound)")
	fs.Var(intList{&rejectCodes}, "reject-exit-codes", "exit `statuses` (comma-separated) that reject a row: never delivered again")
	fs.BoolVar(&persistent, "persistent", false, "run --concurrency long-lived copies that answer a JSON line per row (see above)")
	fs.StringVar(&out, "out", "", "append each accepted row's output to this `file` as a JSON line, synced before the record is accepted")
	fs.IntVar(&pollRecords, "poll-records", 0, "records each member of the query takes at once (0: --concurrency; see above)")
	fs.DurationVar(&drain, "drain-timeout", 30*time.Second, "on SIGINT or SIGTERM, let running rows finish for this `duration`, then kill them and release their rows")
	// The command and its arguments follow the flags (after --).
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	argv := fs.Args()
	if err := q.printHelp(fs, workSynopsis, workHelp); err != nil {
		return err
	}
	if err := q.check(fs); err != nil {
		return err
	}
	switch {
	case len(argv) == 0:
		return usagef(fs, "no command to run: give it after --, as in kshare work --query ... -- ./classify.py")
	case concurrency < 1:
		return usagef(fs, "--concurrency must be at least 1, got %d", concurrency)
	case timeout < 0:
		return usagef(fs, "--timeout must not be negative, got %v", timeout)
	case drain < 0:
		return usagef(fs, "--drain-timeout must not be negative, got %v", drain)
	case pollRecords < 0:
		return usagef(fs, "--poll-records must not be negative, got %d", pollRecords)
	}
	sql, maxRows, idleTimeout, stats := q.sql, q.maxRows, q.idleTimeout, q.stats
	logger := slog.New(slog.NewTextHandler(std.err, nil))
	c := worker.Command{Argv: argv, RejectCodes: rejectCodes, Logger: logger}
	// Before anything is read: a command that cannot run would release
	// every row it is given.
	if err := c.Check(); err != nil {
		return err
	}
	if err := checkSelect(sql); err != nil {
		return err
	}

	eng := engine{kshare.New(kshare.WithLogger(logger))}
	if err := q.runInits(ctx, eng); err != nil {
		return err
	}
	plan, err := eng.Prepare(sql)
	if err != nil {
		return fmt.Errorf("--query: %w", err)
	}
	cols := plan.Columns()
	c.Encode = func(r worker.Row) []byte {
		return sqlshell.JSONRows(cols, r.RecordBatch())(nil, r.Index())
	}
	if out != "" {
		f, err := worker.CreateOut(out)
		if err != nil {
			return err
		}
		defer f.Close()
		c.Out = f
	}
	// Metrics are served before the group is joined, as kshare export
	// serves them; the pool's counts appear once it exists.
	var poolMetrics lazyCollector
	stopMetrics, err := serveMetrics(q.metricsAddr, std.err, &poolMetrics)
	if err != nil {
		return err
	}
	defer stopMetrics()
	fn := c.Run
	var pers *worker.Persistent
	if persistent {
		pers = &worker.Persistent{Command: c, Procs: concurrency}
		fn = pers.Run
		// Copies still running when the work ends get a moment to exit
		// on their own once their input closes.
		defer pers.Close(5 * time.Second)
	}
	var qopts []kshare.QueryOption
	if maxRows > 0 {
		qopts = append(qopts, kshare.MaxRows(maxRows))
	}
	if idleTimeout > 0 {
		qopts = append(qopts, kshare.IdleTimeout(idleTimeout))
	}
	// The query's own context, so that a worker that cannot run stops it.
	qctx, stopQuery := context.WithCancelCause(ctx)
	defer stopQuery(nil)
	rows, err := eng.QueryForWorkers(qctx, sql, concurrency, pollRecords, qopts...)
	if err != nil {
		return scriptFailed(ctx, "kshare work: ", fmt.Errorf("--query: %w", err))
	}
	pool, err := worker.New(rows, worker.Config{Concurrency: concurrency, Timeout: timeout, Drain: drain, Logger: logger, StopQuery: stopQuery}, fn)
	if err != nil {
		rows.Close()
		return err
	}
	poolMetrics.pool.Store(pool)
	start := time.Now()
	var progress sync.WaitGroup
	stopProgress := make(chan struct{})
	if f, ok := std.err.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		progress.Go(func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					writeWorkProgress(std.err, pool.Stats(), time.Since(start), true)
					return
				case <-t.C:
					writeWorkProgress(std.err, pool.Stats(), time.Since(start), false)
				}
			}
		})
	}
	st, err := pool.Run(qctx)
	close(stopProgress)
	progress.Wait()
	if stats {
		sqlshell.WriteStats(std.err, st.Query.Rows, st.Query)
		fmt.Fprintf(std.err, "worker: %d accepted, %d released (%d timed out, %d panicked), %d rejected, %.1f rows/s from the first row's start to the last one's end\n",
			st.Accepted, st.Released, st.TimedOut, st.Panics, st.Rejected, st.Rate())
	}
	fmt.Fprintf(std.err, "kshare work: %s done: %d accepted, %d released, %d rejected\n",
		count(int(st.Done()), "row"), st.Accepted, st.Released, st.Rejected)
	if err != nil {
		return scriptFailed(ctx, "kshare work: ", err)
	}
	return nil
}

// lazyCollector collects a pool's metrics once the pool is set.
type lazyCollector struct{ pool atomic.Pointer[worker.Pool] }

func (l *lazyCollector) Describe(ch chan<- *prometheus.Desc) {
	(&worker.Pool{}).Collector().Describe(ch)
}

func (l *lazyCollector) Collect(ch chan<- prometheus.Metric) {
	if p := l.pool.Load(); p != nil {
		p.Collector().Collect(ch)
	}
}

// writeWorkProgress draws the progress line on a terminal.
func writeWorkProgress(w io.Writer, st worker.Stats, d time.Duration, final bool) {
	rate := 0.0
	if s := d.Seconds(); s > 0 {
		rate = float64(st.Done()) / s
	}
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(w, "\r\x1b[K%d done, %d in flight, %d released, %d rejected, %.0f rows/s%s",
		st.Done(), st.Running, st.Released, st.Rejected, rate, end)
}

const workHelp = `Runs the statements of the --init files, then the --query, and runs
COMMAND on each of its rows, --concurrency rows at once:

  - The row is the command's standard input: one JSON object and a newline,
    as --output json prints it. The record's coordinates are in its
    environment: KSHARE_TOPIC, KSHARE_PARTITION, KSHARE_OFFSET,
    KSHARE_DELIVERY_COUNT, and KSHARE_KEY when the key is text.
  - Exit status 0 accepts the record. A status in --reject-exit-codes
    (default 65, EX_DATAERR) rejects it: never delivered again. Any other
    status, a signal, or running past --timeout (the whole process group is
    killed) releases it: the broker delivers it again, with its delivery
    count up, until the group's delivery limit archives it.
  - Its standard error is logged with the record's coordinates. Its standard
    output goes to --out, if given, as a JSON line
    {"topic":...,"partition":...,"offset":...,"output":...} (output is the
    JSON the command printed, or the text as a string), written and synced
    before the record is accepted.

--persistent starts --concurrency long-lived copies of COMMAND instead, each
reading rows as JSON lines on its standard input and answering each with one
line on its standard output:

  {"status": "accept" | "release" | "reject", "output": <any JSON>, "error": "why"}

A copy that dies, answers anything else (the line is logged), or runs past
--timeout is killed and started again, and its row is released.

The locks of rows still running are renewed, so a row that runs longer than
the group's lock duration is not given to another worker. A member of the
query takes at most --poll-records records at once (default: --concurrency,
so that a busy worker holds no more than it can start soon); rows that take
a few milliseconds or less want more, such as 500.

SIGINT or SIGTERM: no new row starts, running rows get --drain-timeout to
finish, then are killed, and every record not done is released. The exit
status is then 130 or 143; 0 when --max-rows, --idle-timeout or a LIMIT
ended the work.

`
