package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/term"

	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/types"
)

// shellSynopsis is the shell's usage line, shared by `kshare` and
// `kshare demo`.
const shellSynopsis = "[-e STATEMENTS]... [-f FILE]... [--output table|csv|json] [--idle-timeout D] [--max-rows N] [--stats] [--metrics-addr HOST:PORT]"

// scriptSource is one -e or -f, in command-line order.
type scriptSource struct {
	name string // "-e" or the file's path
	file bool
	text string // -e's statements
}

// scriptFlag collects -e and -f into one list, so that they run in the order
// given.
type scriptFlag struct {
	list *[]scriptSource
	file bool
}

func (f scriptFlag) String() string { return "" }

func (f scriptFlag) Set(s string) error {
	if f.file {
		*f.list = append(*f.list, scriptSource{name: s, file: true})
	} else {
		*f.list = append(*f.list, scriptSource{name: "-e", text: s})
	}
	return nil
}

// shellFlags are the flags of the shell, which `kshare demo` shares.
type shellFlags struct {
	scripts     []scriptSource
	output      string
	idleTimeout time.Duration
	maxRows     int64
	stats       bool
	metricsAddr string
}

func (f *shellFlags) register(fs *flag.FlagSet) {
	fs.Var(scriptFlag{list: &f.scripts}, "e", "run `statements` (separated by ';') instead of the prompt, then exit; repeatable")
	fs.Var(scriptFlag{list: &f.scripts, file: true}, "f", "run the statements of `file` instead of the prompt, then exit; repeatable")
	fs.StringVar(&f.output, "output", "table", "how results are printed: table, tableau, changelog (Flink's result modes), csv (RFC 4180, a header row) or json (one object per line); the 'output' setting")
	options.DurationVar(fs, &f.idleTimeout, "idle-timeout", 0, "end a SELECT once no record arrived for this `duration` (from its start while none has); 0 waits until Ctrl-C; the 'idle-timeout' setting")
	fs.Int64Var(&f.maxRows, "max-rows", 0, "end a SELECT after `N` rows; 0 means no bound; the 'max-rows' setting")
	fs.BoolVar(&f.stats, "stats", false, "print a summary of each SELECT on stderr: rows, records per consumer, accepted/released/rejected, redeliveries, decode errors, elapsed time, rows/s")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`host:port`/metrics while kshare runs")
}

// check validates the flags that need more than their type.
func (f *shellFlags) check(fs *flag.FlagSet) error {
	switch f.output {
	case sqlshell.OutputTable, sqlshell.OutputTableau, sqlshell.OutputChangelog, sqlshell.OutputCSV, sqlshell.OutputJSON:
	default:
		return usagef(fs, "--output must be table, tableau, changelog, csv or json, got %q", f.output)
	}
	if f.maxRows < 0 {
		return usagef(fs, "--max-rows must not be negative, got %d", f.maxRows)
	}
	return checkMetricsAddr(fs, f.metricsAddr)
}

// apply sets the session settings the flags give, through the engine, so
// that SET shows them and RESET goes back to the defaults.
func (f *shellFlags) apply(ctx context.Context, eng sqlshell.Engine) error {
	sets := [][2]string{{query.SettingOutput, f.output}}
	if f.idleTimeout > 0 {
		sets = append(sets, [2]string{query.SettingIdleTimeout, f.idleTimeout.String()})
	}
	if f.maxRows > 0 {
		sets = append(sets, [2]string{query.SettingMaxRows, strconv.FormatInt(f.maxRows, 10)})
	}
	for _, kv := range sets {
		if _, err := eng.Exec(ctx, fmt.Sprintf("SET %s = %s", types.QuoteString(kv[0]), types.QuoteString(kv[1]))); err != nil {
			return fmt.Errorf("setting '%s': %w", kv[0], err)
		}
	}
	return nil
}

func init() {
	register(&command{
		name:    "shell",
		summary: "the SQL shell (also what kshare runs with no command); -e and -f run statements and exit",
		run:     runShellCmd,
	})
}

func runShellCmd(ctx context.Context, std stdio, args []string) error {
	var f shellFlags
	fs := newFlagSet("shell", shellSynopsis, std)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: kshare %s\n", shellSynopsis)
		fmt.Fprintf(fs.Output(), "\nWithout -e or -f, kshare reads statements at a prompt (from standard input when it is not a terminal).\n\n")
		fs.PrintDefaults()
	}
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	err := runShell(ctx, std, &f, newEngine(), "")
	var exit exitError
	if err != nil && !errors.As(err, &exit) {
		// The shell is what plain `kshare` runs: its errors say "kshare:",
		// not "kshare shell:".
		return exitError{code: 1, msg: "kshare: " + err.Error()}
	}
	return err
}

// noStatementsHint is what the shell says when it has neither a terminal
// nor a statement to run.
const noStatementsHint = "kshare: standard input is not a terminal and holds no statement: " +
	"run kshare in a terminal for its prompt, pipe statements in, or give them with -e 'SELECT ...' or -f FILE"

