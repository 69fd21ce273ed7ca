package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/table"
)

// pipelineScript writes a kshare run script that copies table src (the
// ids of topic, read by group) into a 'kafka' table over sink, and returns
// its path. extra are more WITH pairs of src.
func pipelineScript(t *testing.T, addr, topic, group, sink, extra string) string {
	t.Helper()
	script := tableDDL("src", addr, topic, group, extra) + "\n" +
		fmt.Sprintf("CREATE TABLE sink (id BIGINT) WITH ('connector' = 'kafka', 'properties.bootstrap.servers' = '%s', 'topic' = '%s', 'format' = 'json');\n", addr, sink) +
		"INSERT INTO sink SELECT * FROM src;\n"
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runQ is a pipeline's topics and group, and its kshare run script.
type runQ struct{ addr, topic, group, sink, script string }

// runQueue makes a topic of one partition holding ids 0 to n-1 and a
// group whose records are locked for lock, an empty sink topic, and the
// script of their pipeline with extra WITH pairs on the source.
func runQueue(t *testing.T, n int, lock time.Duration, extra string) (addr, sink, script string) {
	t.Helper()
	q := newRunQ(t, lock, extra)
	kafkatest.Produce(t, q.addr, q.topic, idValues(0, n)...)
	return q.addr, q.sink, q.script
}

// newRunQ is runQueue with an empty source topic.
func newRunQ(t *testing.T, lock time.Duration, extra string) runQ {
	t.Helper()
	addr, topic, group := kafkatest.LockedGroup(t, lock)
	sink := kafkatest.Topic(t, addr, 1)
	return runQ{addr, topic, group, sink, pipelineScript(t, addr, topic, group, sink, extra)}
}

// sinkSize is how many records the sink topic holds.
func sinkSize(t *testing.T, addr, topic string) int64 { return kafkatest.TopicSize(t, addr, topic) }

// waitSinkSize waits until the sink topic holds at least n records.
func waitSinkSize(t *testing.T, addr, topic string, n int64) {
	t.Helper()
	kafkatest.Eventually(t, fmt.Sprintf("%d records in %s", n, topic), func() error {
		if got := sinkSize(t, addr, topic); got < n {
			return fmt.Errorf("%d records", got)
		}
		return nil
	})
}

// sinkIDs counts each id of 0 to n-1 in the sink topic, and returns the
// counts with how many ids are missing and how many records are extra
// copies.
func sinkIDs(t *testing.T, addr, topic string, n int) (seen []int, missing, dups int) {
	t.Helper()
	rs, err := readTopic(addr, topic)
	if err != nil {
		t.Fatal(err)
	}
	seen = make([]int, n)
	for _, r := range rs {
		var v struct{ ID *int }
		if err := json.Unmarshal(r.Value, &v); err != nil || v.ID == nil || *v.ID < 0 || *v.ID >= n {
			t.Fatalf("sink record %q at offset %d is not an id below %d", r.Value, r.Offset, n)
		}
		seen[*v.ID]++
	}
	for _, c := range seen {
		switch {
		case c == 0:
			missing++
		case c > 1:
			dups += c - 1
		}
	}
	return seen, missing, dups
}

// waitAllIDs waits until every id of 0 to n-1 is in the sink topic and
// returns how many extra copies it holds.
func waitAllIDs(t *testing.T, addr, topic string, n int) int {
	t.Helper()
	waitSinkSize(t, addr, topic, int64(n))
	var dups int
	kafkatest.Eventually(t, fmt.Sprintf("every id below %d in %s", n, topic), func() error {
		var missing int
		if _, missing, dups = sinkIDs(t, addr, topic, n); missing > 0 {
			return fmt.Errorf("%d ids missing", missing)
		}
		return nil
	})
	return dups
}

// stopRun sends SIGTERM to a kshare run and waits for it to exit 0 within
// its drain bound and a margin; it returns its log.
func stopRun(t *testing.T, cmd *exec.Cmd, stderr *watch.Buffer, within time.Duration) string {
	t.Helper()
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("kshare run exited %d after SIGTERM, want 0; log:\n%s", code, stderr)
	}
	if d := time.Since(start); d > within {
		t.Errorf("kshare run took %v to drain and exit, want at most %v", d.Round(time.Millisecond), within)
	}
	return stderr.String()
}

// jobEnd reads the "job ended" line of a text log: the rows the job wrote
// and the records it accepted.
func jobEnd(t *testing.T, log string) (state string, written, accepted int) {
	t.Helper()
	m := regexp.MustCompile(`msg="job ended" job=1 state=(\w+) rows_written=(\d+) accepted=(\d+) `).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the log does not say how the job ended:\n%s", log)
	}
	if _, err := fmt.Sscan(m[2]+" "+m[3], &written, &accepted); err != nil {
		t.Fatal(err)
	}
	return m[1], written, accepted
}

