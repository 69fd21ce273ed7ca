package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/bench/internal/measure"
	"github.com/kshare/kshare/bench/internal/orders"
)

// allSections are the parts of the suite, in the order they run.
var allSections = []string{"throughput", "latency", "workers", "pool", "models"}

// suiteConfig is what `kbench suite` was asked to do.
type suiteConfig struct {
	bootstrap    string
	n            int64
	runs         int
	partitions   []int
	javaCP       string
	kafkaVersion string
	kshare       string
	self         string
	out          string
	brokerPID    int
	sections     map[string]bool
	only         *regexp.Regexp
	pause        time.Duration
	runTimeout   time.Duration

	latencyRate    int
	latencySeconds int
	workersDelay   time.Duration
	workersSeconds int
	workersRecords int64
	poolRows       int64

	// The models section: the model server's answer time, the jobs of one
	// process at 64 calls at once, the longest window, and how long a
	// configuration's processes may take to all be calling.
	modelDelay  time.Duration
	modelJobs   int64
	modelCap    time.Duration
	modelWarmup time.Duration
	modelWith   string // extra WITH pairs for the jobs table

	kshareWith string // extra WITH pairs for kshare's tables
	// tumbleKeys is the customers of the topic the windowed contestants
	// also read once, to show that their memory grows with keys; 0 skips
	// it.
	tumbleKeys int
	// workDir holds the files of statements some contestants are given.
	workDir string

	// pgURL is the PostgreSQL server of the jdbc contestants, psql the
	// client of their limit; pgUnavailable says why they cannot run.
	pgURL, psql   string
	pgUnavailable error

	kshareUnavailable    error
	candidate            string // another kshare build, see candidateOf
	candidateUnavailable error
	runID                string
}