// runShell runs the shell the flags ask for on eng: the -e and -f scripts,
// or else the prompt (or standard input when it is no terminal). banner is
// printed above the first prompt.
func runShell(ctx context.Context, std stdio, f *shellFlags, eng sqlshell.Engine, banner string) error {
	if err := f.apply(ctx, eng); err != nil {
		return err
	}
	stopMetrics, err := serveMetrics(f.metricsAddr, std.err)
	if err != nil {
		return err
	}
	defer stopMetrics()
	// Writing to a closed pipe (kshare -e ... | head) must fail the write,
	// which releases the rows not written, rather than kill the process,
	// which would leave their records locked until the locks expire.
	signal.Ignore(syscall.SIGPIPE)
	defer signal.Reset(syscall.SIGPIPE)

	cfg := sqlshell.Config{Stdout: std.out, Stderr: std.err, Stats: f.stats}
	if out, ok := std.out.(*os.File); ok && term.IsTerminal(int(out.Fd())) {
		cfg.Height = func() int {
			_, h, err := term.GetSize(int(out.Fd()))
			if err != nil {
				return 0
			}
			return h
		}
	}

	if len(f.scripts) > 0 {
		sh := sqlshell.New(eng, cfg)
		for _, s := range f.scripts {
			text := s.text
			if s.file {
				b, err := os.ReadFile(s.name)
				if err != nil {
					return fmt.Errorf("reading -f %s: %w", s.name, err)
				}
				text = string(b)
			}
			if err := sh.RunScript(ctx, s.name, text); err != nil {
				return scriptFailed(ctx, "kshare: ", err)
			}
		}
		return nil
	}

	in, inIsFile := std.in.(*os.File)
	if !inIsFile || !term.IsTerminal(int(in.Fd())) || cfg.Height == nil {
		// Statements piped in run as a script does.
		b, err := io.ReadAll(std.in)
		if err != nil {
			return fmt.Errorf("reading statements from standard input: %w", err)
		}
		if len(statements(string(b))) == 0 {
			// Run from a script, a service manager or an IDE, the shell
			// would end at once without a word.
			fmt.Fprintln(std.err, noStatementsHint)
			return nil
		}
		if err := sqlshell.New(eng, cfg).RunScript(ctx, "stdin", string(b)); err != nil {
			return scriptFailed(ctx, "kshare: ", err)
		}
		return nil
	}

	// At the prompt Ctrl-C stops the running statement, not the shell:
	// main leaves SIGINT to us while we are here.
	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	defer signal.Stop(interrupts)
	shellOwnsInterrupt.Store(true)
	defer shellOwnsInterrupt.Store(false)
	cfg.Interrupts = interrupts

	if banner != "" {
		fmt.Fprint(std.out, banner)
	}
	fmt.Fprintf(std.out, "kshare SQL shell: statements end with ';'; 'help' for help, Ctrl-D or 'quit' to leave.\n")
	if err := sqlshell.New(eng, cfg).Interactive(ctx, historyFile()); err != nil {
		return scriptFailed(ctx, "kshare: ", err)
	}
	return nil
}

// historyFile is ~/.kshare_history, or $KSHARE_HISTORY when set (empty:
// no history).
func historyFile() string {
	if h, ok := os.LookupEnv("KSHARE_HISTORY"); ok {
		return h
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".kshare_history")
}

// scriptFailed turns a script's error into the process's end: prefix and
// the message on stderr, and exit status 1, or 130/143 when a signal stopped
// the statement (the shells' convention of 128 + the signal's number).
//
// The signal is looked for in ctx too: a signal that comes while a query is
// still joining its group fails the join with a plain context error.
func scriptFailed(ctx context.Context, prefix string, err error) error {
	var sig signalCause
	if errors.As(err, &sig) || errors.As(context.Cause(ctx), &sig) {
		return exitError{code: 128 + int(sig.sig), msg: prefix + err.Error()}
	}
	return exitError{code: 1, msg: prefix + err.Error()}
}

// checkMetricsAddr checks --metrics-addr when it is given, so a typo is a
// usage error before anything runs.
func checkMetricsAddr(fs *flag.FlagSet, addr string) error {
	if addr == "" {
		return nil
	}
	if _, _, err := splitAddr(addr); err != nil {
		return usagef(fs, "--metrics-addr: %v", err)
	}
	return nil
}

// serveMetrics serves the connector's Prometheus metrics, and the lag of
// the share groups being read (shareLag), on addr until stop is called.
func serveMetrics(addr string, notes io.Writer, more ...prometheus.Collector) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil // no --metrics-addr: nothing to serve
	}
	m, err := startMetrics(addr, nil, more...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(notes, "kshare: serving metrics at http://%s/metrics\n", m.addr)
	return m.stop, nil
}

// metricsServer is the HTTP server of --metrics-addr.
type metricsServer struct {
	addr net.Addr // where it listens (the port chosen, for port 0)
	srv  *http.Server
	lag  *shareLag
	done chan struct{} // closed when Serve returned
}

// startMetrics serves /metrics (the share-group source's metrics, the
// models' calls, shareLag and more)
// and routes (path to handler) on addr, until stop.
func startMetrics(addr string, routes map[string]http.Handler, more ...prometheus.Collector) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	lag := newShareLag()
	for _, c := range append([]prometheus.Collector{sharegroup.Collector(), model.Collector(), lag}, more...) {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	for path, h := range routes {
		mux.Handle(path, h)
	}
	m := &metricsServer{addr: ln.Addr(), srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, lag: lag, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln) // ends with ErrServerClosed at stop
	}()
	return m, nil
}

// stop ends the server and waits for it.
func (m *metricsServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
	<-m.done
	m.lag.close()
}
