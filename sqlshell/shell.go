package sqlshell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Engine runs statements. The root package's *kshare.Engine is the engine
// kshare uses; tests bring their own.
type Engine interface {
	// Exec runs one statement that is not a SELECT (CREATE TABLE, ALTER
	// TABLE, DROP TABLE, SHOW TABLES, DESCRIBE, SHOW CREATE TABLE, SET, RESET) and
	// returns its result.
	Exec(ctx context.Context, sql string) (*table.Result, error)
	// Query starts one SELECT with the session's settings (idle timeout,
	// max rows). ctx bounds the whole query: cancelling it stops the query.
	Query(ctx context.Context, sql string) (*query.Rows, error)
	// Settings are the session's settings as SET left them.
	Settings() query.Settings
}

// Config is what a Shell needs besides its engine.
type Config struct {
	// Stdout receives results, Stderr messages and errors. A statement's
	// notice goes to Stdout only in table output on a terminal (Height
	// set); in csv and json output, and without a terminal, only data goes
	// to Stdout.
	Stdout, Stderr io.Writer
	// Height, when not nil, says that Stdout is a terminal and returns its
	// height in rows (0 when unknown, meaning 24). The table output then
	// prints its header again every screen and shows a live row count.
	Height func() int
	// Stats prints a summary of each query on Stderr: rows, records per
	// consumer, acknowledgements, redeliveries, decode errors, elapsed time
	// and rows per second.
	Stats bool
	// Interrupts, when not nil, delivers a value for each Ctrl-C the
	// interactive shell receives while a statement runs (the caller wires
	// it to os/signal). Each one stops the running statement; the shell
	// goes back to the prompt.
	Interrupts <-chan os.Signal
}

// Shell runs statements on an engine and prints their results. It is not
// safe for concurrent use.
type Shell struct {
	eng    Engine
	cfg    Config
	out    *bufio.Writer
	errOut io.Writer
	// interactive: results are for a person at a prompt, so csv and json
	// output also get their "N rows" line (on Stderr).
	interactive bool
	// statusShown: the live row count is on the screen, to be erased
	// before anything else is printed.
	statusShown bool
	// whereNoted: the session was told once that WHERE consumes what it
	// filters out.
	whereNoted bool
	// jobs are the INSERT jobs the shell started, which RunScript waits
	// for.
	jobs []table.Job
}

// WhereNote is printed on Stderr the first time a session runs a SELECT
// with WHERE: a newcomer expects a filter to leave the other records for
// someone else, and in a share group it does not.
const WhereNote = "note: WHERE consumes the records it filters out: they are accepted, not left in the share group for another query (see help)"

// New returns a shell that runs statements on eng.
func New(eng Engine, cfg Config) *Shell {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	return &Shell{eng: eng, cfg: cfg, out: bufio.NewWriterSize(cfg.Stdout, 64<<10), errOut: cfg.Stderr}
}

// ErrInterrupted is wrapped by the error of a statement that was stopped by
// cancelling its context (Ctrl-C, SIGTERM) before it ended by itself; its
// undelivered records were released. context.Cause of the context follows it
// in the chain, so a caller can tell which signal it was.
var ErrInterrupted = errors.New("interrupted")

// ScriptError is the error of one statement of a script: where it starts
// and what went wrong.
type ScriptError struct {
	Name string // the script's name: "-e" or the file's path
	Line int    // the statement's first line
	Col  int    // the column of its first character
	Err  error
}

