package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/internal/watch"
)

// TestRunStateDirKilled: `kshare run --state-dir` of a GROUP BY over a
// share group, upserting per-customer counts and sums into a PostgreSQL
// table (written at least once), is SIGKILLed three times at random points
// and started again on the same state directory each time. The table ends
// with exactly every customer's count and sum: each run continues the
// groups the last one stored, and the records the share group hands out
// again (their acknowledgements died with the process) are not counted
// twice. Without the state directory a run would start its counts from
// nothing and overwrite the rows with partial counts.
func TestRunStateDirKilled(t *testing.T) {
	const n, customers = 40000, 40
	// Locks of 3 s: a killed run's records come back within seconds.
	addr, topic, group := kafkatest.LockedGroup(t, 3*time.Second)
	truth := customerOrders(t, addr, topic, n, customers)
	pg := pgtest.Table(t, "customer text PRIMARY KEY, n bigint NOT NULL, total numeric(38, 2)")
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	// Polls and batches of 50: many batches, each stored before its
	// records are accepted, so that a kill lands in the middle.
	script := sumsScript(t, addr, topic, group, ", 'scan.batch-size' = '50'", pg, "")
	if err := os.WriteFile(path, []byte(strings.Replace(script, "'properties.max.poll.records' = '100'", "'properties.max.poll.records' = '50'", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	folded := func() int { return countedIn(t, pg) }
	cmd, stderr := killRuns(t, []string{"run", "--state-dir", stateDir, "-f", path}, n, "records counted in "+pg, folded)
	kafkatest.Eventually(t, fmt.Sprintf("all %d records counted in %s", n, pg), func() error {
		if got := folded(); got < n {
			return fmt.Errorf("%d records", got)
		}
		return nil
	})
	// The last run may have found nothing left to count: it is stopped
	// once its job runs, not while it reads its script.
	kafkatest.Eventually(t, "the last run's job to start", func() error {
		if !strings.Contains(stderr.String(), "job started") {
			return fmt.Errorf("log: %s", stderr)
		}
		return nil
	})
	log := stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	if m := regexp.MustCompile(`groups_restored=(\d+)`).FindStringSubmatch(log); m == nil || m[1] != strconv.Itoa(customers) {
		t.Errorf("the last run did not say it restored the %d groups; log:\n%s", customers, log)
	}
	kafkatest.WaitLag(t, addr, group, topic, 0)
	if got := folded(); got != n {
		t.Errorf("the table counts %d records, want %d", got, n)
	}
	truth.check(t, pg)
}

// killRuns starts kshare with args and SIGKILLs it three times, each once
// progress reaches a random point in its own quarter of total, starting
// it again at once; it returns the last run.
func killRuns(t *testing.T, args []string, total int, what string, progress func() int) (*exec.Cmd, *watch.Buffer) {
	t.Helper()
	cmd, _, stderr := startKshare(t, args...)
	for k := range 3 {
		at := k*total/4 + total/8 + rand.IntN(total/4)
		kafkatest.Eventually(t, fmt.Sprintf("%d %s", at, what), func() error {
			if got := progress(); got < at {
				return fmt.Errorf("%d", got)
			}
			return nil
		})
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd); code != -1 {
			t.Fatalf("kill %d: kshare run exited %d, want killed; log:\n%s", k+1, code, stderr)
		}
		t.Logf("kill %d: at %d %s (%d now)", k+1, at, what, progress())
		cmd, _, stderr = startKshare(t, args...)
	}
	return cmd, stderr
}
