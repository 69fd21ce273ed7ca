package main

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/internal/watch"
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
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	// Polls of 100 in record_limit mode, so that two replicas on one
	// partition both get records (see TestRunTwoProcessesSplitOnePartition).
	script := fmt.Sprintf("CREATE TABLE src (customer STRING, price DECIMAL(10, 2)) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', "+
		"'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json', 'properties.max.poll.records' = '100', 'properties.share.acquire.mode' = 'record_limit');\n",
		addr, topic, group) +
		fmt.Sprintf("CREATE TABLE sums (customer STRING, n BIGINT NOT NULL, total DECIMAL(38, 2), PRIMARY KEY (customer) NOT ENFORCED) WITH ('connector' = 'jdbc', "+
			"'url' = 'jdbc:postgresql://%s%s?sslmode=disable', 'table-name' = '%s', 'username' = '%s', 'password' = '%s', "+
			"'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '%s');\n",
			u.Host, u.Path, pg, u.User.Username(), password, recs) +
		"INSERT INTO sums SELECT customer, COUNT(*), SUM(price) FROM src GROUP BY customer;\n"
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	folded := func() int {
		v, err := strconv.Atoi(pgtest.Query(t, "SELECT coalesce(sum(n), 0) FROM "+pg)[0][0])
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	type replica struct {
		cmd    *exec.Cmd
		stderr *watch.Buffer
	}
	replicas := make([]replica, 2)
	start := func(i int) {
		replicas[i].cmd, _, replicas[i].stderr = startKshare(t, "run", "-f", path)
	}
	for i := range replicas {
		start(i)
	}
	// Four kills, the replicas in turn, each at a random point of its
	// fifth of the records.
	for k := range 4 {
		at := k*n/5 + n/10 + rand.IntN(n/5)
		kafkatest.Eventually(t, fmt.Sprintf("%d records folded into %s", at, pg), func() error {
			if got := folded(); got < at {
				return fmt.Errorf("%d records", got)
			}
			return nil
		})
		r := replicas[k%2]
		if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, r.cmd); code != -1 {
			t.Fatalf("kill %d: kshare run exited %d, want killed; log:\n%s", k+1, code, r.stderr)
		}
		t.Logf("kill %d (replica %d): at %d records (%d now)", k+1, k%2+1, at, folded())
		start(k % 2)
	}
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
