package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/bench/internal/measure"
)

// The models section measures ML_PREDICT end to end: kshare processes
// running
//
//	INSERT INTO answers SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))
//
// from a kafka-sharegroup table to a kafka sink, against an
// OpenAI-compatible server of kbench's own (modelserver.go)
// that answers every call after --model-delay. Every configuration reads
// the same 1-partition topic of jobs through a fresh share group.
//
// Rows/s are rows written to the sink topic per second over a window that
// opens once every process has made its first call (and a second more for
// it to get going; at the latest --model-warmup after the first call) and
// closes when the sink holds the configuration's jobs, or --model-cap
// after it opened. The processes are then stopped (SIGTERM): a share group
// has no end, and a process cannot know its share of the jobs.

// modelConfig is one configuration of the models section.
type modelConfig struct {
	id   string // for group names and --only
	name string
	// procs kshare processes, each with a table of members
	// ('source.parallelism'), all in one share group.
	procs, members int
	// mco is the model's 'max-concurrent-operations'; 0 leaves it at the
	// default.
	mco  int
	jobs int64 // rows the window waits for
}

// concurrency is the configuration's 'max-concurrent-operations'.
func (c modelConfig) concurrency() int {
	if c.mco > 0 {
		return c.mco
	}
	return defaultModelConcurrency()
}

// ideal is the most rows/s the configuration can do against a model that
// answers in delay: each process's query opens the model with its own
// budget of calls at once (docs/models.md), whatever its members.
func (c modelConfig) ideal(delay time.Duration) float64 {
	return float64(c.procs*c.concurrency()) / delay.Seconds()
}

// defaultModelConcurrency is 'max-concurrent-operations' unset: model.Common's
// default, which models_test.go checks (kbench may not import package model,
// see internal/layout/testdata/imports.txt).
func defaultModelConcurrency() int { return 10 }

// modelSample is one run of one configuration.
type modelSample struct {
	rate      float64       // rows/s in the window
	rows      int64         // rows written in the window
	window    time.Duration // its length
	capped    bool          // the window closed at --model-cap
	calls     int64         // calls the server answered in the run
	inFlight  int64         // the most calls the server answered at once
	calling   int           // processes that called the model
	minCalls  int64         // calls of the process that made fewest
	maxCalls  int64         // and of the one that made most
	cpu       time.Duration // the kshare processes' CPU together
	rss       int64         // the largest process's peak RSS
	brokerCPU time.Duration
	serverCPU time.Duration // kbench's own: the model server and the sink's watch
	err       error
}

// modelResult is every run of one configuration.
type modelResult struct {
	c       modelConfig
	samples []modelSample
}

// modelSummary is the medians of a configuration's good runs.
type modelSummary struct {
	ok                     int
	rate, minRate, maxRate float64
	cpu, rssMiB, brokerCPU float64
	serverCPU              float64
	inFlight               float64
	last                   modelSample // the last good run, for its counts
	errs                   []string
}

func (r *modelResult) summary() modelSummary {
	var s modelSummary
	var rates, cpus, rss, bcpu, scpu, fl []float64
	for _, x := range r.samples {
		if x.err != nil {
			s.errs = append(s.errs, x.err.Error())
			continue
		}
		s.ok++
		s.last = x
		rates = append(rates, x.rate)
		if s.minRate == 0 || x.rate < s.minRate {
			s.minRate = x.rate
		}
		s.maxRate = max(s.maxRate, x.rate)
		cpus = append(cpus, x.cpu.Seconds())
		rss = append(rss, float64(x.rss)/(1<<20))
		bcpu = append(bcpu, x.brokerCPU.Seconds())
		scpu = append(scpu, x.serverCPU.Seconds())
		fl = append(fl, float64(x.inFlight))
	}
	s.rate, s.cpu, s.rssMiB = median(rates), median(cpus), median(rss)
	s.brokerCPU, s.serverCPU, s.inFlight = median(bcpu), median(scpu), median(fl)
	return s
}

// modelsReport is what the models section measured.
type modelsReport struct {
	delay  time.Duration
	topic  string
	loaded int64
	err    error  // the section could not run at all
	with   string // --model-with: the jobs table's extra WITH pairs
	rs     []*modelResult
}

func (m *modelsReport) find(id string) *modelResult {
	for _, r := range m.rs {
		if r.c.id == id {
			return r
		}
	}
	return nil
}

