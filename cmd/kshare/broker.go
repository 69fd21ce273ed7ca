package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register(&command{
		name:    "broker",
		summary: "run a local Kafka-compatible broker (kfake) with share groups, until Ctrl-C",
		run:     runBrokerCmd,
	})
}

// brokerConfig is what `kshare broker` was asked for.
type brokerConfig struct {
	addr       string            // host:port to listen on; port 0 picks one
	dataDir    string            // "" keeps everything in memory
	partitions int               // partitions of topics created without a count
	configs    map[string]string // kfake broker configs, on top of our defaults
}

// brokerDefaults are the broker configs `kshare broker` starts with. Kafka's
// own defaults otherwise (30 s record locks, 45 s share sessions), because
// the demo should behave as a user's cluster would; only the lock sweep is
// made frequent, since kfake's 5 s default would let an expired lock linger
// well past its deadline, which no real broker does.
var brokerDefaults = map[string]string{
	"share.record.lock.sweep.interval.ms": "500",
}

// configFlag collects repeated --config key=value flags.
type configFlag map[string]string

func (f configFlag) String() string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(f)) {
		pairs = append(pairs, k+"="+f[k])
	}
	return strings.Join(pairs, ",")
}

func (f configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	f[k] = v
	return nil
}

func runBrokerCmd(ctx context.Context, std stdio, args []string) error {
	cfg := brokerConfig{configs: map[string]string{}}
	fs := newFlagSet("broker", "[--addr HOST:PORT] [--data-dir DIR] [--partitions N] [--config KEY=VALUE]...", std)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:9092", "`host:port` to listen on (port 0 picks a free one)")
	fs.StringVar(&cfg.dataDir, "data-dir", "", "`directory` that keeps topics and share-group state across restarts (default: memory only)")
	fs.IntVar(&cfg.partitions, "partitions", 1, "partitions of topics created without a partition count, or auto-created")
	fs.Var(configFlag(cfg.configs), "config", "broker config `key=value`, repeatable (e.g. group.share.record.lock.duration.ms=5000)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if _, _, err := splitAddr(cfg.addr); err != nil {
		return usagef(fs, "--addr: %v", err)
	}
	if cfg.partitions < 1 {
		return usagef(fs, "--partitions must be at least 1, got %d", cfg.partitions)
	}

	c, addr, err := startBroker(cfg)
	if err != nil {
		return err
	}
	// The address alone on stdout, so a script can read it; the rest is
	// for people and goes to stderr.
	fmt.Fprintf(std.out, "listening on %s\n", addr)
	if cfg.dataDir != "" {
		fmt.Fprintf(std.err, "kshare broker: data kept in %s\n", cfg.dataDir)
	} else {
		fmt.Fprintf(std.err, "kshare broker: data kept in memory only (--data-dir keeps it across restarts)\n")
	}
	fmt.Fprintf(std.err, "kshare broker: share groups on; stop with Ctrl-C\n")
	<-ctx.Done()
	// Close writes the data dir's final state; only then is a restart
	// guaranteed to see every acknowledged record and share-group ack.
	c.Close()
	fmt.Fprintf(std.err, "kshare broker: stopped\n")
	return nil
}

// splitAddr checks that addr is host:port with a numeric port.
func splitAddr(addr string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has port %q, want a number from 0 to 65535", addr, p)
	}
	return host, port, nil
}

// startBroker starts a one-node kfake cluster as cfg says and returns it
// with the address it listens on. The caller closes it.
func startBroker(cfg brokerConfig) (*kfake.Cluster, string, error) {
	_, port, err := splitAddr(cfg.addr)
	if err != nil {
		return nil, "", err
	}
	if err := validateBrokerConfigs(cfg.configs); err != nil {
		return nil, "", err
	}
	configs := map[string]string{}
	for k, v := range brokerDefaults {
		configs[k] = v
	}
	for k, v := range cfg.configs {
		configs[k] = v
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		// kfake always binds 127.0.0.1; listening on the host the user
		// named (localhost, ::1, ...) needs our own listen function.
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			return net.Listen(network, cfg.addr)
		}),
		kfake.DefaultNumPartitions(cfg.partitions),
		// As Kafka's auto.create.topics.enable=true default does.
		kfake.AllowAutoTopicCreation(),
		kfake.BrokerConfigs(configs),
	}
	if cfg.dataDir != "" {
		if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
			return nil, "", fmt.Errorf("creating --data-dir: %w", err)
		}
		opts = append(opts, kfake.DataDir(cfg.dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", fmt.Errorf("listening on %s: %w (is another broker running? choose another --addr)", cfg.addr, err)
		}
		if cfg.dataDir != "" {
			return nil, "", fmt.Errorf("starting broker with --data-dir %s: %w", cfg.dataDir, err)
		}
		return nil, "", fmt.Errorf("starting broker on %s: %w", cfg.addr, err)
	}
	return c, c.ListenAddrs()[0], nil
}

// validateBrokerConfigs checks configs against the broker configs kfake
// implements. kfake takes its initial configs without a check, so a
// misspelt --config would otherwise be ignored in silence. The check runs on
// a throwaway in-memory cluster: its DescribeConfigs lists the names kfake
// knows, and an IncrementalAlterConfigs with ValidateOnly checks the values'
// types, one key at a time so that an error names its key.
func validateBrokerConfigs(configs map[string]string) error {
	if len(configs) == 0 {
		return nil
	}
	probe, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return fmt.Errorf("checking --config: %w", err)
	}
	defer probe.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(probe.ListenAddrs()...))
	if err != nil {
		return fmt.Errorf("checking --config: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	described, err := adm.DescribeBrokerConfigs(ctx)
	for _, rc := range described {
		if err == nil {
			err = rc.Err
		}
	}
	if err != nil {
		return fmt.Errorf("checking --config: describing kfake's configs: %w", err)
	}
	known := map[string]bool{}
	for _, rc := range described {
		for _, c := range rc.Configs {
			known[c.Key] = true
		}
	}
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			return fmt.Errorf("--config %s: not a broker config kshare broker knows (known: %s)", k, strings.Join(similarKeys(k, known), ", "))
		}
		v := configs[k]
		rs, err := adm.ValidateAlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: k, Value: &v}})
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			return fmt.Errorf("--config %s=%s: the broker does not accept the value: %w", k, v, err)
		}
	}
	return nil
}

// similarKeys returns the known keys that share key's first dotted word, or
// all of them if none does, sorted: enough to spot a misspelling without a
// screenful of unrelated names.
func similarKeys(key string, known map[string]bool) []string {
	first, _, _ := strings.Cut(key, ".")
	var similar, all []string
	for k := range known {
		all = append(all, k)
		if f, _, _ := strings.Cut(k, "."); f == first {
			similar = append(similar, k)
		}
	}
	if len(similar) == 0 {
		similar = all
	}
	sort.Strings(similar)
	return similar
}
