// Command kshare is the kafka-sharegroup SQL connector's command line: a SQL
// shell over Kafka share groups, and the small tools that go with it (a
// local broker, a line producer).
//
// Each subcommand lives in its own file and registers itself from init with
// register; main only dispatches. Subcommands parse their own flags with
// their own flag.FlagSet.
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Args[1:])
}

// run dispatches args to a subcommand and returns the process exit status.
func run(ctx context.Context, std stdio, args []string) int {
	if len(args) == 0 {
		// Later the SQL shell starts here; until it exists, say what
		// there is.
		usage(std.err)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
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
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(std.err, "kshare %s: %v\n", name, err)
		return 1
	}
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
	fmt.Fprintf(w, "usage: kshare <command> [flags]\n\ncommands:\n")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nrun 'kshare <command> -h' for a command's flags\n")
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
