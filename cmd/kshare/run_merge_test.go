package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
)

// TestRunJdbcAggregateKilled: two `kshare run` replicas of one aggregating
// pipeline and share group, INSERT INTO a PostgreSQL table of per-customer
// counts and sums written exactly once, each SIGKILLed twice at a random
// point and started again at once (its groups empty). The table ends with
// exactly the count and sum of every customer's orders: each replica adds
// what its batches change, a killed replica's committed batches stay, and
// its records that come again are not folded twice.
func TestRunJdbcAggregateKilled(t *testing.T) {
	const n, customers = 20000, 50
	// Locks of 4 s: a killed replica's records come back within seconds,
	// and a live one's flush never outlasts its locks.
	addr, topic, group := kafkatest.LockedGroup(t, 4*time.Second)
	values := make([][]byte, n)
	count, cents := map[string]int{}, map[string]int{}
	for i := range values {
		c, p := fmt.Sprintf("c%02d", i*7%customers), 100+i%97*13
		values[i] = fmt.Appendf(nil, `{"customer": %q, "price": %d.%02d}`, c, p/100, p%100)
		count[c]++
		cents[c] += p
	}
	kafkatest.Produce(t, addr, topic, values...)
	pg := pgtest.Table(t, "customer text PRIMARY KEY, n bigint NOT NULL, total numeric(38, 2)")
	recs := pgtest.Name(t)
	pgtest.AtEnd(t, fmt.Sprintf("DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %[1]s_streams", recs))
	// Polls of 100 in record_limit mode, so that two replicas on one
	// partition both get records (see TestRunTwoProcessesSplitOnePartition).
	script := fmt.Sprintf("CREATE TABLE src (customer STRING, price DECIMAL(10, 2)) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', "+
		"'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json', 'properties.max.poll.records' = '100', 'properties.share.acquire.mode' = 'record_limit');\n",
		addr, topic, group) +
		fmt.Sprintf("CREATE TABLE sums (customer STRING, n BIGINT NOT NULL, total DECIMAL(38, 2), PRIMARY KEY (customer) NOT ENFORCED) WITH (%s, "+
			"'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '%s');\n", jdbcWith(t, pg), recs) +
		"INSERT INTO sums SELECT customer, COUNT(*), SUM(price) FROM src GROUP BY customer;\n"
	folded := func() int {
		v, err := strconv.Atoi(pgtest.Query(t, "SELECT coalesce(sum(n), 0) FROM "+pg)[0][0])
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	replicas := killReplicas(t, script, n, "records folded into "+pg, folded)
	kafkatest.Eventually(t, fmt.Sprintf("all %d records folded into %s", n, pg), func() error {
		if got := folded(); got < n {
			return fmt.Errorf("%d records", got)
		}
		return nil
	})
	for _, r := range replicas {
		stopRun(t, r.cmd, r.stderr, defaultDrainTimeout+5*time.Second)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
	if got := folded(); got != n {
		t.Errorf("the table counts %d records, want %d: %d folded twice", got, n, got-n)
	}
	rows := pgtest.Query(t, "SELECT customer, n, total FROM "+pg)
	if len(rows) != len(count) {
		t.Errorf("%d customers in the table, want %d", len(rows), len(count))
	}
	for _, r := range rows {
		c := r[0]
		want := fmt.Sprintf("%d %d.%02d", count[c], cents[c]/100, cents[c]%100)
		if got := strings.Join(r[1:], " "); got != want {
			t.Errorf("customer %s: count and sum %s, want %s", c, got, want)
		}
	}
}
