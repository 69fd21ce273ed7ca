package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
