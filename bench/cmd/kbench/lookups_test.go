package main

import (
	"os"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
)

// TestMain starts the PostgreSQL server the lookup contestants' test asks
// for, and stops it at the end.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Both lookup contestants for real: kshare built from this tree, a small
// topic on the test broker, the customers in the test's PostgreSQL, run and
// checked the way the suite does. The cached one asks PostgreSQL far less.
func TestLookupContestantsRun(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	ctx := kafkatest.Context(t)
	cfg := &suiteConfig{bootstrap: addr, kshare: buildKshare(ctx, t), workDir: t.TempDir(), runTimeout: time.Minute, runID: "t", pgURL: pgtest.URL(t)}
	tg := loadSmallTarget(ctx, t, addr)
	queries := map[bool]int64{}
	for _, cached := range []bool{true, false} {
		c := lookupContestant(cfg, 2, cached)
		if c.unavailable != nil {
			t.Fatalf("%s: %v", c.id, c.unavailable)
		}
		if !runChecked(ctx, t, cfg, c, tg) {
			continue
		}
		lookupMu.Lock()
		f := lookupSeen[c.id]
		lookupMu.Unlock()
		if f.queries == 0 || f.keys == 0 || f.rows != f.keys {
			t.Errorf("%s: lookups %+v, want queries that found a row for each key asked", c.id, f)
		}
		queries[cached] = f.queries
	}
	// 50 customers: the cache asks for each about once per member.
	if queries[true] == 0 || queries[true] >= queries[false] {
		t.Errorf("queries with the cache %d, without %d: want fewer with it", queries[true], queries[false])
	}
}

// The lookup joins are judged against SELECT * to CSV with the same
// parallelism, and what they asked of PostgreSQL is shown.
func TestLookupTargets(t *testing.T) {
	cfg := &suiteConfig{n: 1000, runs: 1, kafkaVersion: "4.3.1"}
	mk := func(c contestant, wall time.Duration) *entry {
		return &entry{c: c, samples: []sample{{wall: wall, cpu: time.Second, rss: 40 << 20, records: 1000}}}
	}
	b := &block{t: target{partitions: 1, n: 1000}, entries: []*entry{
		mk(contestant{name: "kshare", id: "kshare-json-p1", kind: "kshare", par: 1, headline: true}, time.Second),
		mk(lookupContestant(cfg, 1, true), time.Second*10/9),
		mk(lookupContestant(cfg, 1, false), 4*time.Second),
	}}
	lookupMu.Lock()
	lookupSeen["kshare-lookupcache-p1"] = lookupFigures{queries: 2, keys: 999, rows: 999, hits: 998, rate: 900}
	lookupMu.Unlock()
	r := &report{cfg: cfg, started: time.Now(), blocks: []*block{b}}
	reportHas(t, r.markdown(),
		"| lookup join, partial cache (99.8% hits) >= 0.8x SELECT * json to CSV (1 partition, parallelism 1) | 0.90x | met |",
		"| lookup join, no cache (batched lookups) >= 0.3x SELECT * json to CSV (1 partition, parallelism 1) | 0.25x | missed |",
		"| lookup join, partial cache (99.8% hits): queries sent to PostgreSQL (1 partition, parallelism 1, last run) | 2 queries, 2/s, 499.5 keys and 499.5 rows per query, 998 keys of a batch found in the cache | shown |",
	)
}
