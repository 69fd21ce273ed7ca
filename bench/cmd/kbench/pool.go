package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/bench/internal/measure"
)

// The pool section measures the workers on a one-partition topic:
// `kshare work` with a process per row that sleeps 50 ms, the Go API's
// kshare.Work with a 50 ms function, and `kshare work --persistent` with a
// trivial worker (kbench echo-worker), each with a fresh group. Rows/s are
// from the first row's start to the last one's end (worker.Stats.Rate), so
// the group's join is not counted; peak RSS is the kshare process's alone.

// poolResult is one pool configuration.
type poolResult struct {
	name        string
	concurrency int
	rows        int64
	rate        float64
	maxRSS      int64 // bytes; 0 in process
	cpu         time.Duration
	err         error
}

// poolConfig is one configuration to run.
type poolConfig struct {
	name        string
	concurrency int
	rows        int64
	goAPI       bool
	persistent  bool
	pollRecords int
	with        string // extra WITH pairs
	delay       time.Duration
}

// runEchoWorker is `kbench echo-worker`: a --persistent worker that
// accepts every row at once, the cheapest a worker can be.
func runEchoWorker(_ context.Context, _ []string) error {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 4<<10)
	for {
		if _, err := in.ReadSlice('\n'); err != nil {
			return nil // stdin closed: the work is over
		}
		out.WriteString(`{"status":"accept"}` + "\n")
		// Answer before reading on: kshare waits for it.
		if in.Buffered() == 0 {
			if err := out.Flush(); err != nil {
				return nil
			}
		}
	}
}

func poolDDL(bootstrap, topic, group, with string) string {
	return fmt.Sprintf("CREATE TABLE orders (order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)) "+
		"WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', "+
		"'share-group-id' = '%s', 'format' = 'json', 'scan.startup.mode' = 'earliest-offset'%s);\n", bootstrap, topic, group, with)
}

var poolRateRE = regexp.MustCompile(`([0-9.]+) rows/s from the first row's start`)

// poolSection loads a one-partition topic and runs the configurations.
func poolSection(ctx context.Context, cfg *suiteConfig) []poolResult {
	topic := fmt.Sprintf("kbench-pool-%s", cfg.runID)
	slowRows := cfg.poolRows
	fastRows := cfg.poolRows * 10
	if _, err := load(ctx, loadConfig{bootstrap: cfg.bootstrap, topic: topic, partitions: 1, n: fastRows}); err != nil {
		return []poolResult{{name: "load", err: err}}
	}
	defer deleteTopics(context.Background(), cfg.bootstrap, topic)
	const delay = 50 * time.Millisecond
	configs := []poolConfig{
		{name: "kshare work, a process per row (sleep 0.05)", concurrency: 64, rows: slowRows, delay: delay},
		{name: "kshare work, a process per row, 1 member", concurrency: 64, rows: slowRows, delay: delay, with: ", 'source.parallelism' = '1'"},
		{name: "kshare work, a process per row, 2 x 500, batch_optimized", concurrency: 64, rows: slowRows, delay: delay,
			with: ", 'properties.max.poll.records' = '500', 'properties.share.acquire.mode' = 'batch_optimized'"},
		{name: "Go API kshare.Work, 50 ms function", concurrency: 64, rows: slowRows, delay: delay, goAPI: true},
		{name: "Go API kshare.Work, 50 ms function, 1 member", concurrency: 64, rows: slowRows, delay: delay, goAPI: true, with: ", 'source.parallelism' = '1'"},
		{name: "kshare work --persistent, echo worker, --poll-records 500", concurrency: 1, rows: fastRows, persistent: true, pollRecords: 500},
		{name: "kshare work --persistent, echo worker, --poll-records 500", concurrency: 4, rows: fastRows, persistent: true, pollRecords: 500},
		{name: "kshare work --persistent, echo worker (default poll)", concurrency: 4, rows: fastRows / 10, persistent: true},
	}
	var out []poolResult
	for i, c := range configs {
		if ctx.Err() != nil {
			break
		}
		if cfg.only != nil && !cfg.only.MatchString(c.name) {
			continue
		}
		group := fmt.Sprintf("kbench-%s-pool-%d", cfg.runID, i)
		r := poolResult{name: c.name, concurrency: c.concurrency, rows: c.rows}
		if err := freshGroup(ctx, cfg.bootstrap, group); err != nil {
			r.err = err
			out = append(out, r)
			continue
		}
		ddl := poolDDL(cfg.bootstrap, topic, group, c.with)
		if c.goAPI {
			r.rate, r.err = poolGoAPI(ctx, ddl, c)
		} else {
			r.rate, r.maxRSS, r.cpu, r.err = poolCommand(ctx, cfg, ddl, c)
		}
		if r.err != nil {
			logf("pool %q at %d: %v", c.name, c.concurrency, r.err)
		} else {
			logf("pool %q at %d: %.0f rows/s, peak RSS %.1f MiB", c.name, c.concurrency, r.rate, float64(r.maxRSS)/(1<<20))
		}
		out = append(out, r)
		select {
		case <-ctx.Done():
		case <-time.After(cfg.pause):
		}
	}
	return out
}

