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

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"

	"golang.org/x/term"

	"github.com/kshare/kshare"
	kjson "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
	"github.com/kshare/kshare/worker"
)

func init() {
	register(&command{
		name:    "work",
		summary: "run a program on each row of a SELECT, many at once, accepting a record once its program succeeded",
		run:     runWorkCmd,
	})
}

// rowEncoder returns the encoder of the rows a program reads: each row as
// format 'json' writes it, the text --output json prints and a json sink
// writes. It is built once for the query's columns; the pool's workers
// take turns with it, since an encoder binds itself to a batch's arrays
// (once per batch) and is not safe for concurrent use. A row's encoding
// takes a microsecond or so, next to the program it feeds.
func rowEncoder(cols []types.Column) (func(worker.Row) ([]byte, error), error) {
	enc, err := kjson.NewRowEncoder(cols)
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		last int // the last row's length: room for the next row and its newline in one allocation
	)
	return func(r worker.Row) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		b, err := enc.AppendRow(make([]byte, 0, last+64), r.RecordBatch(), r.Index())
		last = len(b)
		return b, err
	}, nil
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
	w, err := parseWorkFlags(std, args)
	if err != nil {
		return err
	}
	q := &w.q
	logger := slog.New(slog.NewTextHandler(std.err, nil))
	c := worker.Command{Argv: w.argv, RejectCodes: w.rejectCodes, Logger: logger}
	// Before anything is read: a command that cannot run would release
	// every row it is given.
	if err := c.Check(); err != nil {
		return err
	}
	if err := checkSelect(q.sql); err != nil {
		return err
	}

	eng := engine{kshare.New(kshare.WithLogger(logger))}
	if err := q.runInits(ctx, eng); err != nil {
		return err
	}
	plan, err := eng.Prepare(q.sql)
	if err != nil {
		return fmt.Errorf("--query: %w", err)
	}
	if c.Encode, err = rowEncoder(plan.Columns()); err != nil {
		return fmt.Errorf("--query: %w", err)
	}
	switch {
	case w.out != "":
		f, err := worker.CreateOut(w.out)
		if err != nil {
			return err
		}
		defer f.Close()
		c.Out = f
	case w.into != "":
		to, closeInto, err := openInto(ctx, eng.Engine, w.into)
		if err != nil {
			return err
		}
		// Closed after the pool, below: the writer then has nothing on
		// its way.
		defer func() {
			if err := closeInto(); err != nil {
				logger.Warn("closing --into's table", "table", w.into, "err", err)
			}
		}()
		c.Out = to
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
	if w.persistent {
		pers := &worker.Persistent{Command: c, Procs: w.concurrency}
		fn = pers.Run
		// Copies still running when the work ends get a moment to exit
		// on their own once their input closes.
		defer pers.Close(5 * time.Second)
	}
	var qopts []kshare.QueryOption
	if q.maxRows > 0 {
		qopts = append(qopts, kshare.MaxRows(q.maxRows))
	}
	if q.idleTimeout > 0 {
		qopts = append(qopts, kshare.IdleTimeout(q.idleTimeout))
	}
	// The query's own context, so that a worker that cannot run stops it.
	qctx, stopQuery := context.WithCancelCause(ctx)
	defer stopQuery(nil)
	rows, err := eng.QueryForWorkers(qctx, q.sql, w.concurrency, w.pollRecords, qopts...)
	if err != nil {
		return scriptFailed(ctx, "kshare work: ", fmt.Errorf("--query: %w", err))
	}
	pool, err := worker.New(rows, worker.Config{Concurrency: w.concurrency, Timeout: w.timeout, Drain: w.drain, Logger: logger, StopQuery: stopQuery}, fn)
	if err != nil {
		rows.Close()
		return err
	}
	poolMetrics.pool.Store(pool)
	stopProgress := showWorkProgress(std, pool)
	st, err := pool.Run(qctx)
	stopProgress()
	if q.stats {
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

// workFlags are kshare work's flags, parsed and checked.
type workFlags struct {
	q           queryFlags
	out         string
	into        string
	concurrency int
	timeout     time.Duration
	drain       time.Duration
	rejectCodes []int
	persistent  bool
	pollRecords int
	argv        []string // the command and its arguments, after --
}

func parseWorkFlags(std stdio, args []string) (*workFlags, error) {
	w := &workFlags{rejectCodes: []int{65}}
	fs := newFlagSet("work", workSynopsis, std)
	w.q.register(fs, "worked on", "working")
	fs.IntVar(&w.concurrency, "concurrency", 1, "how many rows run at once (processes, or copies with --persistent)")
	options.DurationVar(fs, &w.timeout, "timeout", 0, "kill a row's process group after this `duration` and release the row (0: no bound)")
	fs.Var(intList{&w.rejectCodes}, "reject-exit-codes", "exit `statuses` (comma-separated) that reject a row: never delivered again")
	fs.BoolVar(&w.persistent, "persistent", false, "run --concurrency long-lived copies that answer a JSON line per row (see above)")
	fs.StringVar(&w.out, "out", "", "append each accepted row's output to this `file` as a JSON line, synced before the record is accepted")
	fs.StringVar(&w.into, "into", "", "write each row's output, a JSON object, into this `table` (defined by --init) as a row, acknowledged before the record is accepted")
	fs.IntVar(&w.pollRecords, "poll-records", 0, "records each member of the query takes at once (0: --concurrency; see above)")
	options.DurationVar(fs, &w.drain, "drain-timeout", 30*time.Second, "on SIGINT or SIGTERM, let running rows finish for this `duration`, then kill them and release their rows")
	// The command and its arguments follow the flags (after --).
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	w.argv = fs.Args()
	if err := w.q.printHelp(fs, workSynopsis, workHelp); err != nil {
		return nil, err
	}
	if err := w.q.check(fs); err != nil {
		return nil, err
	}
	switch {
	case len(w.argv) == 0:
		return nil, usagef(fs, "no command to run: give it after --, as in kshare work --query ... -- ./classify.py")
	case w.concurrency < 1:
		return nil, usagef(fs, "--concurrency must be at least 1, got %d", w.concurrency)
	case w.pollRecords < 0:
		return nil, usagef(fs, "--poll-records must not be negative, got %d", w.pollRecords)
	case w.out != "" && w.into != "":
		return nil, usagef(fs, "--out and --into both say where outputs go: give one")
	}
	return w, nil
}

// showWorkProgress updates a progress line on a terminal until stop, which
// writes the last one.
func showWorkProgress(std stdio, pool *worker.Pool) (stop func()) {
	f, ok := std.err.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	start := time.Now()
	var progress sync.WaitGroup
	done := make(chan struct{})
	progress.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				writeWorkProgress(std.err, pool.Stats(), time.Since(start), true)
				return
			case <-t.C:
				writeWorkProgress(std.err, pool.Stats(), time.Since(start), false)
			}
		}
	})
	return func() {
		close(done)
		progress.Wait()
	}
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
    as --output json prints it and a table of format 'json' writes it
    (Flink's json format). The record's coordinates are in its
    environment: KSHARE_TOPIC, KSHARE_PARTITION, KSHARE_OFFSET,
    KSHARE_DELIVERY_COUNT, and KSHARE_KEY when the key is text. A row
    that JSON cannot hold (a string that is not UTF-8) is rejected.
  - Exit status 0 accepts the record. A status in --reject-exit-codes
    (default 65, EX_DATAERR) rejects it: never delivered again. Any other
    status, a signal, or running past --timeout (the whole process group is
    killed) releases it: the broker delivers it again, with its delivery
    count up, until the group's delivery limit archives it.
  - Its standard error is logged with the record's coordinates. Its standard
    output goes to --out, if given, as a JSON line
    {"topic":...,"partition":...,"offset":...,"output":...} (output is the
    JSON the command printed, or the text as a string), written and synced
    before the record is accepted. With --into TABLE instead, the output
    is a JSON object, written into TABLE (a table of --init that INSERT
    INTO could write: 'kafka', 'filesystem', ...) as a row, its fields by
    column name, and the record is accepted once the table's sink
    acknowledged the row. An output that is not a row of the table
    releases the record.

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

// openInto opens the table that --into names for writing, with a 'json'
// decoder of its columns for the outputs: the table's own json options
// when its format is json, the defaults otherwise. close releases the
// TableOut and closes the writer, waiting for what it has on its way.
func openInto(ctx context.Context, e *kshare.Engine, name string) (to *worker.TableOut, close func() error, err error) {
	t, err := e.Catalog().Lookup(name)
	if err != nil {
		return nil, nil, fmt.Errorf("--into: %w", err)
	}
	sink, err := table.NewSink(t.Bound)
	if err != nil {
		return nil, nil, fmt.Errorf("--into: %w", err)
	}
	cols := sink.Columns()
	opts := t.Bound.Options
	if t.Bound.Format == nil || t.Bound.Format.Name() != "json" {
		if opts, err = options.Parse(nil, nil, kjson.Options); err != nil {
			return nil, nil, fmt.Errorf("--into: %w", err)
		}
	}
	dec, err := kjson.Format{}.NewDecoder(cols, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("--into: table '%s': %w", options.Cut(name), err)
	}
	w, err := sink.Open(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("--into: %w", err)
	}
	to = worker.NewTableOut(name, cols, dec, w, memory.DefaultAllocator)
	return to, func() error {
		err := w.Close()
		to.Release()
		return err
	}, nil
}
