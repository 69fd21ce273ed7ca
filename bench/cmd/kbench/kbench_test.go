package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/bench/internal/measure"
	"github.com/kshare/kshare/internal/kafkatest"
)

// The suite's parts, each on a small scale, against kfake or (under
// scripts/test.sh) the real broker. They check that the parts work, not
// how fast.

func TestLoadAndFranzLoop(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	ctx := kafkatest.Context(t)
	topic := kafkatest.TopicName(t)
	st, err := load(ctx, loadConfig{bootstrap: addr, topic: topic, partitions: 2, n: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.perPartition[0] + st.perPartition[1]; got != 3000 {
		t.Fatalf("loaded %d records, want 3000", got)
	}
	group := kafkatest.GroupName(t)
	if err := freshGroup(ctx, addr, group); err != nil {
		t.Fatal(err)
	}
	rep, err := franzLoop(ctx, addr, topic, group, 3000, 2)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records < 3000 {
		t.Errorf("the loop read %d records, want 3000", rep.Records)
	}
	// The tuned loop's settings, on a group of its own.
	tuned := kafkatest.GroupName(t) + "-tuned"
	if err := freshGroup(ctx, addr, tuned); err != nil {
		t.Fatal(err)
	}
	rep, err = franzLoop(ctx, addr, topic, tuned, 3000, 2, franzTuned(2, 2).opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records < 3000 {
		t.Errorf("the tuned loop read %d records, want 3000", rep.Records)
	}
}

func TestSlowWorkers(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	ctx := kafkatest.Context(t)
	topic := kafkatest.TopicName(t)
	if _, err := load(ctx, loadConfig{bootstrap: addr, topic: topic, partitions: 1, n: 2000}); err != nil {
		t.Fatal(err)
	}
	wc := workersConfig{bootstrap: addr, topic: topic, group: kafkatest.GroupName(t), members: 2,
		delay: time.Millisecond, pollRecords: 20}
	if err := freshGroup(ctx, addr, wc.group); err != nil {
		t.Fatal(err)
	}
	wc.from = time.Now().Add(time.Second)
	wc.to = wc.from.Add(time.Second)
	rep, err := slowWorkers(ctx, wc)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows == 0 {
		t.Error("no row finished inside the window")
	}
}

func TestLatency(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	for _, kshare := range []bool{true, false} {
		lc := latencyConfig{bootstrap: addr, partitions: 2, rate: 500, warmup: 500 * time.Millisecond,
			measure: time.Second, par: 2, kshare: kshare, tag: strings.ToLower(kafkatest.TopicName(t))}
		r := measureLatency(kafkatest.Context(t), lc)
		if r.err != nil {
			t.Fatalf("%s: %v", r.name, r.err)
		}
		if r.count == 0 || r.p50 <= 0 || r.p99 < r.p50 || r.max < r.p99 {
			t.Errorf("%s: implausible figures %+v", r.name, r)
		}
	}
}

func TestCheckJava(t *testing.T) {
	out := "start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg, fetch.time.ms\n" +
		"2026-12-02 11:34:49:246, 2026-12-02 11:34:55:913, 1.2672, 0.1901, 2999.8500, 20000, 6667\n"
	n, rate, err := checkJava(target{n: 20000}, measure.Result{Stdout: []byte(out)})
	if err != nil || n != 20000 || rate != 2999.85 {
		t.Errorf("checkJava = %d, %v, %v", n, rate, err)
	}
	if _, _, err := checkJava(target{n: 30000}, measure.Result{Stdout: []byte(out)}); err == nil {
		t.Error("want an error when the tool read fewer records than asked")
	}
	if _, _, err := checkJava(target{n: 1}, measure.Result{Stdout: []byte("Exception in thread main\n")}); err == nil {
		t.Error("want an error for output without a result line")
	}
}

func TestReportRatios(t *testing.T) {
	cfg := &suiteConfig{n: 1000, runs: 1, kafkaVersion: "4.3.1"}
	mk := func(c contestant, wall, broker time.Duration) *entry {
		return &entry{c: c, samples: []sample{{wall: wall, cpu: time.Second, brokerCPU: broker, rss: 100 << 20, records: 1000}}}
	}
	b := &block{t: target{partitions: 1, n: 1000}, entries: []*entry{
		mk(contestant{name: "java", id: "java-t1", kind: "java", par: 1}, 2*time.Second, 10*time.Millisecond),
		mk(contestant{name: "franz", id: "franz-c1", kind: "franz", par: 1}, time.Second, 40*time.Millisecond),
		mk(contestant{name: "tuned", id: "franztuned-c1", kind: "franz", par: 1}, time.Second*8/10, 20*time.Millisecond),
		mk(contestant{name: "goapi", id: "kshare-go-p1", kind: "table", par: 1}, time.Second, 14*time.Millisecond),
		mk(contestant{name: "kshare", id: "kshare-json-p1", kind: "kshare", par: 1, headline: true, rssFlat: true}, time.Second*10/9, 20*time.Millisecond),
	}}
	r := &report{cfg: cfg, started: time.Now(), blocks: []*block{b}}
	reportHas(t, r.markdown(),
		// records/s, then broker CPU: 20 ms for 1000 records is 2 s per 100k.
		"| kshare `kshare-json-p1` | 900 |", "| 0.02 | 2.000 |", "| 1.80x | 0.90x | 0.72x |",
		"| goapi `kshare-go-p1` | 1,000 |", "| 2.00x | 1.00x | 0.80x |",
		"| SELECT * json to CSV >= 1.3x Java tool, 1 thread (1 partition, parallelism 1) | 1.80x | met |",
		"| SELECT * json to CSV >= 1.0x plain franz-go loop with defaults (1 partition, parallelism 1) | 0.90x | missed |",
		"| Go API >= 1.0x plain franz-go loop with defaults (1 partition, parallelism 1) | 1.00x | met |",
		"| Go API >= 0.85x tuned plain franz-go loop (1 partition, parallelism 1) | 0.80x | missed |",
		"| Go API: broker CPU per 100k records within 1.5x of the cheapest contestant's (1 partition, parallelism 1) | 1.400 s vs 1.000 s (java-t1): 1.40x | met |",
		"| SELECT * json to CSV: broker CPU per 100k records within 1.5x of the cheapest contestant's (1 partition, parallelism 1) | 2.000 s vs 1.000 s (java-t1): 2.00x | missed |",
		"| peak RSS < 150 MiB (SELECT * json to CSV, 1 partition, parallelism 1) | 100 MiB | met |",
	)
}

// reportHas fails t for each of wants that md lacks.
func reportHas(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}

// The slow-worker target is judged on the default settings, against one
// member with the default settings, not on the rows that set
// max.poll.records.
func TestWorkersTargetUsesDefaults(t *testing.T) {
	r := &report{cfg: &suiteConfig{n: 1000, workersDelay: 5 * time.Millisecond}, started: time.Now(), workers: []workersResult{
		{members: 1, procs: 1, pollRecords: 50, rate: 200},
		{members: 16, procs: 1, pollRecords: 50, rate: 3000},
		{members: 1, procs: 1, rate: 190},
		{members: 16, procs: 1, rate: 760},
	}}
	reportHas(t, r.markdown(),
		"| slow workers, default settings: 16 members >= 10x 1 member | 4.00x | missed |",
		"| 16 | 1 x 16 | 50 | 3000 | 15.00x | 0 |",
		"| 16 | 1 x 16 | default | 760 | 4.00x | 0 |",
	)
}

// Every contestant runs its own program. The candidate build's rows once
// ran the main build: its command was built over another copy of the
// contestant than the one that was given the candidate's binary.
func TestContestantsRunTheirOwnBinary(t *testing.T) {
	dir := t.TempDir()
	// Two stand-ins for kshare builds that say which one ran.
	script := func(name string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho "+name+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := &suiteConfig{bootstrap: "127.0.0.1:9", kshare: script("main"), candidate: script("candidate"),
		self: "/bin/kbench-itself", javaCP: "/jars/*", workDir: dir, psql: "/usr/bin/psql", pgURL: "postgres://u:p@127.0.0.1:9/db"}
	tg := target{topic: "orders", partitions: 8, n: 100, matching: 50}
	counts := map[string]int{}
	var candidates []string
	for _, c := range cfg.contestants(tg.partitions) {
		var want string
		switch {
		case strings.HasPrefix(c.id, "candidate-"):
			want = cfg.candidate
			candidates = append(candidates, c.id)
			if c.rssFlat || c.manyKeys || c.headline {
				t.Errorf("%s would run on the extra topics or be judged as the main build", c.id)
			}
		case c.kind == "kshare":
			want = cfg.kshare
		case c.kind == "java":
			want = "java"
		case c.kind == "psql":
			want = cfg.psql
		default:
			want = cfg.self
		}
		counts[want]++
		cmd := c.command(tg, "g")
		if cmd[0] != want {
			t.Errorf("%s runs %s, want %s", c.id, cmd[0], want)
			continue
		}
		if want != cfg.kshare && want != cfg.candidate {
			continue
		}
		res, err := measure.Run(kafkatest.Context(t), cmd, measure.Options{Capture: true, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("%s: %v", c.id, err)
		}
		if got, name := strings.TrimSpace(string(res.Stdout)), filepath.Base(want); got != name {
			t.Errorf("%s ran the %s build, want the %s build", c.id, got, name)
		}
	}
	if got, want := strings.Join(candidates, " "), "candidate-json-p1 candidate-tumble-p1 candidate-insert-p1 candidate-json-p4 candidate-tumble-p4 candidate-insert-p4"; got != want {
		t.Errorf("candidate contestants %s, want %s", got, want)
	}
	if counts[cfg.candidate] != 6 || counts[cfg.kshare] == 0 || counts[cfg.self] == 0 || counts["java"] != 2 {
		t.Errorf("contestants by program: %v", counts)
	}
}

func TestPercentileAndMedian(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(ds, 50); p != 50*time.Millisecond {
		t.Errorf("p50 = %v", p)
	}
	if p := percentile(ds, 99); p != 99*time.Millisecond {
		t.Errorf("p99 = %v", p)
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median = %v", m)
	}
	if s := thousands(2000000); s != "2,000,000" {
		t.Errorf("thousands = %s", s)
	}
}

func TestKshareStats(t *testing.T) {
	stderr := "table 'orders' created\n-- stats\nrows: 200000\nelapsed: 3.026s\nrows/s: 66083.8\nrecords: 200000\n"
	rows, rate, ok := kshareStats([]byte(stderr))
	if !ok || rows != 200000 || rate != 66083.8 {
		t.Errorf("kshareStats = %d, %v, %v", rows, rate, ok)
	}
	if _, _, ok := kshareStats([]byte("kshare: no such table\n")); ok {
		t.Error("found stats in an error message")
	}
}

// The suite hands a plain loop its policy as `kbench franz` flags; what the
// loop parses back must be the policy it was given, or a "tuned" row would
// quietly run franz-go's defaults.
func TestFranzPolicyFlags(t *testing.T) {
	for _, p := range []franzPolicy{
		franzDefaults,
		kshareFetch(1, 1),
		kshareFetch(16, 1),
		franzTuned(4, 8),
		{fetchMaxBytes: 1 << 20, maxRecords: 50, strict: true, prefetch: 2},
	} {
		fs := flag.NewFlagSet("franz", flag.ContinueOnError)
		var got franzPolicy
		got.register(fs)
		if err := fs.Parse(p.args()); err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		if got != p {
			t.Errorf("policy %+v came back as %+v from %q", p, got, p.args())
		}
	}
	if franzDefaults.String() != "franz-go defaults" || len(franzDefaults.opts()) != 0 {
		t.Errorf("the plain loop's defaults set something: %q, %d options", franzDefaults, len(franzDefaults.opts()))
	}
	if s := franzTuned(1, 1).String(); !strings.Contains(s, "1 MiB window") {
		t.Errorf("tuned loop = %q, want a 1 MiB window", s)
	}
	fs := flag.NewFlagSet("franz", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p franzPolicy
	p.register(fs)
	if err := fs.Parse([]string{"--fetch-max-bytes", "0"}); err == nil {
		t.Error("--fetch-max-bytes 0 was accepted")
	}
}

// The pool table shows each configuration with its rate, the kshare
// process's peak RSS, and the error of one that failed.
func TestPoolTable(t *testing.T) {
	r := &report{cfg: &suiteConfig{n: 1000}, started: time.Now(), pool: []poolResult{
		{name: "kshare work, a process per row (sleep 0.05)", concurrency: 64, rows: 3000, rate: 1100.4, maxRSS: 40 << 20, cpu: 2 * time.Second},
		{name: "Go API kshare.Work, 50 ms function", concurrency: 64, rows: 3000, rate: 1183},
		{name: "kshare work --persistent, echo worker", concurrency: 1, rows: 30000, err: errors.New("no rate\nin output")},
	}}
	reportHas(t, r.markdown(),
		"## Workers: one partition",
		"| kshare work, a process per row (sleep 0.05) | 64 | 3000 | 1100 | 40.0 | 2.0 |",
		"| Go API kshare.Work, 50 ms function | 64 | 3000 | 1183 | (in process) |  |",
		"| kshare work --persistent, echo worker | 1 | 30000 | no rate | | |",
	)
}

// The TUMBLE contestant is kshare export of the windowed count over a table
// whose event time is the record timestamp, from an --init file its setup
// writes and its after removes; the INSERT contestant is a shell script
// whose job --max-rows ends, into a sink topic its setup creates.
func TestPipelineContestantCommands(t *testing.T) {
	cfg := &suiteConfig{bootstrap: "127.0.0.1:9", kshare: "/bin/kshare", workDir: t.TempDir(), kshareWith: "'properties.max.poll.records' = '2000'"}
	tg := target{topic: "orders", partitions: 8, n: 100}
	tumble := tumbleContestant(cfg, 4)
	cmd := tumble.command(tg, "g1")
	init := filepath.Join(cfg.workDir, "g1.sql")
	want := []string{"/bin/kshare", "export", "--init", init, "--query", tumbleQuery, "--out", "-", "--format", "csv", "--idle-timeout", "5s", "--stats"}
	if strings.Join(cmd, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("tumble runs %q, want %q", cmd, want)
	}
	if tumble.idleEnd != 5*time.Second || !tumble.rssFlat || !tumble.manyKeys {
		t.Errorf("tumble: idleEnd %v, rssFlat %v, manyKeys %v", tumble.idleEnd, tumble.rssFlat, tumble.manyKeys)
	}
	after, err := tumble.setup(kafkatest.Context(t), tg, "g1")
	if err != nil {
		t.Fatal(err)
	}
	ddl, err := os.ReadFile(init)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL", "WATERMARK FOR ts AS ts - INTERVAL '5' SECOND",
		"'topic' = 'orders'", "'share-group-id' = 'g1'", "'source.parallelism' = '4'", "'properties.max.poll.records' = '2000')"} {
		if !strings.Contains(string(ddl), w) {
			t.Errorf("the tumble's --init file lacks %q:\n%s", w, ddl)
		}
	}
	if err := after(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(init); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the --init file is left after the run: %v", err)
	}

	insert := insertContestant(cfg, 1)
	cmd = insert.command(tg, "g2")
	if len(cmd) != 5 || cmd[0] != "/bin/kshare" || cmd[1] != "-e" || cmd[3] != "--max-rows" || cmd[4] != "100" {
		t.Fatalf("insert runs %q", cmd)
	}
	for _, w := range []string{"'topic' = 'orders'", "'source.parallelism' = '1'",
		"CREATE TABLE kafka_sink (order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)) WITH ('connector' = 'kafka', 'topic' = 'g2-sink', 'properties.bootstrap.servers' = '127.0.0.1:9', 'format' = 'json')",
		"; INSERT INTO kafka_sink SELECT * FROM orders"} {
		if !strings.Contains(cmd[2], w) {
			t.Errorf("the insert's script lacks %q:\n%s", w, cmd[2])
		}
	}
}

// The checks read what kshare says at the end: the --stats summary of the
// export, the job line of the shell, and fail a run that left records out.
func TestPipelineChecks(t *testing.T) {
	tg := target{n: 1000}
	tumble := tumbleContestant(&suiteConfig{}, 1)
	stats := "-- stats\nrows: 2000\nelapsed: 7.5s\nrows/s: 800.0\nrecords: 1000\naccepted: 1000\nreleased: 0\n"
	n, rate, err := tumble.check(tg, measure.Result{Stderr: []byte(stats)})
	if err != nil || n != 1000 || rate != 400 {
		t.Errorf("tumble check = %d, %v, %v; want 1000 records at 400/s (7.5 s less the 5 s idle timeout)", n, rate, err)
	}
	if _, _, err := tumble.check(tg, measure.Result{Stderr: []byte(strings.Replace(stats, "accepted: 1000", "accepted: 998", 1))}); err == nil {
		t.Error("a tumble run that accepted 998 of 1000 records passed")
	}
	if _, _, err := tumble.check(tg, measure.Result{Stderr: []byte("kshare export: --query: unknown column\n")}); err == nil {
		t.Error("a tumble run without stats passed")
	}

	windows := tumbleInsertContestant(&suiteConfig{}, 1)
	wline := "job 1 started: INSERT INTO 'per_minute'\njob 1 finished: 40 rows written, 1000 records accepted, 0 records released\n"
	if n, _, err := windows.check(tg, measure.Result{Stderr: []byte(wline)}); err != nil || n != 1000 {
		t.Errorf("windowed insert check = %d, %v", n, err)
	}
	for _, bad := range []string{strings.Replace(wline, "1000 records", "990 records", 1), strings.Replace(wline, "40 rows", "0 rows", 1), strings.Replace(wline, "finished", "failed", 1)} {
		if _, _, err := windows.check(tg, measure.Result{Stderr: []byte(bad)}); err == nil {
			t.Errorf("windowed insert check passed %q", bad)
		}
	}

	insert := insertContestant(&suiteConfig{}, 1)
	line := "table 'orders' created\njob 1 started: INSERT INTO 'kafka_sink'\njob 1 finished: 1000 rows written, 1000 records accepted, 0 records released\n"
	if n, _, err := insert.check(tg, measure.Result{Stderr: []byte(line)}); err != nil || n != 1000 {
		t.Errorf("insert check = %d, %v", n, err)
	}
	for _, bad := range []string{
		strings.Replace(line, "finished", "failed", 1),
		strings.Replace(line, "1000 records accepted", "999 records accepted", 1),
		"kshare: unknown connector\n",
	} {
		if _, _, err := insert.check(tg, measure.Result{Stderr: []byte(bad)}); err == nil {
			t.Errorf("insert check passed %q", bad)
		}
	}
}

// Both contestants for real: kshare built from this tree, a small topic on
// the test broker, run and checked the way the suite does, the INSERT's
// sink topic holding every record after it.
func TestPipelineContestantsRun(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	ctx := kafkatest.Context(t)
	cfg := &suiteConfig{bootstrap: addr, kshare: buildKshare(ctx, t), workDir: t.TempDir(), runTimeout: time.Minute, runID: "t"}
	tg := loadSmallTarget(ctx, t, addr)
	for _, c := range []contestant{tumbleContestant(cfg, 2), insertContestant(cfg, 2), tumbleInsertContestant(cfg, 2)} {
		runChecked(ctx, t, cfg, c, tg)
	}
}

// buildKshare builds kshare from this tree into the test's directory, for
// the tests that run contestants as the suite does.
func buildKshare(ctx context.Context, t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kshare")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kshare/kshare/cmd/kshare").CombinedOutput(); err != nil {
		t.Fatalf("building kshare: %v\n%s", err, out)
	}
	return bin
}

// loadSmallTarget loads a topic of 3000 orders in 2 partitions on the test
// broker: the suite's target, small enough for a test.
func loadSmallTarget(ctx context.Context, t *testing.T, addr string) target {
	t.Helper()
	tg := target{topic: kafkatest.TopicName(t), partitions: 2, n: 3000}
	if _, err := load(ctx, loadConfig{bootstrap: addr, topic: tg.topic, partitions: tg.partitions, n: tg.n, customers: 50}); err != nil {
		t.Fatal(err)
	}
	return tg
}

// runChecked runs contestant c on tg once, in a share group of its own,
// and fails the test unless the sample is plausible: every record, a wall
// time and a peak RSS. It reports whether the run itself succeeded.
func runChecked(ctx context.Context, t *testing.T, cfg *suiteConfig, c contestant, tg target) bool {
	t.Helper()
	s := runOne(ctx, cfg, c, tg, strings.ToLower(kafkatest.GroupName(t)))
	if s.err != nil {
		t.Errorf("%s: %v", c.id, s.err)
		return false
	}
	if s.records != tg.n || s.wall <= 0 || s.rss == 0 {
		t.Errorf("%s: implausible sample %+v", c.id, s)
	}
	return true
}

// The pipeline contestants are judged against SELECT * to CSV with the same
// parallelism; the TUMBLE's memory is shown against N and against keys.
func TestPipelineTargets(t *testing.T) {
	cfg := &suiteConfig{n: 1000, runs: 1, kafkaVersion: "4.3.1"}
	mk := func(c contestant, wall time.Duration, rss int64) *entry {
		return &entry{c: c, samples: []sample{{wall: wall, cpu: time.Second, rss: rss << 20, records: 1000}}}
	}
	tumble := mk(tumbleContestant(cfg, 1), 2*time.Second, 60)
	tumble.small = []sample{{wall: time.Second, rss: 55 << 20, records: 100}}
	tumble.wide = []sample{{wall: 3 * time.Second, rss: 140 << 20, records: 1000}}
	b := &block{t: target{partitions: 1, n: 1000}, wide: target{partitions: 1, n: 1000, customers: 100_000}, entries: []*entry{
		mk(contestant{name: "kshare", id: "kshare-json-p1", kind: "kshare", par: 1, headline: true}, time.Second, 40),
		tumble,
		mk(insertContestant(cfg, 1), time.Second*10/8, 160),
	}}
	r := &report{cfg: cfg, started: time.Now(), blocks: []*block{b}}
	reportHas(t, r.markdown(),
		"| TUMBLE 1 min count per customer to CSV >= 0.9x SELECT * json to CSV (1 partition, parallelism 1) | 0.50x | missed |",
		"| peak RSS flat from N/10 to N records (TUMBLE 1 min count per customer to CSV, 1 partition, parallelism 1) | 55 -> 60 MiB | met |",
		"| peak RSS from 999 to 100,000 customers (TUMBLE 1 min count per customer to CSV, 1 partition, parallelism 1) | 60 -> 140 MiB | shown |",
		"| INSERT INTO kafka sink SELECT *, json to json >= 0.7x SELECT * json to CSV (1 partition, parallelism 1) | 0.80x | met |",
		"| peak RSS < 150 MiB (INSERT INTO kafka sink SELECT *, json to json, 1 partition, parallelism 1) | 160 MiB | missed |",
		"| N, 100,000 customers: MiB |",
		"| kshare export, TUMBLE 1 min COUNT(*) per customer, json, parallelism 1 | 1 | 55 | 60 | 140 |",
	)
}

// The jdbc contestants are judged against psql's \copy of the same rows;
// exactly once is shown against at least once. psql reads no Kafka, so it
// is never the cheapest contestant's broker CPU, nor compared with the
// consumers.
func TestJdbcTargets(t *testing.T) {
	cfg := &suiteConfig{n: 1000, runs: 1, kafkaVersion: "4.3.1"}
	mk := func(c contestant, wall time.Duration) *entry {
		return &entry{c: c, samples: []sample{{wall: wall, cpu: time.Second, rss: 40 << 20, records: 1000, brokerCPU: 10 * time.Millisecond}}}
	}
	b := &block{t: target{partitions: 1, n: 1000}, entries: []*entry{
		mk(contestant{name: "kshare", id: "kshare-json-p1", kind: "kshare", par: 1, headline: true}, time.Second),
		mk(contestant{name: "java", id: "java-t1", kind: "java", par: 1}, time.Second),
		mk(jdbcContestant(cfg, 1, false), time.Second*10/8),
		mk(jdbcContestant(cfg, 1, true), time.Second*10/6),
		{c: psqlContestant(cfg), samples: []sample{{wall: time.Second, cpu: time.Second, rss: 10 << 20, records: 1000, brokerCPU: time.Millisecond}}},
	}}
	r := &report{cfg: cfg, started: time.Now(), blocks: []*block{b}}
	md := r.markdown()
	reportHas(t, md,
		"| INSERT INTO jdbc (PostgreSQL) SELECT *, json >= 0.7x psql \\copy of the same rows from CSV (1 partition, parallelism 1) | 0.80x | met |",
		"| INSERT INTO jdbc (PostgreSQL) SELECT *, json, exactly once against at least once (1 partition, parallelism 1) | 0.75x | shown |",
		"| INSERT INTO jdbc (PostgreSQL) SELECT *, json, exactly once, against psql \\copy (1 partition, parallelism 1) | 0.60x | shown |",
	)
	if strings.Contains(md, "(psql-copy)") {
		t.Errorf("psql is named as the cheapest contestant's broker CPU:\n%s", md)
	}
}

func TestWindowsSpanned(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.TimeOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		start string
		d     time.Duration
		want  int
	}{
		{"10:00:10", 20 * time.Second, 1},
		{"10:00:50", 20 * time.Second, 2},
		{"10:00:00", 3 * time.Minute, 4},
	} {
		if got := windowsSpanned(at(c.start), c.d, time.Minute); got != c.want {
			t.Errorf("windowsSpanned(%s, %v) = %d, want %d", c.start, c.d, got, c.want)
		}
	}
}