// poolGoAPI runs kshare.Work in this process.
func poolGoAPI(ctx context.Context, ddl string, c poolConfig) (float64, error) {
	eng := kshare.New()
	if _, err := eng.Exec(ctx, ddl); err != nil {
		return 0, err
	}
	st, err := kshare.Work(ctx, eng, "SELECT * FROM orders", c.concurrency, func(ctx context.Context, _ kshare.Row) error {
		// The work a row costs: a call to another service, say.
		t := time.NewTimer(c.delay)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, kshare.WorkQuery(kshare.MaxRows(c.rows)), kshare.PollRecords(c.pollRecords))
	if err != nil {
		return 0, err
	}
	if st.Done() != c.rows {
		return 0, fmt.Errorf("%d rows done, want %d", st.Done(), c.rows)
	}
	return st.Rate(), nil
}

// poolCommand runs kshare work as a process of its own.
func poolCommand(ctx context.Context, cfg *suiteConfig, ddl string, c poolConfig) (float64, int64, time.Duration, error) {
	dir, err := os.MkdirTemp("", "kbench-pool-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	init := filepath.Join(dir, "tables.sql")
	if err := os.WriteFile(init, []byte(ddl), 0o644); err != nil {
		return 0, 0, 0, err
	}
	argv := []string{cfg.kshare, "work", "--init", init, "--query", "SELECT * FROM orders",
		"--concurrency", strconv.Itoa(c.concurrency), "--max-rows", strconv.FormatInt(c.rows, 10), "--stats"}
	if c.pollRecords > 0 {
		argv = append(argv, "--poll-records", strconv.Itoa(c.pollRecords))
	}
	if c.persistent {
		argv = append(argv, "--persistent", "--", cfg.self, "echo-worker")
	} else {
		argv = append(argv, "--", "sleep", strconv.FormatFloat(c.delay.Seconds(), 'f', -1, 64))
	}
	res, err := measure.Run(ctx, argv, measure.Options{DevNull: true, Timeout: cfg.runTimeout})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%w: %s", err, strings.TrimSpace(string(res.Stderr)))
	}
	m := poolRateRE.FindSubmatch(res.Stderr)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("no rate in kshare work's --stats: %s", res.Stderr)
	}
	rate, _ := strconv.ParseFloat(string(m[1]), 64)
	return rate, res.MaxRSS, res.CPU(), nil
}

func (r *report) poolTable(w *strings.Builder) {
	if len(r.pool) == 0 {
		return
	}
	fmt.Fprintf(w, "## Workers: one partition\n\n")
	fmt.Fprintf(w, "kshare work and kshare.Work, fresh group each; rows/s from the first row's start to the last one's end. "+
		"Target: 50 ms rows at concurrency 64 >= 1,024 rows/s; --persistent echo >= 20,000 rows/s; kshare work peak RSS < 100 MiB.\n\n")
	fmt.Fprintf(w, "Peak RSS is the kshare process's own; CPU seconds are kshare's and its workers' together.\n\n")
	fmt.Fprintf(w, "| configuration | concurrency | rows | rows/s | peak RSS MiB | CPU s (kshare + workers) |\n|---|--:|--:|--:|--:|--:|\n")
	for _, x := range r.pool {
		if x.err != nil {
			fmt.Fprintf(w, "| %s | %d | %d | %s | | |\n", x.name, x.concurrency, x.rows, oneLine(x.err.Error()))
			continue
		}
		rss, cpu := "(in process)", ""
		if x.maxRSS > 0 {
			rss, cpu = fmt.Sprintf("%.1f", float64(x.maxRSS)/(1<<20)), fmt.Sprintf("%.1f", x.cpu.Seconds())
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s |\n", x.name, x.concurrency, x.rows, x.rate, rss, cpu)
	}
	w.WriteString("\n")
}