func runSuite(ctx context.Context, args []string) error {
	cfg := &suiteConfig{}
	var parts, sections, only string
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	fs.StringVar(&cfg.bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.Int64Var(&cfg.n, "n", 2_000_000, "orders per topic")
	fs.IntVar(&cfg.runs, "runs", 3, "rounds of every contestant; the table shows medians")
	fs.StringVar(&parts, "partitions", "1,8", "partition counts of the topics, comma separated")
	fs.StringVar(&cfg.javaCP, "java-cp", "", "classpath with Kafka's kafka-tools jar (required for the Java contestants)")
	fs.StringVar(&cfg.kafkaVersion, "kafka-version", os.Getenv("KSHARE_KAFKA_VERSION"), "Kafka version, for the report")
	fs.StringVar(&cfg.kshare, "kshare", "", "the kshare binary")
	fs.StringVar(&cfg.candidate, "kshare-candidate", "", "another kshare `binary` (a fix to measure) whose SELECT * json, TUMBLE and INSERT run alongside")
	fs.StringVar(&cfg.out, "out", "", "results `file` (markdown); the directory if it ends in /")
	fs.IntVar(&cfg.brokerPID, "broker-pid", 0, "the broker's pid, to report its CPU time per run")
	fs.StringVar(&sections, "sections", strings.Join(allSections, ","), "which parts to run")
	fs.StringVar(&only, "only", "", "regular expression: run only the contestants whose id matches (java-t1, franz-c4, kshare-json-p4, ...)")
	fs.DurationVar(&cfg.pause, "pause", time.Second, "pause between runs, so the broker settles the last group's leave")
	fs.DurationVar(&cfg.runTimeout, "run-timeout", 15*time.Minute, "kill a contestant that runs longer")
	fs.StringVar(&cfg.kshareWith, "kshare-with", "", "extra WITH pairs for every kshare table, e.g. \"'properties.max.poll.records' = '2000'\" (the report says so)")
	fs.IntVar(&cfg.latencyRate, "latency-rate", 2000, "records per second the latency producer writes")
	fs.IntVar(&cfg.latencySeconds, "latency-seconds", 20, "seconds of measured latency per configuration")
	fs.DurationVar(&cfg.workersDelay, "workers-delay", 5*time.Millisecond, "work per row of the slow workers")
	fs.IntVar(&cfg.workersSeconds, "workers-seconds", 10, "measured seconds per slow-worker configuration")
	fs.Int64Var(&cfg.workersRecords, "workers-records", 100_000, "orders in the slow workers' topic")
	fs.IntVar(&cfg.tumbleKeys, "tumble-keys", 100_000, "customers of the extra topic the TUMBLE contestants read once, to show memory against keys (0: skip it)")
	fs.StringVar(&cfg.pgURL, "pg-url", os.Getenv("KSHARE_PG_URL"), "PostgreSQL `URL` (postgres://user:password@host:port/db) for the jdbc contestants and psql's \\copy")
	fs.StringVar(&cfg.psql, "psql", "psql", "the psql `binary`")
	fs.Int64Var(&cfg.poolRows, "pool-rows", 10_000, "rows of each 50 ms pool configuration (ten times as many for the trivial --persistent worker)")
	fs.DurationVar(&cfg.modelDelay, "model-delay", 50*time.Millisecond, "how long the models section's model server takes to answer a call")
	fs.Int64Var(&cfg.modelJobs, "model-jobs", 20_000, "jobs of the models section's one process at 64 calls at once; the other configurations get as many as take them as long at their ideal rate")
	fs.DurationVar(&cfg.modelCap, "model-cap", time.Minute, "the longest measured window of a models configuration")
	fs.StringVar(&cfg.modelWith, "model-with", "", "extra WITH pairs for the models section's jobs table, e.g. \"'properties.max.poll.records' = '2000'\" (the report says so)")
	fs.DurationVar(&cfg.modelWarmup, "model-warmup", 5*time.Second, "the longest wait from a models configuration's first call until its window opens")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.modelDelay <= 0 || cfg.modelJobs < 1 || cfg.modelCap <= 0 {
		return errors.New("--model-delay, --model-jobs and --model-cap must be positive")
	}
	if cfg.bootstrap == "" {
		return errors.New("--bootstrap is required (or KSHARE_KAFKA_BOOTSTRAP)")
	}
	if cfg.n <= 0 || cfg.runs < 1 {
		return fmt.Errorf("--n and --runs must be positive (got %d and %d)", cfg.n, cfg.runs)
	}
	for _, p := range strings.Split(parts, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return fmt.Errorf("--partitions: %q is not a partition count", p)
		}
		cfg.partitions = append(cfg.partitions, v)
	}
	cfg.sections = map[string]bool{}
	for _, s := range strings.Split(sections, ",") {
		switch s = strings.TrimSpace(s); {
		case slices.Contains(allSections, s):
			cfg.sections[s] = true
		case s == "":
		default:
			return fmt.Errorf("--sections: unknown section %q (known: %s)", s, strings.Join(allSections, ", "))
		}
	}
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return fmt.Errorf("--only: %w", err)
		}
		cfg.only = re
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding kbench's own binary: %w", err)
	}
	cfg.self = self
	if cfg.workDir, err = os.MkdirTemp("", "kbench-"); err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	defer os.RemoveAll(cfg.workDir)
	cfg.runID = time.Now().Format("150405")
	cfg.kshareUnavailable = probeKshare(ctx, cfg.kshare)
	if cfg.kshareUnavailable != nil {
		logf("kshare contestants not available: %v", cfg.kshareUnavailable)
	}
	if cfg.candidate != "" {
		if cfg.candidateUnavailable = probeKshare(ctx, cfg.candidate); cfg.candidateUnavailable != nil {
			logf("the candidate build is not available: %v", cfg.candidateUnavailable)
		}
	}

	if cfg.pgUnavailable = pgUnavailable(ctx, cfg); cfg.pgUnavailable != nil {
		logf("PostgreSQL contestants not available: %v", cfg.pgUnavailable)
	}

	rep := &report{cfg: cfg, started: time.Now(), loadBefore: loadAvg()}
	if cfg.sections["throughput"] {
		for _, p := range cfg.partitions {
			b, err := throughput(ctx, cfg, p)
			if err != nil {
				return err
			}
			rep.blocks = append(rep.blocks, b)
		}
	}
	if cfg.sections["latency"] {
		rep.latency = latencySection(ctx, cfg)
	}
	if cfg.sections["workers"] {
		rep.workers = workersSection(ctx, cfg)
	}
	if cfg.sections["pool"] {
		rep.pool = poolSection(ctx, cfg)
	}
	if cfg.sections["models"] {
		rep.models = modelsSection(ctx, cfg)
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	rep.took = time.Since(rep.started)
	rep.loadAfter = loadAvg()

	md := rep.markdown()
	fmt.Print(md)
	if cfg.out != "" {
		path := cfg.out
		if strings.HasSuffix(path, "/") {
			path = filepath.Join(path, rep.fileName())
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("results directory: %w", err)
		}
		if err := os.WriteFile(path, []byte(md), 0o644); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
		logf("results written to %s", path)
	}
	return nil
}

// sample is one run of one contestant.
type sample struct {
	wall, cpu, brokerCPU time.Duration
	rss                  int64
	records              int64
	selfRate             float64
	err                  error
}

