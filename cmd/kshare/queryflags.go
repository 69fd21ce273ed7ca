package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
)

// queryFlags are the flags of the commands that run one query over the
// tables their --init files define: kshare export and kshare work.
type queryFlags struct {
	inits       []scriptSource
	sql         string
	maxRows     int64
	idleTimeout time.Duration
	stats       bool
	metricsAddr string
	help        bool
}

// register adds the flags to fs; doing says what the command does with the
// rows ("exported", say), for the flags' help.
func (f *queryFlags) register(fs *flag.FlagSet, rowsAre, while string) {
	// A usage error is one line and a pointer to the help, which is too
	// long to scroll past for a mistyped flag; -h and --help are flags of
	// their own so that the flag package's errors do not print it.
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "see kshare %s --help\n", fs.Name()) }
	fs.BoolVar(&f.help, "h", false, "print this help")
	fs.BoolVar(&f.help, "help", false, "print this help")
	fs.Var(scriptFlag{list: &f.inits, file: true}, "init", "`file` of statements (CREATE TABLE, SET) to run first; repeatable")
	fs.StringVar(&f.sql, "query", "", "the `SELECT` whose rows are "+rowsAre+" (required)")
	fs.Int64Var(&f.maxRows, "max-rows", 0, "end after `N` rows (0: no bound)")
	options.DurationVar(fs, &f.idleTimeout, "idle-timeout", 0, "end once no record arrived for this `duration` (0: run until interrupted)")
	fs.BoolVar(&f.stats, "stats", false, "print a summary on stderr at the end")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`host:port`/metrics while "+while)
}

// printHelp prints the command's help if -h or --help was given, and
// returns flag.ErrHelp then.
func (f *queryFlags) printHelp(fs *flag.FlagSet, synopsis, help string) error {
	if !f.help {
		return nil
	}
	fmt.Fprintf(fs.Output(), "usage: kshare %s %s\n\n", fs.Name(), synopsis)
	fmt.Fprint(fs.Output(), help)
	fs.PrintDefaults()
	return flag.ErrHelp
}

// check reports the first bad value among these flags as a usage error.
func (f *queryFlags) check(fs *flag.FlagSet) error {
	switch {
	case strings.TrimSpace(f.sql) == "":
		return usagef(fs, "--query is required")
	case f.maxRows < 0:
		return usagef(fs, "--max-rows must not be negative, got %d", f.maxRows)
	}
	return checkMetricsAddr(fs, f.metricsAddr)
}

// runInits runs the statements of the --init files on eng, in order.
func (f *queryFlags) runInits(ctx context.Context, eng engine) error {
	for _, s := range f.inits {
		b, err := os.ReadFile(s.name)
		if err != nil {
			return fmt.Errorf("reading --init %s: %w", s.name, err)
		}
		if err := execScript(ctx, eng, s.name, string(b), nil); err != nil {
			return err
		}
	}
	return nil
}
