package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/kafkatest"
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
	pg := sumsTable(t)
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
	waitCount(t, n, "records counted in "+pg, folded)
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

// killPoint is where the k-th (from 0) of kills spread over a run of total
// lands: a random point between the middles of its part of total cut into
// parts and of the next, so that no kill comes at the very start and each
// finds new work done since the last.
func killPoint(k, parts, total int) int {
	return k*total/parts + total/(2*parts) + rand.IntN(total/parts)
}

// waitCount waits until count, what it counts, reaches n.
func waitCount(t *testing.T, n int, what string, count func() int) {
	t.Helper()
	kafkatest.Eventually(t, fmt.Sprintf("%d %s", n, what), func() error {
		if got := count(); got < n {
			return fmt.Errorf("%d", got)
		}
		return nil
	})
}

// killRuns starts kshare with args and SIGKILLs it three times, each once
// progress reaches a random point in its own quarter of total, starting
// it again at once; it returns the last run. started, if set, is given
// each run's standard output as it starts.
func killRuns(t *testing.T, args []string, total int, what string, progress func() int, started ...func(stdout *watch.Buffer)) (*exec.Cmd, *watch.Buffer) {
	t.Helper()
	start := func() (*exec.Cmd, *watch.Buffer) {
		cmd, stdout, stderr := startKshare(t, args...)
		for _, f := range started {
			f(stdout)
		}
		return cmd, stderr
	}
	cmd, stderr := start()
	for k := range 3 {
		at := killPoint(k, 4, total)
		waitCount(t, at, what, progress)
		killKshare(t, cmd, stderr, fmt.Sprintf("kill %d: kshare run", k+1))
		t.Logf("kill %d: at %d %s (%d now)", k+1, at, what, progress())
		cmd, stderr = start()
	}
	return cmd, stderr
}

// printed replays the changelog lines a print sink wrote ("+I[c07, 3,
// 4.50]", "-U[...]", "+U[...]", "-D[...]") keyed by their first value:
// the rows it ends at, each customer's count and total. A line a kill cut
// short is left out.
func printed(outs []*watch.Buffer) map[string][2]string {
	rows := map[string][2]string{}
	for _, out := range outs {
		for _, line := range strings.Split(out.String(), "\n") {
			if len(line) < 4 || !strings.HasSuffix(line, "]") || line[2] != '[' {
				continue
			}
			f := strings.Split(line[3:len(line)-1], ", ")
			if len(f) != 3 {
				continue
			}
			switch line[:2] {
			case "+I", "+U":
				rows[f[0]] = [2]string{f[1], f[2]}
			case "-U", "-D":
				delete(rows, f[0])
			}
		}
	}
	return rows
}

// TestRunStateDirPrintKilled: `kshare run --state-dir` of a GROUP BY over
// a share group whose changelog goes to 'print' (standard output), is
// SIGKILLed three times at random points and started again on the same
// state directory each time. Replayed by key, the changelog of all the
// runs ends at exactly every customer's count and sum: each run continues
// the groups the last one stored, and no record is counted twice.
func TestRunStateDirPrintKilled(t *testing.T) {
	const n, customers = 30000, 20
	addr, topic, group := kafkatest.LockedGroup(t, 3*time.Second)
	truth := customerOrders(t, addr, topic, n, customers)
	script := fmt.Sprintf("CREATE TABLE src (customer STRING, price DECIMAL(10, 2)) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', "+
		"'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json', 'properties.max.poll.records' = '50', 'scan.batch-size' = '50');\n"+
		"CREATE TABLE sums (customer STRING, n BIGINT, total DECIMAL(38, 2)) WITH ('connector' = 'print');\n"+
		"INSERT INTO sums SELECT customer, COUNT(*), SUM(price) FROM src GROUP BY customer;\n", addr, topic, group)
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var outs []*watch.Buffer
	counted := func() int {
		mu.Lock()
		defer mu.Unlock()
		sum := 0
		for _, r := range printed(outs) {
			v, _ := strconv.Atoi(r[0])
			sum += v
		}
		return sum
	}
	cmd, stderr := killRuns(t, []string{"run", "--state-dir", t.TempDir(), "-f", path}, n, "records counted in the printed changelog", counted,
		func(stdout *watch.Buffer) {
			mu.Lock()
			outs = append(outs, stdout)
			mu.Unlock()
		})
	waitCount(t, n, "records counted in the printed changelog", counted)
	stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	mu.Lock()
	rows := printed(outs)
	mu.Unlock()
	for c, k := range truth.count {
		want := [2]string{strconv.Itoa(k), fmt.Sprintf("%d.%02d", truth.cents[c]/100, truth.cents[c]%100)}
		if rows[c] != want {
			t.Errorf("customer %s: the changelog ends at %v, want %v", c, rows[c], want)
		}
	}
	if len(rows) != customers {
		t.Errorf("the changelog ends at %d customers, want %d", len(rows), customers)
	}
}

