package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/model"
)

// Each configuration gets as many jobs as take it as long at its ideal
// rate; the ideal counts each process's budget of calls, not its members.
func TestModelConfigs(t *testing.T) {
	o, ok := model.Common.Lookup(model.OptMaxConcurrentOperations)
	if !ok || o.Default != strconv.Itoa(defaultModelConcurrency()) {
		t.Errorf("defaultModelConcurrency is %d, model.Common's default %+v", defaultModelConcurrency(), o)
	}
	cs := modelConfigs(20_000)
	byID := map[string]modelConfig{}
	for _, c := range cs {
		byID[c.id] = c
	}
	delay := 50 * time.Millisecond
	for id, want := range map[string]struct {
		jobs  int64
		ideal float64
	}{
		"models-x1-c64":      {20_000, 1280},
		"models-x2-c64":      {40_000, 2560},
		"models-p2-c64":      {20_000, 1280},
		"models-x1-default":  {3125, 200},
		"models-x16-default": {50_000, 3200},
		"models-p16-default": {50_000, 200},
	} {
		c, ok := byID[id]
		if !ok {
			t.Errorf("no configuration %s", id)
			continue
		}
		if c.jobs != want.jobs || c.ideal(delay) != want.ideal {
			t.Errorf("%s: %d jobs, ideal %.0f; want %d and %.0f", id, c.jobs, c.ideal(delay), want.jobs, want.ideal)
		}
	}
	cfg := &suiteConfig{bootstrap: "b:9092", modelWith: "'properties.max.poll.records' = '50'"}
	sql := modelSQL(cfg, "http://127.0.0.1:1/v1/chat/completions", "jobs-t", "answers-t", "g", byID["models-p16-default"], 3)
	for _, want := range []string{"'source.parallelism' = '16', 'properties.max.poll.records' = '50')", "'model' = 'kbench-p3'",
		"INSERT INTO answers SELECT id, label FROM ML_PREDICT(TABLE jobs, MODEL m, DESCRIPTOR(prompt))"} {
		if !strings.Contains(sql, want) {
			t.Errorf("script lacks %q:\n%s", want, sql)
		}
	}
	if strings.Contains(sql, "max-concurrent-operations") {
		t.Errorf("a default configuration sets 'max-concurrent-operations':\n%s", sql)
	}
	if sql := modelSQL(cfg, "u", "j", "a", "g", byID["models-x1-c64"], 0); !strings.Contains(sql, "'max-concurrent-operations' = '64'") {
		t.Errorf("the 64 configuration does not set it:\n%s", sql)
	}
}

func TestModelsTableAndTargets(t *testing.T) {
	cs := modelConfigs(20_000)
	rate := map[string]float64{
		"models-x1-c64": 1100, "models-x2-c64": 2100, "models-p2-c64": 1200,
		"models-x1-default": 170, "models-x16-default": 800, "models-p16-default": 171,
	}
	m := &modelsReport{delay: 50 * time.Millisecond, topic: "t", loaded: 55_000}
	for _, c := range cs {
		r := &modelResult{c: c, samples: []modelSample{{rate: rate[c.id], rows: 1000, window: time.Second, inFlight: 64, calling: c.procs, minCalls: 10, maxCalls: 20}}}
		if c.id == "models-p16-default" {
			r.samples = append(r.samples, modelSample{err: errors.New("boom")})
		}
		m.rs = append(m.rs, r)
	}
	r := &report{cfg: &suiteConfig{sections: map[string]bool{"models": true}, modelCap: time.Minute, modelWarmup: 5 * time.Second}, started: time.Now(), models: m}
	if got := r.fileName(); !strings.HasSuffix(got, "-models.md") {
		t.Errorf("file name %s", got)
	}
	reportHas(t, r.markdown(),
		"## Models: ML_PREDICT against a model answering in 50ms",
		"Sections run: models.",
		"The default 'max-concurrent-operations' is 10",
		"| one process, max-concurrent-operations 64 `models-x1-c64` | 1 x 1 | 64 | 1,000 | 1,100 | 1,100-1,100 | 1,280 | 0.86x |  |",
		"| 2 x 1 | 64 | 1,000 | 2,100 | 2,100-2,100 | 2,560 | 0.82x | 1.91x `models-x1-c64` |",
		"`models-p16-default` (1 of 2 runs failed) | 1 x 16 | 10 (default) |",
		"| ML_PREDICT, one process, max-concurrent-operations 64, 50ms model: >= 0.9x the ideal 1,280 rows/s | 0.86x | missed |",
		"| ML_PREDICT, two processes in one share group >= 1.8x one process (max-concurrent-operations 64, one 1-partition topic) | 1.91x | met |",
		"| ML_PREDICT, 16 members as 16 processes >= 10x one member, default settings (1 partition) | 4.71x | missed |",
		"| ML_PREDICT, 16 members in one process ('source.parallelism' = '16') >= 10x one member, default settings (1 partition) | 1.01x | missed |",
	)
	if md := r.markdown(); strings.Contains(md, "orders per topic") {
		t.Errorf("a models-only report speaks of the throughput topics:\n%s", md)
	}
	// Settings that are not the defaults are said in each target.
	m.with = "'properties.max.poll.records' = '50'"
	reportHas(t, r.markdown(), "| ML_PREDICT, 16 members as 16 processes >= 10x one member, default settings (1 partition), but the jobs table also says 'properties.max.poll.records' = '50' | 4.71x | missed with these settings |")
}

// The section's runs work end to end on a small scale: kshare processes
// in one share group call the server, and the sink gets the rows.
func TestModelsRun(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	ctx := kafkatest.Context(t)
	cfg := &suiteConfig{bootstrap: addr, kshare: buildKshare(ctx, t), runID: "t", modelDelay: 10 * time.Millisecond,
		modelCap: 30 * time.Second, modelWarmup: 5 * time.Second}
	topic := kafkatest.TopicName(t)
	if err := loadJobs(ctx, addr, topic, 1000); err != nil {
		t.Fatal(err)
	}
	srv, err := startModelServer(cfg.modelDelay)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, c := range []modelConfig{
		{id: "models-x1-c64", procs: 1, members: 1, mco: 64, jobs: 600},
		{id: "models-x2-c8", procs: 2, members: 1, mco: 8, jobs: 600},
	} {
		s := runModel(ctx, cfg, srv, topic, c, strings.ToLower(kafkatest.GroupName(t)))
		if s.err != nil {
			t.Errorf("%s: %v", c.id, s.err)
			continue
		}
		if s.rate <= 0 || s.calls < c.jobs || s.inFlight > int64(c.procs*c.mco) || s.calling < 1 || s.cpu <= 0 {
			t.Errorf("%s: implausible sample %+v", c.id, s)
		}
	}
}