// entry is one contestant's runs on one topic.
type entry struct {
	c       contestant
	samples []sample
	// small are the runs with N/10 records (rssFlat contestants only).
	small []sample
	// wide is the run on the topic with cfg.tumbleKeys customers
	// (manyKeys contestants only).
	wide []sample
}

// block is every contestant on one topic.
type block struct {
	t       target
	loaded  loadStats
	entries []*entry
	// wide is the topic with cfg.tumbleKeys customers, if one was read.
	wide target
}

// parallelisms are the numbers of members (threads, clients, kshare's
// parallelism) each throughput contestant runs with; the targets are
// checked at each of them.
var parallelisms = []int{1, 4}

// contestants are every contestant on a topic of partitions partitions.
func (cfg *suiteConfig) contestants(partitions int) []contestant {
	var cs []contestant
	for _, k := range parallelisms {
		cs = append(cs, javaContestant(cfg, k))
		cs = append(cs, plainLoops(cfg, k, partitions)...)
		cs = append(cs, tableContestant(cfg, k))
		for _, p := range ksharePlans {
			cs = append(cs, kshareContestant(cfg, p, k))
		}
		tumble, insert := tumbleContestant(cfg, k), insertContestant(cfg, k)
		cs = append(cs, tumble, insert, tumbleInsertContestant(cfg, k))
		cs = append(cs, lookupContestant(cfg, k, true), lookupContestant(cfg, k, false))
		if k == 1 {
			// A jdbc job writes through one connection whatever its
			// source's parallelism.
			cs = append(cs, jdbcContestant(cfg, k, false), jdbcContestant(cfg, k, true), psqlContestant(cfg))
		}
		if cfg.candidate != "" {
			for _, c := range []contestant{kshareContestant(cfg, ksharePlans[0], k), tumble, insert} {
				cs = append(cs, candidateOf(cfg, c))
			}
		}
	}
	var out []contestant
	for _, c := range cs {
		if cfg.only == nil || cfg.only.MatchString(c.id) {
			out = append(out, c)
		}
	}
	return out
}

// throughput loads a topic with cfg.n orders in p partitions and reads it
// with every contestant, alternating them round by round so that a slow
// phase of the shared machine hurts all of them alike.
func throughput(ctx context.Context, cfg *suiteConfig, p int) (*block, error) {
	t := target{
		topic:      fmt.Sprintf("kbench-orders-%s-p%d", cfg.runID, p),
		partitions: p,
		n:          cfg.n,
		matching:   orders.CountQuantityAbove(cfg.n, 1),
	}
	logf("loading %d orders into %s (%d partition%s)", t.n, t.topic, p, plural(p))
	st, err := load(ctx, loadConfig{bootstrap: cfg.bootstrap, topic: t.topic, partitions: p, n: t.n})
	if err != nil {
		return nil, err
	}
	logf("loaded in %v (%.0f records/s); records per partition %v", st.took.Round(time.Millisecond), float64(t.n)/st.took.Seconds(), st.perPartition)
	// One unmeasured read first: right after a load the broker is still
	// busy with it (the first contestant took three times as long as in
	// later rounds, and the Java tool timed out), and the log's pages come
	// into the page cache for everyone alike.
	warm := fmt.Sprintf("kbench-%s-warmup-p%d", cfg.runID, p)
	if err := freshGroup(ctx, cfg.bootstrap, warm); err != nil {
		return nil, err
	}
	wst := time.Now()
	if _, err := franzLoop(ctx, cfg.bootstrap, t.topic, warm, t.n, 1); err != nil {
		return nil, fmt.Errorf("warm-up read of %s: %w", t.topic, err)
	}
	logf("warm-up read in %v", time.Since(wst).Round(time.Millisecond))
	b := &block{t: t, loaded: st}
	for _, c := range cfg.contestants(p) {
		b.entries = append(b.entries, &entry{c: c})
	}
	small := t
	small.n = max(1, t.n/10)
	small.matching = orders.CountQuantityAbove(small.n, 1)
	for round := 1; round <= cfg.runs; round++ {
		for _, e := range b.entries {
			if e.c.unavailable != nil {
				continue
			}
			s := runOne(ctx, cfg, e.c, t, fmt.Sprintf("r%d", round))
			e.samples = append(e.samples, s)
			// One round of N/10 is enough to see whether memory follows N.
			if e.c.rssFlat && e.c.idleEnd == 0 && round == 1 {
				e.small = append(e.small, runOne(ctx, cfg, e.c, small, fmt.Sprintf("r%d-small", round)))
			}
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
		}
	}
	// The topic is not needed again; deleting it keeps a long run's disk use
	// to one topic at a time.
	if err := deleteTopics(ctx, cfg.bootstrap, t.topic); err != nil {
		logf("%v", err)
	}
	if err := otherTopics(ctx, cfg, b); err != nil {
		return nil, err
	}
	return b, nil
}

