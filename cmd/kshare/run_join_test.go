package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
)

// joinCustomer is what the customers table says of customer id: its name
// and tier, or nothing for the ids left out of it (every 97th from 5, and
// all from 1,000).
func joinCustomer(id int64) (name, tier string, ok bool) {
	if id >= 1000 || id%97 == 5 {
		return "", "", false
	}
	return fmt.Sprintf("customer %d", id), [...]string{"gold", "silver", "bronze"}[id%3], true
}

// TestRunLookupJoinKilled: `kshare run` of an INSERT of 20,000 orders
// LEFT JOINed with a PostgreSQL customers table of 1,000 rows (looked up
// through a partial cache) into a kafka topic is SIGKILLed three times at
// random points and started again at once. Every order reaches the topic
// with exactly the name and tier of its customer, NULLs for the customers
// the table does not have; the kills may write an order twice (at least
// once), never lose one nor give it another customer's row.
func TestRunLookupJoinKilled(t *testing.T) {
	const n = 20000
	// Polls of 20 records at most (record_limit: batch_optimized hands
	// out a whole produced batch, thousands of records, settled together)
	// and a cache of 100 of the 1,100 customers: many small batches, most
	// of them asking PostgreSQL, so that the kills land while orders are
	// being joined.
	addr, topic, group := kafkatest.LockedGroup(t, 3*time.Second)
	orders := make([][]byte, n)
	for i := range orders {
		orders[i] = fmt.Appendf(nil, `{"id": %d, "customer_id": %d}`, i, (i*37)%1100)
	}
	kafkatest.Produce(t, addr, topic, orders...)
	pg := pgtest.Table(t, "id bigint PRIMARY KEY, name text NOT NULL, tier text NOT NULL")
	var values []string
	for id := range int64(1000) {
		if name, tier, ok := joinCustomer(id); ok {
			values = append(values, fmt.Sprintf("(%d, '%s', '%s')", id, name, tier))
		}
	}
	pgtest.Exec(t, "INSERT INTO "+pg+" VALUES "+strings.Join(values, ", "))
	sink := kafkatest.Topic(t, addr, 1)
	script := fmt.Sprintf(`CREATE TABLE orders (id BIGINT, customer_id BIGINT, proc_time AS PROCTIME()) WITH ('connector' = 'kafka-sharegroup',
  'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json',
  'properties.max.poll.records' = '20', 'properties.share.acquire.mode' = 'record_limit');
CREATE TABLE customers (id BIGINT, name STRING, tier STRING, PRIMARY KEY (id) NOT ENFORCED) WITH (%s,
  'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100');
CREATE TABLE enriched (id BIGINT, customer_id BIGINT, name STRING, tier STRING) WITH ('connector' = 'kafka',
  'properties.bootstrap.servers' = '%s', 'topic' = '%s', 'format' = 'json');
INSERT INTO enriched
SELECT o.id, o.customer_id, c.name, c.tier
FROM orders AS o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id;
`, addr, topic, group, jdbcWith(t, pg), addr, sink)
	path := filepath.Join(t.TempDir(), "enrich.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	progress := func() int { return int(sinkSize(t, addr, sink)) }
	cmd, stderr := killRuns(t, []string{"run", "-f", path}, n, "rows in "+sink, progress)
	seen := make([]int, n)
	kafkatest.Eventually(t, fmt.Sprintf("all %d orders in %s", n, sink), func() error {
		rs, err := readTopic(addr, sink)
		if err != nil {
			return err
		}
		clear(seen)
		for _, r := range rs {
			var row struct {
				ID         *int64  `json:"id"`
				CustomerID *int64  `json:"customer_id"`
				Name       *string `json:"name"`
				Tier       *string `json:"tier"`
			}
			if err := json.Unmarshal(r.Value, &row); err != nil || row.ID == nil || *row.ID < 0 || *row.ID >= n || row.CustomerID == nil {
				t.Fatalf("sink record %q at offset %d is not an order below %d", r.Value, r.Offset, n)
			}
			if want := int64(*row.ID*37) % 1100; *row.CustomerID != want {
				t.Fatalf("order %d has customer %d, want %d", *row.ID, *row.CustomerID, want)
			}
			name, tier, ok := joinCustomer(*row.CustomerID)
			switch {
			case !ok && (row.Name != nil || row.Tier != nil):
				t.Fatalf("order %d of customer %d, whom the table does not have, came with %q: want NULLs", *row.ID, *row.CustomerID, r.Value)
			case ok && (row.Name == nil || *row.Name != name || row.Tier == nil || *row.Tier != tier):
				t.Fatalf("order %d of customer %d came as %q, want name %q and tier %q", *row.ID, *row.CustomerID, r.Value, name, tier)
			}
			seen[*row.ID]++
		}
		missing := 0
		for _, c := range seen {
			if c == 0 {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d orders missing", missing)
		}
		return nil
	})
	stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	kafkatest.WaitLag(t, addr, group, topic, 0)
	dups := 0
	for _, c := range seen {
		dups += max(c-1, 0)
	}
	t.Logf("%d orders, each with its customer's row; %d written twice by the kills", n, dups)
}

// TestRunIntervalJoinKilled: `kshare run --state-dir` of an INSERT of the
// interval join of orders and shipments (two share groups over topics of 4
// partitions, a shipment within half a second after its order) into a
// kafka topic is SIGKILLed three times at random points and started again
// at once on the same state directory. The topic ends with every pair the
// test computes and no other: the kills may write a pair twice (at least
// once), never lose one, though a killed process's records come back to
// the next one, late, after their locks expired.
func TestRunIntervalJoinKilled(t *testing.T) {
	const n = 6000
	addr, orders, og := kafkatest.LockedQueue(t, 3*time.Second, 4)
	shipments := kafkatest.Topic(t, addr, 4)
	sg := kafkatest.ShareGroup(t, addr)
	kafkatest.SetGroupConfig(t, addr, sg, map[string]string{"share.record.lock.duration.ms": "3000"})
	rng := rand.New(rand.NewPCG(11, 13))
	base := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	at := func(ms int) string {
		return base.Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02 15:04:05.000")
	}
	type ship struct{ id, order, ms int }
	var ov [][]byte
	var ss []ship
	for i := range n {
		ov = append(ov, fmt.Appendf(nil, `{"id": %d, "ts": %q}`, i, at(10*i)))
		for k := range rng.IntN(3) {
			ss = append(ss, ship{id: 10*i + k, order: i, ms: 10*i + rng.IntN(800) - 100})
		}
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].ms < ss[b].ms })
	want := map[string]bool{}
	var sv [][]byte
	for _, s := range ss {
		sv = append(sv, fmt.Appendf(nil, `{"sid": %d, "order_id": %d, "ts": %q}`, s.id, s.order, at(s.ms)))
		if d := s.ms - 10*s.order; d >= 0 && d <= 500 {
			want[fmt.Sprintf("%d|%d", s.order, s.id)] = true
		}
	}
	kafkatest.Produce(t, addr, orders, ov...)
	kafkatest.Produce(t, addr, shipments, sv...)
	sink := kafkatest.Topic(t, addr, 1)
	table := func(name, cols, topic, group string) string {
		return fmt.Sprintf(`CREATE TABLE %s (%s, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (
  'connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json',
  'properties.max.poll.records' = '20', 'properties.share.acquire.mode' = 'record_limit');
`, name, cols, addr, topic, group)
	}
	script := table("orders", "id INT", orders, og) + table("shipments", "sid INT, order_id INT", shipments, sg) +
		fmt.Sprintf(`CREATE TABLE pairs (order_id INT, sid INT) WITH ('connector' = 'kafka',
  'properties.bootstrap.servers' = '%s', 'topic' = '%s', 'format' = 'json');
INSERT INTO pairs
SELECT o.id, s.sid FROM orders AS o JOIN shipments AS s
  ON o.id = s.order_id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '500' MILLISECOND;
`, addr, sink)
	path := filepath.Join(t.TempDir(), "pairs.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	progress := func() int { return int(sinkSize(t, addr, sink)) }
	cmd, stderr := killRuns(t, []string{"run", "--state-dir", t.TempDir(), "-f", path}, len(want), "pairs in "+sink, progress)
	seen := map[string]int{}
	kafkatest.Eventually(t, fmt.Sprintf("all %d pairs in %s", len(want), sink), func() error {
		rs, err := readTopic(addr, sink)
		if err != nil {
			return err
		}
		clear(seen)
		for _, r := range rs {
			var p struct {
				Order *int `json:"order_id"`
				Sid   *int `json:"sid"`
			}
			if err := json.Unmarshal(r.Value, &p); err != nil || p.Order == nil || p.Sid == nil {
				t.Fatalf("sink record %q at offset %d is not a pair", r.Value, r.Offset)
			}
			k := fmt.Sprintf("%d|%d", *p.Order, *p.Sid)
			if !want[k] {
				t.Fatalf("pair %s is not one of the join's", k)
			}
			seen[k]++
		}
		if len(seen) < len(want) {
			return fmt.Errorf("%d of %d pairs", len(seen), len(want))
		}
		return nil
	})
	stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	kafkatest.WaitLag(t, addr, og, orders, 0)
	kafkatest.WaitLag(t, addr, sg, shipments, 0)
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("%d pairs, each written; %d written twice by the kills", len(want), dups)
}
