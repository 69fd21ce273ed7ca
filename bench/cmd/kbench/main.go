package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

var commands = map[string]func(ctx context.Context, args []string) error{
	"suite":        runSuite,
	"load":         runLoad,
	"franz":        runFranz,
	"latency":      runLatency,
	"workers":      runWorkers,
	"echo-worker":  runEchoWorker,
	"group":        runGroup,
	"table":        runTable,
	"model-server": runModelServer,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "kbench: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := cmd(ctx, os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "kbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(os.Stderr, "usage: kbench <%s> [flags]\n", strings.Join(names, "|"))
}

// bootstrapDefault is the broker scripts/kafka.sh started, if any.
func bootstrapDefault() string { return os.Getenv("KSHARE_KAFKA_BOOTSTRAP") }

// readFlags declares the flags of a command that reads n records (or rows)
// of a topic through a share group.
func readFlags(fs *flag.FlagSet, bootstrap, topic, group *string, n *int64, what string) {
	fs.StringVar(bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.StringVar(topic, "topic", "", "topic to read (required)")
	fs.StringVar(group, "group", "", "share group; set share.auto.offset.reset=earliest on it first (required)")
	fs.Int64Var(n, "n", 0, what+" to read before stopping (required)")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kbench: "+format+"\n", args...)
}
