package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
)

// stdio is a command's standard streams, passed explicitly so that tests can
// run commands in-process with buffers.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// A command is one kshare subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	// run executes the command with the arguments after its name. ctx is
	// cancelled on SIGINT or SIGTERM. Returning errUsage exits with status
	// 2 (the command has already said what was wrong); flag.ErrHelp exits
	// 0; any other error is printed as "kshare NAME: ERROR" and exits 1.
	run func(ctx context.Context, std stdio, args []string) error
}

var commands = map[string]*command{}

// register adds a subcommand. It panics on an empty or duplicate name
// because either is a programming error that must not ship.
func register(c *command) {
	if c == nil || c.name == "" || c.run == nil {
		panic("kshare: register of an incomplete command")
	}
	if _, dup := commands[c.name]; dup {
		panic(fmt.Sprintf("kshare: command %q registered twice", c.name))
	}
	commands[c.name] = c
}

// errUsage means the command was called wrongly and has already printed the
// problem and its usage: exit status 2, like the flag package's own errors.
var errUsage = errors.New("usage error")

func main() {
	os.Exit(kshareMain())
}

// kshareMain is main without os.Exit, so that testscript can run kshare
// in-process.
func kshareMain() int {
	ctx, stop := signalContext()
	defer stop()
	return run(ctx, stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Args[1:])
}

// signalCause is the cause of the command's context when a signal ended it,
// so that a command can exit with 128 + the signal's number.
type signalCause struct{ sig syscall.Signal }

func (c signalCause) Error() string { return "stopped by " + signalName(c.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}

// shellOwnsInterrupt is set while the interactive shell runs: there Ctrl-C
// stops the running statement, and the shell handles SIGINT itself, so it
// must not end the whole command.
var shellOwnsInterrupt atomic.Bool

// signalContext returns a context that SIGINT (unless shellOwnsInterrupt),
// SIGTERM and SIGHUP (the terminal went away) cancel, with a signalCause:
// a command then stops what it runs and releases the records it holds,
// which being killed by the signal would leave locked until their locks
// expire. A second such signal closes signalAgain's channel, for a command
// that stops gently on the first (kshare run drains) to stop at once.
func signalContext() (context.Context, func()) {
	again := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.WithValue(context.Background(), againKey{}, again))
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				sig, _ := s.(syscall.Signal)
				switch {
				case sig == syscall.SIGINT && shellOwnsInterrupt.Load():
				case ctx.Err() == nil:
					cancel(signalCause{sig: sig})
				case again != nil:
					close(again)
					again = nil
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// againKey is the context key of signalContext's second-signal channel.
type againKey struct{}

// signalAgain is closed when a second signal comes after the one that
// ended ctx; nil (never ready) for a context signalContext did not make.
func signalAgain(ctx context.Context) <-chan struct{} {
	c, _ := ctx.Value(againKey{}).(chan struct{})
	return c
}

// exitError ends the command with its exit status, after printing msg (if
// any) on stderr: for failures that already have their own wording or need
// another status than 1.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

// run dispatches args to a subcommand and returns the process exit status.
func run(ctx context.Context, std stdio, args []string) int {
	if len(args) == 0 || (strings.HasPrefix(args[0], "-") && !isHelp(args[0])) {
		// No command: the SQL shell, with its flags.
		args = append([]string{"shell"}, args...)
	}
	name := args[0]
	if name == "help" || isHelp(name) {
		usage(std.out)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(std.err, "kshare: unknown command %q (known: %s)\n", name, strings.Join(commandNames(), ", "))
		fmt.Fprintf(std.err, "run 'kshare help' for usage\n")
		return 2
	}
	err := c.run(ctx, std, args[1:])
	var exit exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.msg != "" {
			fmt.Fprintln(std.err, exit.msg)
		}
		return exit.code
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(std.err, "kshare %s: %v\n", name, err)
		return 1
	}
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "kshare reads Kafka share groups as SQL tables.\n\n")
	fmt.Fprintf(w, "usage: kshare [shell flags]        the SQL shell\n")
	fmt.Fprintf(w, "       kshare <command> [flags]\n\ncommands:\n")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nrun 'kshare <command> -h' for a command's flags; 'kshare shell -h' for the shell's\n")
}

// newFlagSet returns a FlagSet for command name that reports errors (and
// -h) to std.err with a usage line made of synopsis and the flag defaults.
func newFlagSet(name, synopsis string, std stdio) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(std.err)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: kshare %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs and rejects positional arguments, which no
// command takes yet and which usually mean a forgotten "--flag=".
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// The flag package has printed the error and the usage.
		return errUsage
	}
	if fs.NArg() > 0 {
		return usagef(fs, "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// usagef prints "kshare NAME: MESSAGE" and fs's usage, and returns
// errUsage.
func usagef(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "kshare %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return errUsage
}
