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
	truth := customerOrders(t, addr, topic, n, customers)
	pg := sumsTable(t)
	recs := pgtest.Name(t)
	pgtest.AtEnd(t, fmt.Sprintf("DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %[1]s_streams", recs))
	// Polls of 100 in record_limit mode, so that two replicas on one
	// partition both get records (see TestRunTwoProcessesSplitOnePartition).
	script := sumsScript(t, addr, topic, group, ", 'properties.share.acquire.mode' = 'record_limit'", pg,
		fmt.Sprintf(", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '%s'", recs))
	folded := func() int { return countedIn(t, pg) }
	replicas := killReplicas(t, script, n, "records folded into "+pg, folded)
	waitCount(t, n, "records folded into "+pg, folded)
	for _, r := range replicas {
		stopRun(t, r.cmd, r.stderr, defaultDrainTimeout+5*time.Second)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
	if got := folded(); got != n {
		t.Errorf("the table counts %d records, want %d: %d folded twice", got, n, got-n)
	}
	truth.check(t, pg)
}

// customerSums are each customer's count of orders and the sum of their
// prices in cents, computed as the orders are made.
type customerSums struct{ count, cents map[string]int }

// customerOrders produces n orders of the given number of customers to
// topic, {"customer": "c07", "price": 1.13}, and returns their truth.
func customerOrders(t *testing.T, addr, topic string, n, customers int) customerSums {
	t.Helper()
	values := make([][]byte, n)
	s := customerSums{count: map[string]int{}, cents: map[string]int{}}
	for i := range values {
		c, p := fmt.Sprintf("c%02d", i*7%customers), 100+i%97*13
		values[i] = fmt.Appendf(nil, `{"customer": %q, "price": %d.%02d}`, c, p/100, p%100)
		s.count[c]++
		s.cents[c] += p
	}
	kafkatest.Produce(t, addr, topic, values...)
	return s
}

// sumsScript is the pipeline of per-customer counts and sums of the orders
// in topic, read through group, into PostgreSQL table pg; srcExtra and
// sinkExtra are more WITH pairs of each table.
func sumsScript(t *testing.T, addr, topic, group, srcExtra, pg, sinkExtra string) string {
	return fmt.Sprintf("CREATE TABLE src (customer STRING, price DECIMAL(10, 2)) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', "+
		"'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json', 'properties.max.poll.records' = '100'%s);\n", addr, topic, group, srcExtra) +
		fmt.Sprintf("CREATE TABLE sums (customer STRING, n BIGINT NOT NULL, total DECIMAL(38, 2), PRIMARY KEY (customer) NOT ENFORCED) WITH (%s%s);\n",
			jdbcWith(t, pg), sinkExtra) +
		"INSERT INTO sums SELECT customer, COUNT(*), SUM(price) FROM src GROUP BY customer;\n"
}

// sumsTable makes the test's PostgreSQL table that sumsScript's sink
// writes each customer's count and sum into.
func sumsTable(t *testing.T) string {
	t.Helper()
	return pgtest.Table(t, "customer text PRIMARY KEY, n bigint NOT NULL, total numeric(38, 2)")
}

// countedIn is the number of orders PostgreSQL table pg counts.
func countedIn(t *testing.T, pg string) int {
	v, err := strconv.Atoi(pgtest.Query(t, "SELECT coalesce(sum(n), 0) FROM "+pg)[0][0])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// check checks that PostgreSQL table pg holds exactly s.
func (s customerSums) check(t *testing.T, pg string) {
	t.Helper()
	rows := pgtest.Query(t, "SELECT customer, n, total FROM "+pg)
	if len(rows) != len(s.count) {
		t.Errorf("%d customers in the table, want %d", len(rows), len(s.count))
	}
	for _, r := range rows {
		c := r[0]
		want := fmt.Sprintf("%d %d.%02d", s.count[c], s.cents[c]/100, s.cents[c]%100)
		if got := strings.Join(r[1:], " "); got != want {
			t.Errorf("customer %s: count and sum %s, want %s", c, got, want)
		}
	}
}