func (e *ScriptError) Error() string {
	// A syntax error's place is given within the statement; said within
	// the script, an editor can jump to it.
	var se *parse.SyntaxError
	if errors.As(e.Err, &se) && e.Err == error(se) && e.Col > 0 {
		col := se.Column
		if se.Line == 1 {
			col += e.Col - 1
		}
		return fmt.Sprintf("%s:%d:%d: %s", e.Name, e.Line+se.Line-1, col, se.Msg)
	}
	if e.Name == "" {
		return fmt.Sprintf("statement at line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("%s: statement at line %d: %v", e.Name, e.Line, e.Err)
}

func (e *ScriptError) Unwrap() error { return e.Err }

// RunScript runs the statements of src in order and stops at the first
// error, which it returns as a *ScriptError (its statement's results before
// it have been printed). name says where src came from, for the error. The
// text after the last ';' counts as a last statement, so that
// `-e "SELECT ..."` needs no ';'.
func (s *Shell) RunScript(ctx context.Context, name, src string) error {
	stmts, rest, _ := Split(src)
	if rest.Text != "" {
		stmts = append(stmts, rest)
	}
	for _, st := range stmts {
		if err := s.Run(ctx, st.Text); err != nil {
			s.stopJobs()
			return &ScriptError{Name: name, Line: st.Line, Col: st.Col, Err: err}
		}
	}
	return s.waitJobs(ctx)
}

// waitJobs waits, as Flink's SQL client does at the end of a script, for
// the jobs the script started to finish their input (a bounded source, or
// the 'idle-timeout' setting, ends it), and says how each ended. When ctx
// ends first (a signal), the jobs still running are stopped (what they hold
// is released), each says how it ended too, and waitJobs returns ctx's
// cause.
func (s *Shell) waitJobs(ctx context.Context) error {
	defer s.stopJobs()
	var first error
	for i, j := range s.jobs {
		err := j.Wait(ctx)
		if ctx.Err() != nil {
			for _, j := range s.jobs[i:] {
				j.Stop()
				s.jobEnded(j)
			}
			return context.Cause(ctx)
		}
		s.jobEnded(j)
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// jobEnded says how job j ended.
func (s *Shell) jobEnded(j table.Job) {
	st := j.Stats()
	fmt.Fprintf(s.errOut, "job %s %s: %s written, %s accepted, %s released\n", j.ID(), strings.ToLower(string(st.State)),
		plural(st.Acked, "row"), plural(st.Accepted, "record"), plural(st.Released, "record"))
}

// stopJobs stops the shell's jobs that still run and forgets them all.
func (s *Shell) stopJobs() {
	for _, j := range s.jobs {
		j.Stop()
	}
	s.jobs = nil
}

// Run runs one statement and prints its result. A panic anywhere below is
// turned into an error, so that no statement can take the shell down.
func (s *Shell) Run(ctx context.Context, sql string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v (please report this with the statement that caused it)\n%s", r, debug.Stack())
		}
	}()
	defer s.out.Flush()
	sts, err := parse.Parse(sql)
	if err != nil {
		return err
	}
	switch len(sts) {
	case 0:
		return nil
	case 1:
	default:
		return fmt.Errorf("one statement at a time, got %d", len(sts))
	}
	if _, ok := sts[0].(*table.Select); ok {
		return s.query(ctx, sql)
	}
	res, err := s.eng.Exec(ctx, sql)
	if err != nil {
		return err
	}
	if res != nil && res.Job != nil {
		s.jobs = append(s.jobs, res.Job)
	}
	return s.printResult(res)
}

// printResult prints a statement's result: its rows in the session's output
// format, or its message (on Stderr in csv and json output, where Stdout
// holds only data).
func (s *Shell) printResult(res *table.Result) error {
	if res == nil {
		return nil
	}
	format := s.eng.Settings().Output
	if len(res.Columns) > 0 {
		cols := make([]types.Column, len(res.Columns))
		for k, c := range res.Columns {
			cols[k] = types.Column{Name: c}
			// json writes a number as a number. The other outputs
			// print a statement's cells as the text they are, left
			// aligned in a table.
			if format == OutputJSON {
				cols[k].Type = res.Type(k)
			}
		}
		p := newPrinter(format, s.out, cols, s.term())
		if tp, ok := p.(*tablePrinter); ok {
			tp.multiline = true
		}
		for _, r := range res.Rows {
			if err := p.cells(r); err != nil {
				return err
			}
		}
		if err := p.end(); err != nil {
			return err
		}
		if tabular(format) {
			fmt.Fprintf(s.out, "%s\n", plural(int64(len(res.Rows)), "row"))
		} else if s.interactive {
			fmt.Fprintf(s.errOut, "%s\n", plural(int64(len(res.Rows)), "row"))
		}
	}
	if res.Message != "" {
		// A statement's notice ("table 't' created", "job 1 started") goes
		// with the results only on a terminal: a script's standard output
		// holds data alone (results, what a 'print' table writes), so
		// that it can be redirected. A message that comes with rows
		// (DESCRIBE's notes, DESCRIBE TOPIC's proposed table) is part of
		// them.
		if tabular(format) && (s.cfg.Height != nil || len(res.Columns) > 0) {
			fmt.Fprintln(s.out, res.Message)
		} else {
			fmt.Fprintln(s.errOut, res.Message)
		}
	}
	return s.out.Flush()
}

// tabular reports whether format prints bordered tables, for a person:
// messages and row counts then go to Stdout with the results.
func tabular(format string) bool { return format == OutputTable || format == OutputTableau }

func (s *Shell) term() *terminal {
	if s.cfg.Height == nil {
		return nil
	}
	return &terminal{height: s.cfg.Height}
}

// query runs a SELECT and prints its rows as they arrive.
func (s *Shell) query(ctx context.Context, sql string) error {
	format := s.eng.Settings().Output
	rows, err := s.eng.Query(ctx, sql)
	if err != nil {
		return err
	}
	if !s.whereNoted && rows.Plan().Filters() {
		s.whereNoted = true
		fmt.Fprintln(s.errOut, WhereNote)
	}
	// Close settles the last batch and releases what the source fetched
	// ahead; it must run whatever happens below, a panic included.
	closed := false
	defer func() {
		if !closed {
			abandon(rows)
		}
	}()
	term := s.term()
	live := term != nil && tabular(format)
	p := newQueryPrinter(format, s.out, rows, term, int(s.eng.Settings().MaxColumnWidth))
	noun := "row"
	if rows.Plan().Updating() {
		noun = "change"
	}
	var ls *liveStatus
	if live {
		ls = s.startStatus(rows, noun)
	}
	n, copyErr := copyRows(ctx, rows, p, func(n int64) {
		if live {
			ls.progress(n)
		}
	})
	if live {
		ls.stop()
	}
	closeErr := rows.Close()
	closed = true
	if live {
		s.clearStatus()
	}
	stats := rows.Stats()
	var endErr error
	if copyErr == nil {
		endErr = p.end()
	}
	interrupted := ctx.Err() != nil && rows.EndReason() != query.EndLimit &&
		rows.EndReason() != query.EndMaxRows && rows.EndReason() != query.EndIdle
	switch {
	case copyErr != nil:
		// The rows are incomplete; only the error is worth saying.
	case tabular(format):
		fmt.Fprintf(s.out, "%s%s\n", plural(n, noun), endNote(interrupted))
	case s.interactive:
		fmt.Fprintf(s.errOut, "%s%s\n", plural(n, noun), endNote(interrupted))
	}
	if err := s.out.Flush(); err != nil && copyErr == nil {
		copyErr = err
	}
	if s.cfg.Stats {
		WriteStats(s.errOut, n, stats)
	}
	switch {
	case copyErr != nil:
		return fmt.Errorf("writing the results: %w (the records of rows not written were released)", copyErr)
	case endErr != nil:
		return fmt.Errorf("writing the results: %w", endErr)
	case interrupted:
		return fmt.Errorf("%w after %s: %w", ErrInterrupted, plural(n, noun), context.Cause(ctx))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return closeErr
}

func endNote(interrupted bool) string {
	if interrupted {
		return " (query stopped; rows not shown were released)"
	}
	return ""
}

// copyRows prints every batch of rows with p and settles each batch only
// after p flushed it (see the package documentation). It returns the rows
// printed and the first error of p. progress is called with -1 before each
// batch is printed and with the rows so far after it was flushed.
func copyRows(ctx context.Context, rows *query.Rows, p printer, progress func(int64)) (int64, error) {
	var n int64
	for rows.Next() {
		rec := rows.RecordBatch()
		progress(-1)
		p.batch(rec)
		nr := int(rec.NumRows())
		i := 0
		for ; i < nr; i++ {
			if ctx.Err() != nil {
				break
			}
			if err := p.row(i); err != nil {
				releaseRows(rows, 0, nr)
				return n, err
			}
		}
		if err := p.flush(); err != nil {
			releaseRows(rows, 0, nr)
			return n, err
		}
		n += int64(i)
		if i < nr {
			// Stopped in the middle: what was printed is delivered,
			// the rest goes back. Close (by the caller) settles.
			releaseRows(rows, i, nr)
			return n, nil
		}
		progress(n)
	}
	return n, nil
}

// abandon closes rows after a failure (a panic, say) in the middle of a
// batch: none of its rows is known to have arrived, so all go back, where a
// plain Close would accept them.
func abandon(rows *query.Rows) {
	if rec := rows.RecordBatch(); rec != nil {
		releaseRows(rows, 0, int(rec.NumRows()))
	}
	rows.Close()
}

func releaseRows(rows *query.Rows, from, to int) {
	if rows.Plan().Updating() {
		// An aggregate's row reflects many records: all of the batch's
		// go back, and the query ends (see query.Rows.ReleaseBatch).
		_ = rows.ReleaseBatch()
		return
	}
	for i := from; i < to; i++ {
		_ = rows.ReleaseRow(i) // only fails without a batch, and there is one
	}
}

// status shows the live row count on the line below the rows, and that
// no broker answers when none does. It is written without a newline, so
// that the next output overwrites it.
func (s *Shell) status(n int64, noun string, src flow.Stats) {
	outage := ""
	if !src.Unreachable.IsZero() {
		outage = fmt.Sprintf("cannot reach Kafka at %s since %s, retrying; ", src.Brokers, src.Unreachable.Format("15:04:05"))
	}
	calls := ""
	if m := src.Model; m != nil {
		// A query through a model waits on its calls: show them move.
		calls = fmt.Sprintf("model %s: %s, %d rows in flight", m.Model, plural(m.Calls, "call"), m.RowsInFlight)
		if failed := m.Calls - m.OK; failed > 0 {
			calls += fmt.Sprintf(", %d failed", failed)
		}
		calls += "; "
	}
	fmt.Fprintf(s.out, "\r\x1b[K(%s so far; %s%sCtrl-C stops the query)", plural(n, noun), calls, outage)
	s.out.Flush()
	s.statusShown = true
}

// liveStatus keeps the status line up to date while a query waits for
// rows: a broker that stops answering shows there within a second, not
// only when the next batch comes. Its goroutine writes only while no batch
// is being printed (between progress(n) and the next progress(-1)).
type liveStatus struct {
	s    *Shell
	rows *query.Rows
	noun string // what the count counts: rows, or an aggregate's changes
	mu   sync.Mutex
	n    int64
	busy bool      // a batch is being printed
	was  time.Time // the outage shown
	// calls and flight are the model's calls and rows in flight shown.
	calls, flight int64
	quit          chan struct{}
	done          chan struct{}
}

// statusEvery is how often the status line looks for a change of the
// brokers' health.
var statusEvery = 500 * time.Millisecond

func (s *Shell) startStatus(rows *query.Rows, noun string) *liveStatus {
	ls := &liveStatus{s: s, rows: rows, noun: noun, quit: make(chan struct{}), done: make(chan struct{})}
	ls.draw()
	go func() {
		defer close(ls.done)
		t := time.NewTicker(statusEvery)
		defer t.Stop()
		for {
			select {
			case <-ls.quit:
				return
			case <-t.C:
				ls.mu.Lock()
				if !ls.busy && ls.changed(ls.rows.Stats().Source) {
					ls.drawLocked()
				}
				ls.mu.Unlock()
			}
		}
	}()
	return ls
}

func (ls *liveStatus) draw() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.drawLocked()
}

func (ls *liveStatus) drawLocked() {
	src := ls.rows.Stats().Source
	ls.was = src.Unreachable
	if m := src.Model; m != nil {
		ls.calls, ls.flight = m.Calls, m.RowsInFlight
	}
	ls.s.status(ls.n, ls.noun, src)
}

// changed reports whether the line shown is out of date: the brokers'
// health, or a model's calls.
func (ls *liveStatus) changed(src flow.Stats) bool {
	if !src.Unreachable.Equal(ls.was) {
		return true
	}
	m := src.Model
	return m != nil && (m.Calls != ls.calls || m.RowsInFlight != ls.flight)
}

// progress is copyRows's callback: -1 before a batch is printed, the rows
// so far after it was flushed.
func (ls *liveStatus) progress(n int64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if n < 0 {
		ls.busy = true
		ls.s.clearStatus()
		return
	}
	ls.busy, ls.n = false, n
	ls.drawLocked()
}

func (ls *liveStatus) stop() {
	close(ls.quit)
	<-ls.done
}

func (s *Shell) clearStatus() {
	if s.statusShown {
		s.out.WriteString("\r\x1b[K")
		s.statusShown = false
	}
}

// WriteStats prints a query's summary, one "name: value" line each, so that
// a person can read it and a script can grep it.
func WriteStats(w io.Writer, rows int64, st query.Stats) {
	src := st.Source
	// Rows per second over the time the query worked: the idle timeout's
	// wait that ended it is not work.
	secs := st.Working.Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(rows) / secs
	}
	fmt.Fprintf(w, "-- stats\n")
	fmt.Fprintf(w, "rows: %d\n", rows)
	fmt.Fprintf(w, "elapsed: %s\n", st.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "rows/s: %.1f\n", rate)
	// A count that is zero in a healthy run is shown only when it is not.
	count := func(name string, n int64, always bool) {
		if always || n > 0 {
			fmt.Fprintf(w, "%s: %d\n", name, n)
		}
	}
	count("records", src.Records, true)
	for _, c := range src.Consumers {
		count("records of consumer "+c.Name, c.Records, true)
	}
	count("accepted", src.Accepted, true)
	count("released", src.Released, true)
	count("rejected", src.Rejected, true)
	count("acknowledgements refused", src.AckRefused, false)
	count("acknowledgements unconfirmed", src.AckUnconfirmed, false)
	// The consumer that gets these records again may be another process:
	// this line is the only one of this query that says its rows will be
	// seen twice.
	count("accepts lost (delivered, their records come again)", src.AcceptsLost, false)
	count("settled after their lock expired (not accepted)", src.LockExpired, false)
	count("released on arrival, their lock nearly expired", src.ExpiredOnArrival, false)
	count("fetched ahead and released at the end", src.FetchedAhead, false)
	count("redelivered", src.Redelivered, true)
	count("decode errors", src.DecodeErrors, true)
	count("evaluation errors (left out)", src.EvalErrors, false)
	if st.TakesNothing {
		count("filtered", st.Filtered, false)
	} else {
		count("filtered (accepted)", st.Filtered, false)
	}
	count("unchanged (accepted)", st.Unchanged, false)
	count("folded into windows (accepted)", st.Folded, false)
	count("late (updated their window's row)", st.Late-st.BeyondLateness, false)
	count("beyond the allowed lateness (updated nothing, accepted)", st.BeyondLateness, false)
	count("skipped", src.Skipped, false)
	count("dead-lettered (accepted)", src.DeadLettered, false)
	count("dead letters failed (released)", src.DeadLetterFailed, false)
	count("lock renewals", src.Renewed, false)
	if m := src.Model; m != nil {
		// A query through a model (ML_PREDICT): its calls by outcome, as
		// the metrics name them.
		count("model calls", m.Calls, true)
		for _, o := range m.Outcomes() {
			count("model calls "+strings.ReplaceAll(o.Outcome, "_", " "), o.Calls, false)
		}
		count("model retries", m.Retries, false)
		for _, q := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p99", 0.99}} {
			if d, ok := m.Latency.Quantile(q.q); ok {
				fmt.Fprintf(w, "model latency %s: <= %s\n", q.name, d)
			}
		}
		count("model tokens in", m.TokensIn, false)
		count("model tokens out", m.TokensOut, false)
		count("model rows in flight", m.RowsInFlight, false)
	}
	if l := src.Lookup; l != nil {
		// A lookup join: the queries sent to the looked-up table, and
		// what the cache answered.
		count("lookup queries", l.Queries, true)
		count("lookup keys asked", l.Keys, true)
		count("lookup rows found", l.Rows, true)
		count("lookup cache hits", l.Hits, false)
		count("lookup cache misses", l.Misses, false)
		count("lookup retries", l.Retries, false)
	}
}

// isShellCommand recognizes the shell's own commands, which are not SQL:
// help, quit and exit, with or without a ';'. Any other line that starts
// with a backslash is "backslash": psql's commands (\\d, \\dt) end without
// a ';', so waiting for one would leave the user at a continuation prompt.
func isShellCommand(line string) (string, bool) {
	w := strings.ToLower(strings.TrimSpace(line))
	w = strings.TrimSpace(strings.TrimSuffix(w, ";"))
	switch w {
	case "help", "\\h", "?":
		return "help", true
	case "quit", "exit", "\\q":
		return "quit", true
	}
	if strings.HasPrefix(w, "\\") {
		return "backslash", true
	}
	return "", false
}