// initFile is where a run's --init statements are written.
func initFile(cfg *suiteConfig, group string) string {
	return filepath.Join(cfg.workDir, group+".sql")
}

// otherTopics runs, once each, the contestants that need a topic of their
// own: those that read their topic whole (idleEnd) get one of N/10 records
// for their memory against N, and the manyKeys ones one of N records with
// cfg.tumbleKeys customers, for their memory against keys.
func otherTopics(ctx context.Context, cfg *suiteConfig, b *block) error {
	small := b.t
	small.topic, small.n = b.t.topic+"-small", max(1, b.t.n/10)
	small.matching = orders.CountQuantityAbove(small.n, 1)
	wide := b.t
	wide.topic, wide.customers = fmt.Sprintf("%s-k%d", b.t.topic, cfg.tumbleKeys), cfg.tumbleKeys
	for _, o := range []struct {
		t     target
		wants func(c contestant) bool
		keep  func(e *entry, s sample)
	}{
		{small, func(c contestant) bool { return c.rssFlat && c.idleEnd > 0 }, func(e *entry, s sample) { e.small = append(e.small, s) }},
		{wide, func(c contestant) bool { return c.manyKeys && cfg.tumbleKeys > 0 }, func(e *entry, s sample) { e.wide = append(e.wide, s) }},
	} {
		var es []*entry
		for _, e := range b.entries {
			if e.c.unavailable == nil && o.wants(e.c) {
				es = append(es, e)
			}
		}
		if len(es) == 0 {
			continue
		}
		logf("loading %d orders with %d customers into %s", o.t.n, o.t.keys(), o.t.topic)
		if _, err := load(ctx, loadConfig{bootstrap: cfg.bootstrap, topic: o.t.topic, partitions: o.t.partitions, n: o.t.n, customers: o.t.customers}); err != nil {
			return err
		}
		if o.t.customers > 0 {
			b.wide = o.t
		}
		for _, e := range es {
			o.keep(e, runOne(ctx, cfg, e.c, o.t, "r1-"+o.t.topic[len(b.t.topic)+1:]))
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
		}
		if err := deleteTopics(ctx, cfg.bootstrap, o.t.topic); err != nil {
			logf("%v", err)
		}
	}
	return nil
}

// runOne runs contestant c once on t with a fresh share group.
func runOne(ctx context.Context, cfg *suiteConfig, c contestant, t target, tag string) sample {
	var s sample
	group := fmt.Sprintf("kbench-%s-%s-p%d-%s", cfg.runID, c.id, t.partitions, tag)
	if err := freshGroup(ctx, cfg.bootstrap, group); err != nil {
		s.err = err
		return s
	}
	var after func(context.Context) error
	if c.setup != nil {
		var err error
		if after, err = c.setup(ctx, t, group); err != nil {
			s.err = fmt.Errorf("preparing %s: %w", c.id, err)
			logf("%v", s.err)
			return s
		}
	}
	b0, okB0 := procCPU(cfg.brokerPID)
	res, err := measure.Run(ctx, c.command(t, group), measure.Options{Capture: c.kind != "kshare", DevNull: c.kind == "kshare", Timeout: cfg.runTimeout})
	b1, okB1 := procCPU(cfg.brokerPID)
	s.wall, s.cpu, s.rss = res.Wall-c.idleEnd, res.CPU(), res.MaxRSS
	if okB0 && okB1 {
		s.brokerCPU = b1 - b0
	}
	if err == nil {
		s.records, s.selfRate, err = c.check(t, res)
	}
	if after != nil {
		if aerr := after(ctx); err == nil {
			err = aerr
		}
	}
	s.err = err
	if err != nil {
		logf("%s on %s (%s) failed after %v: %v", c.id, t.topic, tag, res.Wall.Round(time.Millisecond), err)
	} else {
		logf("%-18s p%d %-9s %9.0f records/s  wall %6.2fs  cpu %6.2fs  broker cpu %6.2fs  rss %4.0f MiB",
			c.id, t.partitions, tag, float64(t.n)/s.wall.Seconds(), s.wall.Seconds(), s.cpu.Seconds(), s.brokerCPU.Seconds(), float64(s.rss)/(1<<20))
	}
	// Let the broker finish the group's leave before the next contestant
	// starts, so that one's clean-up is not the other's cost.
	select {
	case <-ctx.Done():
	case <-time.After(cfg.pause):
	}
	return s
}

func goVersion() string { return runtime.Version() }