// modelConfigs are the section's configurations for jobs, the jobs of one
// process at 64 calls at once (each configuration gets as many jobs as
// take it as long at its ideal rate).
func modelConfigs(jobs int64) []modelConfig {
	def := int64(defaultModelConcurrency())
	one := max(1, jobs*def/64)
	return []modelConfig{
		{id: "models-x1-c64", name: "one process, max-concurrent-operations 64", procs: 1, members: 1, mco: 64, jobs: jobs},
		{id: "models-x2-c64", name: "two processes, max-concurrent-operations 64", procs: 2, members: 1, mco: 64, jobs: 2 * jobs},
		// Shown, not judged: two members of one process overlap each
		// other's poll boundaries (a member polls again only once its last
		// poll is settled, so its calls drain to none at every poll's end).
		{id: "models-p2-c64", name: "one process, two members ('source.parallelism' = '2'), max-concurrent-operations 64", procs: 1, members: 2, mco: 64, jobs: jobs},
		{id: "models-x1-default", name: "one member, default settings", procs: 1, members: 1, jobs: one},
		{id: "models-x16-default", name: "16 members as 16 processes, default settings", procs: 16, members: 1, jobs: 16 * one},
		{id: "models-p16-default", name: "16 members in one process ('source.parallelism' = '16'), default settings", procs: 1, members: 16, jobs: 16 * one},
	}
}

// jobValue is job i as the topic holds it.
func jobValue(i int64) []byte {
	return fmt.Appendf(nil, `{"id":%d,"prompt":"Ticket %d: the printer on floor %d is out of toner again; please send someone before noon."}`, i, i, i%9+1)
}

