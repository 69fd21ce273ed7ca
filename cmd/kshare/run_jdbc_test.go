package main

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/internal/watch"
)

// TestRunJdbcKilled: two `kshare run` replicas of one pipeline and share
// group INSERT 20,000 ids into a PostgreSQL table without a key, and each
// is SIGKILLed twice at a random point and started again at once. With
// 'sink.delivery-guarantee' = 'exactly-once' the table ends with every id
// exactly once; at least once, with every id, and the duplicates the kills
// caused are reported.
func TestRunJdbcKilled(t *testing.T) {
	for _, guarantee := range []string{"exactly-once", "at-least-once"} {
		t.Run(guarantee, func(t *testing.T) {
			const n = 20000
			total, distinct := jdbcKillScenario(t, n, guarantee)
			switch {
			case distinct != n:
				t.Errorf("the table holds %d distinct ids, want all %d", distinct, n)
			case guarantee == "exactly-once" && total != n:
				t.Errorf("the table holds %d rows for %d ids: %d written twice", total, n, total-n)
			}
			t.Logf("%s: %d rows for %d ids (%d duplicates)", guarantee, total, distinct, total-distinct)
		})
	}
}

// jdbcKillScenario runs the pipeline of TestRunJdbcKilled with the given
// guarantee and returns the rows and distinct ids the table holds once
// every id is there and both replicas drained.
func jdbcKillScenario(t *testing.T, n int, guarantee string) (total, distinct int) {
	// Short locks: a killed replica's records come back within seconds.
	// Polls of 100 in record_limit mode, so that two replicas on one
	// partition both get records (see TestRunTwoProcessesSplitOnePartition).
	addr, topic, group := kafkatest.LockedGroup(t, 2*time.Second)
	kafkatest.Produce(t, addr, topic, idValues(0, n)...)
	pg := pgtest.Table(t, "id bigint NOT NULL")
	recs := pgtest.Name(t)
	pgtest.AtEnd(t, fmt.Sprintf("DROP TABLE IF EXISTS %s; DROP TABLE IF EXISTS %[1]s_streams", recs))
	script := tableDDL("src", addr, topic, group, ", 'properties.max.poll.records' = '100', 'properties.share.acquire.mode' = 'record_limit'") + "\n" +
		fmt.Sprintf("CREATE TABLE sink (id BIGINT) WITH (%s, 'sink.delivery-guarantee' = '%s', 'sink.exactly-once.table' = '%s');\n",
			jdbcWith(t, pg), guarantee, recs) +
		"INSERT INTO sink SELECT * FROM src;\n"
	count := func(what string) int {
		v, err := strconv.Atoi(pgtest.Query(t, "SELECT "+what+" FROM "+pg)[0][0])
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	replicas := killReplicas(t, script, n, "rows in "+pg, func() int { return count("count(*)") })
	waitCount(t, n, "ids in "+pg, func() int { return count("count(DISTINCT id)") })
	skipped := 0
	for _, r := range replicas {
		log := stopRun(t, r.cmd, r.stderr, defaultDrainTimeout+5*time.Second)
		if m := regexp.MustCompile(`duplicates_skipped=(\d+)`).FindStringSubmatch(log); m != nil {
			d, _ := strconv.Atoi(m[1])
			skipped += d
		}
	}
	// How many rows of records delivered again the last two runs found
	// written (the killed ones cannot say): the kills' redeliveries.
	t.Logf("%s: the replicas that drained skipped %d rows written already", guarantee, skipped)
	kafkatest.WaitLag(t, addr, group, topic, 0)
	return count("count(*)"), count("count(DISTINCT id)")
}

// jdbcWith is the WITH pairs that make a 'jdbc' table write PostgreSQL
// table pgTable on the test server.
func jdbcWith(t *testing.T, pgTable string) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	return fmt.Sprintf("'connector' = 'jdbc', 'url' = 'jdbc:postgresql://%s%s?sslmode=disable', 'table-name' = '%s', 'username' = '%s', 'password' = '%s'",
		u.Host, u.Path, pgTable, u.User.Username(), password)
}

// replica is a `kshare run` process and its log.
type replica struct {
	cmd    *exec.Cmd
	stderr *watch.Buffer
}

// killReplicas starts two `kshare run` replicas of script and SIGKILLs
// them in turn four times, each at a random point of its fifth of n by
// progress (what it counts), starting each again at once. It returns the
// replicas running.
func killReplicas(t *testing.T, script string, n int, what string, progress func() int) []replica {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	replicas := make([]replica, 2)
	start := func(i int) {
		replicas[i].cmd, _, replicas[i].stderr = startKshare(t, "run", "-f", path)
	}
	for i := range replicas {
		start(i)
	}
	for k := range 4 {
		at := killPoint(k, 5, n)
		waitCount(t, at, what, progress)
		r := replicas[k%2]
		killKshare(t, r.cmd, r.stderr, fmt.Sprintf("kill %d: kshare run", k+1))
		t.Logf("kill %d (replica %d): at %d %s (%d now)", k+1, k%2+1, at, what, progress())
		start(k % 2)
	}
	return replicas
}