// TestRunKilledThreeTimes: a pipeline of 50,000 ids at parallelism 4 into a
// 'kafka' sink, its kshare run SIGKILLed three times at different points and
// started again: at the end every id is in the sink topic. Duplicates are
// expected (rows produced and acknowledged whose records the killed process
// had not accepted yet) and counted; none may be missing.
func TestRunKilledThreeTimes(t *testing.T) {
	const n = 50000
	// Short locks: the records a killed process held come back to the next
	// one within a second or two (kfake, which ignores the group's lock
	// config, takes the test brokers' 10 s).
	addr, sink, script := runQueue(t, n, 2*time.Second, ", 'source.parallelism' = '4'")
	for i, killAt := range []int64{2000, 15000, 30000} {
		cmd, _, stderr := startKshare(t, "run", "-f", script)
		waitSinkSize(t, addr, sink, killAt)
		killKshare(t, cmd, stderr, fmt.Sprintf("kill %d: kshare run", i+1))
		t.Logf("kill %d: after %d records in the sink (%d now)", i+1, killAt, sinkSize(t, addr, sink))
	}
	cmd, _, stderr := startKshare(t, "run", "-f", script)
	dups := waitAllIDs(t, addr, sink, n)
	stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	t.Logf("every one of %d ids is in the sink; %d duplicates (%.2f%%) from the three kills", n, dups, 100*float64(dups)/n)
}

// TestRunSIGTERMDrains: SIGTERM to kshare run mid-stream exits 0 within the
// drain bound, every id it accepted is in the sink, and what it held goes
// back at once: a second run gets the rest within seconds, though the
// group locks a record for 30 s.
func TestRunSIGTERMDrains(t *testing.T) {
	const n, lock = 20000, 30 * time.Second
	// Small polls make many rounds, so that the signal lands mid-stream.
	addr, sink, script := runQueue(t, n, lock, ", 'properties.max.poll.records' = '100', 'scan.batch-size' = '50'")
	cmd, _, stderr := startKshare(t, "run", "-f", script, "--drain-timeout", "5s")
	waitSinkSize(t, addr, sink, 1000)
	log := stopRun(t, cmd, stderr, 5*time.Second+5*time.Second)
	state, written, accepted := jobEnd(t, log)
	if state != string(table.JobStopped) || accepted == 0 || accepted >= n {
		t.Fatalf("after SIGTERM the job was %s with %d of %d records accepted, want STOPPED mid-stream; log:\n%s", state, accepted, n, log)
	}
	for _, want := range []string{`msg=draining cause="stopped by SIGTERM" drain_timeout=5s`, `msg="drained; exiting"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log does not say %s:\n%s", want, log)
		}
	}
	// Every row the first run wrote was acknowledged before it exited: the
	// sink holds them all, and each accepted id among them.
	seen, _, _ := sinkIDs(t, addr, sink, n)
	if got := sinkSize(t, addr, sink); got != int64(written) {
		t.Errorf("the sink holds %d records after the drain, the job says it wrote %d", got, written)
	}

	start := time.Now()
	again, _, stderr2 := startKshare(t, "run", "-f", script)
	dups := waitAllIDs(t, addr, sink, n)
	took := time.Since(start)
	stopRun(t, again, stderr2, defaultDrainTimeout+5*time.Second)
	t.Logf("first run: %d written, %d accepted; the second run had the rest (%d ids) in %v; %d duplicates",
		written, accepted, n-countNonZero(seen), took.Round(time.Millisecond), dups)
	if took > lock/2 {
		t.Errorf("the second run took %v to get the rest: the first run's records waited for their %v locks instead of being released", took, lock)
	}
	if dups > 0 {
		t.Errorf("%d duplicates after a drain: the drained run accepted what it wrote, none should come again", dups)
	}
}

func countNonZero(cs []int) int {
	k := 0
	for _, c := range cs {
		if c > 0 {
			k++
		}
	}
	return k
}

// TestRunTwoProcessesSplitOnePartition: two kshare run processes of the
// same pipeline and share group over a topic of one partition both write
// some of its records, and together all.
func TestRunTwoProcessesSplitOnePartition(t *testing.T) {
	const n = 10000
	// Small polls in record_limit mode, so that neither takes everything
	// in one go (in batch_optimized mode, a process's default with one
	// member on one partition, the broker hands a member a whole producer
	// batch, here often all 10,000 ids: each process sees only its own
	// member, so it cannot know to split; docs/pipelines.md says to set the mode);
	// the ids come once both have joined, so that neither has them all
	// before the other is there.
	q := newRunQ(t, 10*time.Second, ", 'source.parallelism' = '1', 'properties.max.poll.records' = '100', "+
		"'properties.share.acquire.mode' = 'record_limit'")
	addr, sink := q.addr, q.sink
	a, _, aErr := startKshare(t, "run", "-f", q.script)
	b, _, bErr := startKshare(t, "run", "-f", q.script)
	kafkatest.WaitShareMembers(t, addr, q.group, 2)
	kafkatest.Produce(t, addr, q.topic, idValues(0, n)...)
	dups := waitAllIDs(t, addr, sink, n)
	_, aWrote, aAcc := jobEnd(t, stopRun(t, a, aErr, defaultDrainTimeout+5*time.Second))
	_, bWrote, bAcc := jobEnd(t, stopRun(t, b, bErr, defaultDrainTimeout+5*time.Second))
	t.Logf("one process wrote %d rows, the other %d (%d duplicates)", aWrote, bWrote, dups)
	if aWrote == 0 || bWrote == 0 {
		t.Errorf("one process wrote %d rows and the other %d: the share group did not split the partition", aWrote, bWrote)
	}
	if aAcc+bAcc < n {
		t.Errorf("the two processes accepted %d + %d records, want all %d", aAcc, bAcc, n)
	}
}