// loadJobs creates topic with one partition and n jobs.
func loadJobs(ctx context.Context, bootstrap, topic string, n int64) error {
	cl, err := newClient(bootstrap,
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(defaultBatchBytes),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(ctx, newAdmin(cl), topic, 1, nil); err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		first error
	)
	for i := int64(0); i < n; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: jobValue(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmpOr(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flushing jobs to %s: %w", topic, err)
	}
	if first != nil {
		return fmt.Errorf("producing jobs to %s: %w", topic, first)
	}
	return nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// modelSQL is the script of process p of c: the jobs table, the sink, the
// model (named after the process, so that the server tells the processes
// apart) and the INSERT.
func modelSQL(cfg *suiteConfig, endpoint, topic, sink, group string, c modelConfig, p int) string {
	mco := ""
	if c.mco > 0 {
		mco = fmt.Sprintf(", 'max-concurrent-operations' = '%d'", c.mco)
	}
	return fmt.Sprintf("CREATE TABLE jobs (id BIGINT, prompt STRING) WITH ('connector' = 'kafka-sharegroup', "+
		"'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json', 'source.parallelism' = '%d'%s); "+
		"CREATE TABLE answers (id BIGINT, label STRING) WITH ('connector' = 'kafka', 'topic' = '%s', "+
		"'properties.bootstrap.servers' = '%s', 'format' = 'json'); "+
		"CREATE MODEL m INPUT (prompt STRING) OUTPUT (label STRING) WITH ('provider' = 'openai', "+
		"'endpoint' = '%s', 'model' = 'kbench-p%d', 'system-prompt' = 'Answer with one word: urgent, normal or spam.'%s); "+
		"INSERT INTO answers SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))",
		cfg.bootstrap, topic, group, c.members, withExtra(cfg.modelWith), sink, cfg.bootstrap, endpoint, p, mco)
}

// modelsSection loads the jobs topic, starts the model server and runs
// every configuration cfg.runs times, alternating them.
func modelsSection(ctx context.Context, cfg *suiteConfig) *modelsReport {
	rep := &modelsReport{delay: cfg.modelDelay, with: cfg.modelWith}
	for _, c := range modelConfigs(cfg.modelJobs) {
		if cfg.only == nil || cfg.only.MatchString(c.id) {
			rep.rs = append(rep.rs, &modelResult{c: c})
		}
	}
	if len(rep.rs) == 0 {
		return nil
	}
	if cfg.kshareUnavailable != nil {
		rep.err = cfg.kshareUnavailable
		return rep
	}
	var most int64
	for _, r := range rep.rs {
		most = max(most, r.c.jobs)
	}
	// A tenth more than the most any configuration waits for, so that
	// none sees the topic's end inside its window.
	rep.topic, rep.loaded = fmt.Sprintf("kbench-jobs-%s", cfg.runID), most+most/10
	logf("loading %d jobs into %s (1 partition)", rep.loaded, rep.topic)
	if err := loadJobs(ctx, cfg.bootstrap, rep.topic, rep.loaded); err != nil {
		rep.err = err
		return rep
	}
	defer deleteTopics(context.Background(), cfg.bootstrap, rep.topic)
	srv, err := startModelServer(cfg.modelDelay)
	if err != nil {
		rep.err = err
		return rep
	}
	defer srv.Close()
	for round := 1; round <= cfg.runs; round++ {
		for _, r := range rep.rs {
			s := runModel(ctx, cfg, srv, rep.topic, r.c, fmt.Sprintf("r%d", round))
			if s.err != nil {
				logf("models %s (%s): %v", r.c.id, fmt.Sprintf("r%d", round), s.err)
			} else {
				logf("models %-20s r%d %7.0f rows/s (%.2fx ideal %.0f) over %5.1fs, %d rows%s, max %d calls in flight, %d process%s calling (%d-%d calls each), kshare cpu %.1fs, broker cpu %.1fs, kbench cpu %.1fs",
					r.c.id, round, s.rate, s.rate/r.c.ideal(cfg.modelDelay), r.c.ideal(cfg.modelDelay), s.window.Seconds(), s.rows, map[bool]string{true: " (capped)"}[s.capped],
					s.inFlight, s.calling, map[bool]string{true: "", false: "es"}[s.calling == 1], s.minCalls, s.maxCalls, s.cpu.Seconds(), s.brokerCPU.Seconds(), s.serverCPU.Seconds())
			}
			r.samples = append(r.samples, s)
			if ctx.Err() != nil {
				return rep
			}
			select {
			case <-ctx.Done():
				return rep
			case <-time.After(cfg.pause):
			}
		}
	}
	return rep
}

// selfCPU is kbench's own CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runModel runs c once with a fresh group and sink topic.
func runModel(ctx context.Context, cfg *suiteConfig, srv *modelServer, topic string, c modelConfig, tag string) (s modelSample) {
	group := fmt.Sprintf("kbench-%s-%s-%s", cfg.runID, c.id, tag)
	sink := group + "-answers"
	if s.err = freshGroup(ctx, cfg.bootstrap, group); s.err != nil {
		return s
	}
	cl, err := newClient(cfg.bootstrap)
	if err != nil {
		s.err = err
		return s
	}
	defer cl.Close()
	adm := newAdmin(cl)
	if s.err = createTopic(ctx, adm, sink, 1, nil); s.err != nil {
		return s
	}
	defer func() {
		if err := deleteTopics(context.Background(), cfg.bootstrap, sink); err != nil {
			logf("%v", err)
		}
	}()
	sinkRows := func() (int64, error) {
		ends, err := adm.ListEndOffsets(ctx, sink)
		if err != nil {
			return 0, err
		}
		var n int64
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n, ends.Error()
	}

	srv.Reset()
	b0, okB0 := procCPU(cfg.brokerPID)
	self0 := selfCPU()
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	type exit struct {
		p   int
		res measure.Result
		err error
	}
	exits := make(chan exit, c.procs)
	for p := 0; p < c.procs; p++ {
		argv := []string{cfg.kshare, "-e", modelSQL(cfg, srv.ChatURL(), topic, sink, group, c, p)}
		go func() {
			res, err := measure.Run(pctx, argv, measure.Options{DevNull: true, Timeout: cfg.modelCap + 3*time.Minute})
			exits <- exit{p, res, err}
		}()
	}
	running := c.procs
	var exited []exit
	collect := func(e exit) {
		running--
		exited = append(exited, e)
	}

	// Watch the sink until the window closes.
	var (
		start      = time.Now()
		t0, tEnd   time.Time
		rows0, end int64
		tick       = time.NewTicker(100 * time.Millisecond)
	)
	defer tick.Stop()
watch:
	for {
		select {
		case <-ctx.Done():
			s.err = context.Cause(ctx)
			break watch
		case e := <-exits:
			collect(e)
			s.err = fmt.Errorf("process %d of %d ended before the window closed: %v", e.p, c.procs, e.err)
			break watch
		case now := <-tick.C:
			rows, err := sinkRows()
			if err != nil {
				continue // asked again at the next tick
			}
			st := srv.Stats()
			switch {
			case st.First.IsZero():
				if now.Sub(start) > 2*time.Minute {
					s.err = errors.New("no call reached the model in 2 minutes")
					break watch
				}
				continue
			case t0.IsZero():
				lastFirst := time.Time{}
				for _, t := range st.FirstBy {
					lastFirst = later(lastFirst, t)
				}
				allIn := len(st.FirstBy) >= c.procs && now.Sub(lastFirst) >= time.Second
				if allIn || now.Sub(st.First) >= cfg.modelWarmup {
					t0, rows0 = now, rows
				}
			}
			if rows >= c.jobs {
				tEnd, end = now, rows
				break watch
			}
			if !t0.IsZero() && now.Sub(t0) >= cfg.modelCap {
				tEnd, end, s.capped = now, rows, true
				break watch
			}
		}
	}
	st := srv.Stats()
	stop()
	for running > 0 {
		collect(<-exits)
	}
	if b1, ok := procCPU(cfg.brokerPID); ok && okB0 {
		s.brokerCPU = b1 - b0
	}
	s.serverCPU = selfCPU() - self0
	for _, e := range exited {
		s.cpu += e.res.CPU()
		s.rss = max(s.rss, e.res.MaxRSS)
	}
	s.calls, s.inFlight, s.calling = st.Calls, st.MaxInFlight, len(st.ByModel)
	for _, n := range st.ByModel {
		if s.minCalls == 0 || n < s.minCalls {
			s.minCalls = n
		}
		s.maxCalls = max(s.maxCalls, n)
	}
	if s.err != nil {
		return s
	}
	if st.Bad > 0 {
		s.err = fmt.Errorf("%d requests were not chat completions", st.Bad)
		return s
	}
	if t0.IsZero() || !t0.Before(tEnd) {
		// Done before the window would have opened: count from the first
		// call.
		t0, rows0 = st.First, 0
	}
	s.rows, s.window = end-rows0, tEnd.Sub(t0)
	if s.rows <= 0 || s.window <= 0 {
		s.err = fmt.Errorf("no rows written in the window (%d at its start, %d at its end)", rows0, end)
		return s
	}
	s.rate = float64(s.rows) / s.window.Seconds()
	return s
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (r *report) modelsTable(w *strings.Builder) {
	m := r.models
	if m == nil {
		return
	}
	cfg := r.cfg
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Models: ML_PREDICT against a model answering in %v\n\n", m.delay)
	if m.err != nil {
		p("Not run: %s.\n\n", oneLine(m.err.Error()))
		return
	}
	def := defaultModelConcurrency()
	p("Each process runs `kshare -e \"CREATE TABLE jobs (id BIGINT, prompt STRING) WITH ('connector' = 'kafka-sharegroup', ..., 'source.parallelism' = 'M'); "+
		"CREATE TABLE answers (id BIGINT, label STRING) WITH ('connector' = 'kafka', ...); "+
		"CREATE MODEL m INPUT (prompt STRING) OUTPUT (label STRING) WITH ('provider' = 'openai', 'endpoint' = ..., ['max-concurrent-operations' = '64']); "+
		"INSERT INTO answers SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))\"`. "+
		"The model is kbench's own OpenAI-compatible server on 127.0.0.1, answering every chat completion after %v. "+
		"Every configuration reads the same 1-partition topic of %s jobs (about %d bytes of JSON each) through a fresh share group, into a sink topic of its own; "+
		"the processes of a configuration share that group. "+
		"Rows/s are rows written to the sink per second, from a second after every process made its first call (at the latest %v after the first call) "+
		"until the sink holds the configuration's jobs, or %v later (\"capped\"); then the processes are stopped. "+
		"The ideal is processes x 'max-concurrent-operations' / %v: each query opens the model with its own budget of calls at once, whatever its members. "+
		"The default 'max-concurrent-operations' is %d, so one member at default settings can do at most %s rows/s.\n\n",
		m.delay, thousands(m.loaded), len(jobValue(m.loaded/2)), cfg.modelWarmup, cfg.modelCap, m.delay, def, thousands(int64(float64(def)/m.delay.Seconds())))
	if cfg.modelWith != "" {
		p("**The jobs table also says** %s (--model-with): these are not the default settings.\n\n", strings.ReplaceAll(cfg.modelWith, "|", "/"))
	}
	p("| configuration | processes x members | max-concurrent-operations | rows in window | rows/s | runs min-max | ideal rows/s | vs ideal | vs | max calls in flight | processes calling (calls each) | kshare CPU s | peak RSS MiB (largest process) | broker CPU s | kbench CPU s |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, x := range m.rs {
		s := x.summary()
		shape := fmt.Sprintf("%d x %d", x.c.procs, x.c.members)
		mco := strconv.Itoa(x.c.concurrency())
		if x.c.mco == 0 {
			mco += " (default)"
		}
		if s.ok == 0 {
			p("| %s `%s` | %s | %s | failed: %s | | | | | | | | | | | |\n", x.c.name, x.c.id, shape, mco, oneLine(firstOr(s.errs, "no runs")))
			continue
		}
		ideal := x.c.ideal(m.delay)
		vs := ""
		if ref, label := m.reference(x.c.id); ref > 0 {
			vs = ratio(s.rate, ref) + " " + label
		}
		rows := thousands(s.last.rows)
		if s.last.capped {
			rows += " (capped)"
		}
		failed := ""
		if len(s.errs) > 0 {
			failed = fmt.Sprintf(" (%d of %d runs failed)", len(s.errs), len(x.samples))
		}
		p("| %s `%s`%s | %s | %s | %s | %s | %s-%s | %s | %s | %s | %.0f | %d (%s-%s) | %.1f | %.0f | %.1f | %.1f |\n",
			x.c.name, x.c.id, failed, shape, mco, rows, thousands(int64(s.rate)), thousands(int64(s.minRate)), thousands(int64(s.maxRate)),
			thousands(int64(ideal)), ratio(s.rate, ideal), vs, s.inFlight, s.last.calling, thousands(s.last.minCalls), thousands(s.last.maxCalls),
			s.cpu, s.rssMiB, s.brokerCPU, s.serverCPU)
	}
	p("\n")
}

// reference is what configuration id is compared with, and how the table
// says so: two processes with one, 16 members with one member at the
// same (default) settings.
func (m *modelsReport) reference(id string) (float64, string) {
	ref := map[string]string{
		"models-x2-c64":      "models-x1-c64",
		"models-p2-c64":      "models-x1-c64",
		"models-x16-default": "models-x1-default",
		"models-p16-default": "models-x1-default",
	}[id]
	if ref == "" {
		return 0, ""
	}
	if r := m.find(ref); r != nil {
		if s := r.summary(); s.ok > 0 {
			return s.rate, "`" + ref + "`"
		}
	}
	return 0, ""
}

// modelTargets checks the section's targets.
func (m *modelsReport) targets() []targetCheck {
	if m == nil || m.err != nil {
		return nil
	}
	var cs []targetCheck
	defer func() {
		if m.with == "" {
			return
		}
		for i := range cs {
			cs[i].what += fmt.Sprintf(", but the jobs table also says %s", strings.ReplaceAll(m.with, "|", "/"))
			cs[i].verdict += " with these settings"
		}
	}()
	rate := func(id string) (float64, bool) {
		r := m.find(id)
		if r == nil {
			return 0, false
		}
		s := r.summary()
		return s.rate, s.ok > 0
	}
	if r := m.find("models-x1-c64"); r != nil {
		ideal := r.c.ideal(m.delay)
		label := fmt.Sprintf("ML_PREDICT, one process, max-concurrent-operations 64, %v model: >= 0.9x the ideal %s rows/s", m.delay, thousands(int64(ideal)))
		if got, ok := rate(r.c.id); ok {
			cs = append(cs, targetCheck{label, ratio(got, ideal), verdict(got >= 0.9*ideal)})
		} else {
			cs = append(cs, targetCheck{label, "failed", "missed"})
		}
	}
	for _, x := range []struct {
		id, label string
		want      float64
	}{
		{"models-x2-c64", "ML_PREDICT, two processes in one share group >= 1.8x one process (max-concurrent-operations 64, one 1-partition topic)", 1.8},
		{"models-x16-default", "ML_PREDICT, 16 members as 16 processes >= 10x one member, default settings (1 partition)", 10},
		{"models-p16-default", "ML_PREDICT, 16 members in one process ('source.parallelism' = '16') >= 10x one member, default settings (1 partition)", 10},
	} {
		if m.find(x.id) == nil {
			continue
		}
		got, ok := rate(x.id)
		ref, _ := m.reference(x.id)
		switch {
		case !ok:
			cs = append(cs, targetCheck{x.label, "failed", "missed"})
		case ref > 0:
			cs = append(cs, targetCheck{x.label, ratio(got, ref), verdict(got >= x.want*ref)})
		}
	}
	return cs
}

// runModelServer is `kbench model-server`: the models section's server on
// its own, for trying a configuration by hand. It prints the endpoint and
// serves until interrupted.
func runModelServer(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("model-server", flag.ContinueOnError)
	delay := fs.Duration("delay", 50*time.Millisecond, "how long each answer takes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv, err := startModelServer(*delay)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Println(srv.ChatURL())
	<-ctx.Done()
	st := srv.Stats()
	logf("%d calls, at most %d at once, %d bad requests", st.Calls, st.MaxInFlight, st.Bad)
	return nil
}
