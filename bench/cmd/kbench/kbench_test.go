package main

import (
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
	mk := func(c contestant, wall time.Duration) *entry {
		return &entry{c: c, samples: []sample{{wall: wall, cpu: time.Second, rss: 100 << 20, records: 1000}}}
	}
	b := &block{t: target{partitions: 1, n: 1000}, entries: []*entry{
		mk(contestant{name: "java", id: "java-t1", kind: "java", par: 1}, 2*time.Second),
		mk(contestant{name: "franz", id: "franz-c1", kind: "franz", par: 1}, time.Second),
		mk(contestant{name: "kshare", id: "kshare-json-p1", kind: "kshare", par: 1, headline: true}, time.Second*10/9),
	}}
	r := &report{cfg: cfg, started: time.Now(), blocks: []*block{b}}
	md := r.markdown()
	for _, want := range []string{"| kshare | 900 |", "| 1.80x | 0.90x |", "met", "peak RSS < 150 MiB"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
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