// TestRunStateDirUpsertKafkaKilled: the per-customer counts and sums of
// TestRunStateDirKilled go into an upsert-kafka topic instead, `kshare run
// --state-dir` SIGKILLed three times at random points and started again on
// the same state directory. The topic read back as a table (each key's
// latest value) holds exactly every customer's count and sum: a key's
// latest row is the one the last run wrote from the counts it continued.
// Without the state directory a run starts its counts from nothing, and
// the table never gets there (checked). Written exactly once, a
// read_committed reader also sees each change once: every key's counts
// rise from record to record, where a run written at least once writes
// again, after a kill, the rows of the batches its state had not stored
// (checked: the same check fails for it).
func TestRunStateDirUpsertKafkaKilled(t *testing.T) {
	for _, g := range []string{"at-least-once", "exactly-once"} {
		t.Run(g, func(t *testing.T) { testRunStateDirUpsertKafkaKilled(t, g) })
	}
}

func testRunStateDirUpsertKafkaKilled(t *testing.T, guarantee string) {
	const n, customers = 30000, 40
	addr, topic, group := kafkatest.LockedGroup(t, 3*time.Second)
	truth := customerOrders(t, addr, topic, n, customers)
	out := kafkatest.Topic(t, addr, 2)
	script := fmt.Sprintf(`CREATE TABLE src (customer STRING, price DECIMAL(10, 2)) WITH ('connector' = 'kafka-sharegroup',
  'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json',
  'properties.max.poll.records' = '50', 'scan.batch-size' = '50');
CREATE TABLE sums (customer STRING, n BIGINT NOT NULL, total DECIMAL(38, 2), PRIMARY KEY (customer) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'properties.bootstrap.servers' = '%s', 'topic' = '%s', 'key.format' = 'json', 'value.format' = 'json',
  'sink.delivery-guarantee' = '%s');
INSERT INTO sums SELECT customer, COUNT(*), SUM(price) FROM src GROUP BY customer;
`, addr, topic, group, addr, out, guarantee)
	path := filepath.Join(t.TempDir(), "pipeline.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	type row struct {
		N     int
		Total string
	}
	// latest is the topic as a table: each key's latest value, a tombstone
	// deleting it.
	latest := func() map[string]row {
		var rs []*kgo.Record
		if guarantee == "exactly-once" {
			rs = committedRecords(t, addr, out)
		} else {
			var err error
			if rs, err = readTopic(addr, out); err != nil {
				t.Fatal(err)
			}
		}
		tbl := map[string]row{}
		for _, r := range rs {
			var k struct {
				Customer string `json:"customer"`
			}
			if err := json.Unmarshal(r.Key, &k); err != nil {
				t.Fatalf("key %q at offset %d: %v", r.Key, r.Offset, err)
			}
			if r.Value == nil {
				delete(tbl, k.Customer)
				continue
			}
			var v struct {
				N     int         `json:"n"`
				Total json.Number `json:"total"`
			}
			d := json.NewDecoder(strings.NewReader(string(r.Value)))
			d.UseNumber()
			if err := d.Decode(&v); err != nil {
				t.Fatalf("value %q at offset %d: %v", r.Value, r.Offset, err)
			}
			tbl[k.Customer] = row{v.N, v.Total.String()}
		}
		return tbl
	}
	// rises says which key's count did not rise from one of its records
	// to the next, as a read_committed reader sees them, if any.
	rises := func() error {
		rs := committedRecords(t, addr, out)
		last := map[string]int{}
		for _, r := range rs {
			var k struct {
				Customer string `json:"customer"`
			}
			var v struct {
				N int `json:"n"`
			}
			if json.Unmarshal(r.Key, &k) != nil || json.Unmarshal(r.Value, &v) != nil {
				return fmt.Errorf("record at offset %d: %q = %q", r.Offset, r.Key, r.Value)
			}
			if v.N <= last[k.Customer] {
				return fmt.Errorf("customer %s at offset %d: count %d after %d: a change written twice", k.Customer, r.Offset, v.N, last[k.Customer])
			}
			last[k.Customer] = v.N
		}
		return nil
	}
	counted := func() int {
		sum := 0
		for _, r := range latest() {
			sum += r.N
		}
		return sum
	}
	cmd, stderr := killRuns(t, []string{"run", "--state-dir", t.TempDir(), "-f", path}, n, "records counted in "+out, counted)
	waitCount(t, n, "records counted in "+out, counted)
	stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	kafkatest.WaitLag(t, addr, group, topic, 0)
	tbl := latest()
	if len(tbl) != len(truth.count) {
		t.Errorf("%d customers in %s, want %d", len(tbl), out, len(truth.count))
	}
	for c, r := range tbl {
		want := row{truth.count[c], fmt.Sprintf("%d.%02d", truth.cents[c]/100, truth.cents[c]%100)}
		if r != want {
			t.Errorf("customer %s: %+v, want %+v", c, r, want)
		}
	}
	err := rises()
	switch {
	case guarantee == "exactly-once" && err != nil:
		t.Error(err)
	case guarantee != "exactly-once":
		// Not a promise of at least once either way: a kill right after
		// a commit leaves nothing to write again.
		t.Logf("written %s, a read_committed reader sees: %v (nil: each change once)", guarantee, err)
	}
}
