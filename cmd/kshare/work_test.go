package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/worker"
)

// workScript is a worker for these tests, in sh with builtins only so that
// thousands of runs stay cheap: it logs "id delivery" to $WORKLOG, rejects
// ids ending in 7 (exit 65), fails the first delivery of every tenth id,
// sleeps $WORKSLEEP if set, and prints the id.
const workScript = `#!/bin/sh
read -r line
id=${line#*:}
id=${id%\}}
echo "$id $KSHARE_DELIVERY_COUNT" >> "$WORKLOG"
case $id in
*7) echo "id $id can never work" >&2; exit 65;;
*0) if [ "$KSHARE_DELIVERY_COUNT" = 1 ]; then exit 1; fi;;
esac
if [ -n "$WORKSLEEP" ]; then sleep "$WORKSLEEP"; fi
echo "$id"
`

func writeWorkScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "work.sh")
	if err := os.WriteFile(p, []byte(workScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// workLines reads the script's log: deliveries seen per id ("id delivery"
// lines, or "id" alone when idOnly).
func workLines(t *testing.T, path string, idOnly bool) map[int][]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[int][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var id, d int
		var err error
		if idOnly {
			_, err = fmt.Sscanf(sc.Text(), "%d", &id)
		} else {
			_, err = fmt.Sscanf(sc.Text(), "%d %d", &id, &d)
		}
		if err != nil {
			t.Fatalf("%s: bad line %q", path, sc.Text())
		}
		seen[id] = append(seen[id], d)
	}
	return seen
}

// outIDs reads an --out file: how often each id was accepted, with the
// coordinates each line names (id first+k at offset k).
func outIDs(t *testing.T, path string, killed bool, first int) map[int]int {
	t.Helper()
	text := wholeLines(t, path, killed)
	got := map[int]int{}
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l == "" {
			continue
		}
		var rec struct {
			Topic     string `json:"topic"`
			Partition *int   `json:"partition"`
			Offset    *int64 `json:"offset"`
			Output    int    `json:"output"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Topic == "" || rec.Partition == nil || rec.Offset == nil {
			t.Fatalf("%s: line %q is not {topic, partition, offset, output}: %v", path, l, err)
		}
		if int64(rec.Output-first) != *rec.Offset {
			t.Fatalf("%s: id %d at offset %d (ids are produced at their own offsets)", path, rec.Output, *rec.Offset)
		}
		got[rec.Output]++
	}
	return got
}

// persistentScript is workScript as a --persistent worker: it reads rows
// as JSON lines and answers each with a JSON line. It has no delivery count,
// so a marker file per id ($WORKDIR/ID) tells a first delivery.
const persistentScript = `#!/bin/sh
while read -r line; do
  id=${line#*:}
  id=${id%\}}
  echo "$id" >> "$WORKLOG"
  case $id in
  *7) echo "id $id can never work" >&2; echo '{"status": "reject", "error": "never"}'; continue;;
  *0) if [ ! -e "$WORKDIR/$id" ]; then : > "$WORKDIR/$id"; echo '{"status": "release", "error": "first try"}'; continue; fi;;
  esac
  echo "{\"status\": \"accept\", \"output\": $id}"
done
`

// Every id of a run through a script that fails the first delivery of
// every tenth id and rejects ids ending in 7 is done exactly as the script
// saw it (the tenth ids on their second delivery), the 7s are rejected and
// never come again, nothing is lost. Each run ends after exactly the rows
// that makes, so a record delivered once too often leaves another undone.
// 5,000 rows at concurrency 32 with --persistent copies; 500 with a process
// per row, which costs a fork and exec each.
func TestWorkOutcomesByID(t *testing.T) {
	t.Run("persistent", func(t *testing.T) { workOutcomes(t, 5000, true) })
	t.Run("per-row", func(t *testing.T) { workOutcomes(t, 500, false) })
}

func workOutcomes(t *testing.T, n int, persistent bool) {
	addr, topic, group := idTopic(t, 0, n)
	ddl := ordersDDL(t, addr, "orders", topic, group, "")
	dir := t.TempDir()
	log, out := filepath.Join(dir, "work.log"), filepath.Join(dir, "out.jsonl")
	script := writeWorkScript(t)
	args := []string{"work", "--init", ddl, "--query", "SELECT id FROM orders",
		"--concurrency", "32", "--max-rows", strconv.Itoa(n + n/10), "--out", out}
	if persistent {
		script = filepath.Join(dir, "persistent.sh")
		if err := os.WriteFile(script, []byte(persistentScript), 0o755); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--persistent")
	}
	cmd, _, stderr := startKshareEnv(t, []string{"WORKLOG=" + log, "WORKDIR=" + dir}, append(args, "--", script)...)
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("kshare work exited with %d; stderr:\n%s", code, stderr)
	}
	seen := workLines(t, log, persistent)
	done := outIDs(t, out, false, 0)
	for id := range n {
		want := []int{1}
		if id%10 == 0 {
			want = []int{1, 2}
		}
		got := seen[id]
		if persistent {
			// The script cannot tell the delivery count: number the
			// deliveries it logged.
			got = make([]int, len(seen[id]))
			for i := range got {
				got[i] = i + 1
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("id %d: deliveries %v, want %v", id, got, want)
		}
		acc := 1
		if id%10 == 7 {
			acc = 0
		}
		if done[id] != acc {
			t.Errorf("id %d accepted %d times, want %d", id, done[id], acc)
		}
	}
	s := stderr.String()
	wants := []string{fmt.Sprintf("kshare work: %d rows done: %d accepted, %d released, %d rejected", n+n/10, n-n/10, n/10, n/10)}
	if persistent {
		// A copy's stderr is read apart from its answers, so a line is
		// logged with the row in work when it is read: maybe the next.
		wants = append(wants, `msg="worker stderr" topic=`+topic+` partition=0 offset=`, `stderr="id 7 can never work"`)
	} else {
		wants = append(wants, `msg="worker stderr" topic=`+topic+` partition=0 offset=7 delivery_count=1 stderr="id 7 can never work\n"`)
	}
	for _, want := range wants {
		if !strings.Contains(s, want) {
			t.Errorf("stderr lacks %q:\n%s", want, s[:min(len(s), 3000)])
		}
	}
}

// kshare work SIGKILLed mid-run and started again: every id is done at
// least once. The killed run's records come back when their locks expire
// (2 s for this group).
func TestWorkKilled(t *testing.T) {
	const n = 400
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.GroupName(t)
	kafkatest.SetGroupConfig(t, addr, group, map[string]string{"share.record.lock.duration.ms": "2000"})
	kafkatest.Produce(t, addr, topic, idValues(0, n)...)
	ddl := ordersDDL(t, addr, "orders", topic, group, "")
	dir := t.TempDir()
	log, first, second := filepath.Join(dir, "work.log"), filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")
	script := writeWorkScript(t)
	env := []string{"WORKLOG=" + log, "WORKSLEEP=0.02"}

	cmd, _, stderr := startKshareEnv(t, env, "work", "--init", ddl, "--query", "SELECT id FROM orders", "--concurrency", "8", "--out", first, "--", script)
	waitFileSize(t, first, 2000) // some dozens of rows in
	killKshare(t, cmd, stderr, "killed kshare work")
	cmd, _, stderr = startKshareEnv(t, env, "work", "--init", ddl, "--query", "SELECT id FROM orders", "--concurrency", "8",
		"--out", second, "--idle-timeout", "4s", "--", script)
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("second kshare work exited with %d; stderr:\n%s", code, stderr)
	}
	a, b := outIDs(t, first, true, 0), outIDs(t, second, false, 0)
	var missing []int
	for id := range n {
		if id%10 != 7 && a[id]+b[id] == 0 {
			missing = append(missing, id)
		}
	}
	t.Logf("the killed run accepted %d ids, the second %d", len(a), len(b))
	if len(a) == 0 || len(a) >= n-n/10 {
		t.Errorf("the killed run accepted %d ids: the kill did not land mid-run", len(a))
	}
	if len(missing) > 0 {
		t.Fatalf("%d ids never done, e.g. %v", len(missing), missing[:min(len(missing), 10)])
	}
}

// SIGTERM stops kshare work: no new row starts, running rows finish within
// --drain-timeout and are accepted, and the rows it held and had not
// started are released at once, so the next run gets them without waiting
// for their locks. Past --drain-timeout running rows are killed and
// released.
func TestWorkSIGTERMDrains(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, idValues(1, 7)...) // no id the script fails or rejects
	script := writeWorkScript(t)

	t.Run("finish", func(t *testing.T) {
		group := kafkatest.GroupName(t)
		ddl := ordersDDL(t, addr, "orders", topic, group, "")
		dir := t.TempDir()
		log, first, second := filepath.Join(dir, "work.log"), filepath.Join(dir, "first.jsonl"), filepath.Join(dir, "second.jsonl")
		cmd, _, stderr := startKshareEnv(t, []string{"WORKLOG=" + log, "WORKSLEEP=1"}, "work", "--init", ddl, "--query", "SELECT id FROM orders",
			"--concurrency", "4", "--drain-timeout", "20s", "--out", first, "--", script)
		waitFileSize(t, log, int64(len("1 1\n")*4)) // four rows running
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd); code != 143 {
			t.Fatalf("kshare work exited with %d after SIGTERM, want 143; stderr:\n%s", code, stderr)
		}
		started := workLines(t, log, false)
		done := outIDs(t, first, false, 1)
		if len(started) != 4 || len(done) != 4 {
			t.Fatalf("%d rows started and %d accepted before the exit, want the 4 running to finish; stderr:\n%s", len(started), len(done), stderr)
		}
		// The two not started were released: a second run gets them at
		// once, well within the group's lock duration (10 s on the test
		// broker).
		cmd, _, stderr = startKshareEnv(t, []string{"WORKLOG=" + log}, "work", "--init", ddl, "--query", "SELECT id FROM orders",
			"--concurrency", "4", "--max-rows", "2", "--out", second, "--", script)
		if code := waitExit(t, cmd); code != 0 {
			t.Fatalf("second run exited with %d; stderr:\n%s", code, stderr)
		}
		rest := outIDs(t, second, false, 1)
		for id := 1; id < 7; id++ {
			if done[id]+rest[id] != 1 {
				t.Errorf("id %d accepted %d times in all", id, done[id]+rest[id])
			}
		}
	})
	t.Run("kill", func(t *testing.T) {
		group := kafkatest.GroupName(t)
		ddl := ordersDDL(t, addr, "orders", topic, group, "")
		dir := t.TempDir()
		log, out := filepath.Join(dir, "work.log"), filepath.Join(dir, "out.jsonl")
		cmd, _, stderr := startKshareEnv(t, []string{"WORKLOG=" + log, "WORKSLEEP=30"}, "work", "--init", ddl, "--query", "SELECT id FROM orders",
			"--concurrency", "2", "--drain-timeout", "200ms", "--out", out, "--", script)
		waitFileSize(t, log, int64(len("1 1\n")*2))
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, cmd); code != 143 {
			t.Fatalf("kshare work exited with %d after SIGTERM, want 143; stderr:\n%s", code, stderr)
		}
		if done := outIDs(t, out, false, 1); len(done) != 0 {
			t.Errorf("%d rows accepted; the running ones were to be killed", len(done))
		}
		// The two running, and those the query held for the workers.
		if s := stderr.String(); !regexp.MustCompile(`kshare work: (\d) rows done: 0 accepted, \d released, 0 rejected`).MatchString(s) ||
			strings.Count(s, "process group killed: context canceled") != 2 {
			t.Errorf("stderr:\n%s", s)
		}
	})
}

// The progress line redraws itself in place and ends with a newline.
func TestWorkProgressLine(t *testing.T) {
	var b strings.Builder
	st := worker.Stats{Accepted: 90, Released: 8, Rejected: 2, Running: 5}
	writeWorkProgress(&b, st, 2*time.Second, false)
	writeWorkProgress(&b, st, 4*time.Second, true)
	want := "\r\x1b[K100 done, 5 in flight, 8 released, 2 rejected, 50 rows/s" +
		"\r\x1b[K100 done, 5 in flight, 8 released, 2 rejected, 25 rows/s\n"
	if b.String() != want {
		t.Errorf("progress %q, want %q", b.String(), want)
	}
}

// intoScript answers each row with a JSON object for the 'answers' table:
// the id and a label. On its first delivery id 3 prints something that
// is not a row of it (a marker file in $WORKDIR tells the first).
const intoScript = `#!/bin/sh
read -r line
id=${line#*:}
id=${id%\}}
if [ "$id" = 3 ] && [ ! -e "$WORKDIR/3" ]; then
  : > "$WORKDIR/3"
  echo "not json"
  exit 0
fi
echo "{\"id\": $id, \"label\": \"job-$id\"}"
`

// kshare work --into writes each output as a row of a table: every id
// arrives in the sink topic once, with its label. The output that is not a
// row releases its record, which comes again and is done then (the run's
// --max-rows counts that second delivery).
func TestWorkInto(t *testing.T) {
	const n = 40
	addr, topic, group := idTopic(t, 0, n)
	sinkTopic := kafkatest.Topic(t, addr, 1)
	dir := t.TempDir()
	ddl := filepath.Join(dir, "tables.sql")
	tables := tableDDL("orders", addr, topic, group, "") + "\n" +
		fmt.Sprintf("CREATE TABLE answers (id BIGINT, label STRING) WITH ('connector' = 'kafka', 'properties.bootstrap.servers' = '%s', 'topic' = '%s', 'format' = 'json');\n", addr, sinkTopic)
	if err := os.WriteFile(ddl, []byte(tables), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "into.sh")
	if err := os.WriteFile(script, []byte(intoScript), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd, _, stderr := startKshareEnv(t, []string{"WORKDIR=" + dir}, "work", "--init", ddl, "--query", "SELECT id FROM orders",
		"--concurrency", "8", "--max-rows", strconv.Itoa(n+1), "--into", "answers", "--", script)
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("kshare work exited with %d; stderr:\n%s", code, stderr)
	}
	got := map[int]string{}
	for _, r := range kafkatest.ReadTopic(t, addr, sinkTopic, n) {
		var row struct {
			ID    int    `json:"id"`
			Label string `json:"label"`
		}
		if err := json.Unmarshal(r.Value, &row); err != nil {
			t.Fatalf("sink record %q: %v", r.Value, err)
		}
		if _, dup := got[row.ID]; dup {
			t.Errorf("id %d written twice", row.ID)
		}
		got[row.ID] = row.Label
	}
	ends, err := kafkatest.Admin(t, addr).ListEndOffsets(kafkatest.Context(t), sinkTopic)
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := ends.Lookup(sinkTopic, 0); end.Offset != n {
		t.Errorf("the sink topic holds %d records, want %d", end.Offset, n)
	}
	for id := range n {
		if want := fmt.Sprintf("job-%d", id); got[id] != want {
			t.Errorf("id %d: label %q in the sink, want %q", id, got[id], want)
		}
	}
	s := stderr.String()
	for _, want := range []string{
		fmt.Sprintf("kshare work: %d rows done: %d accepted, 1 released, 0 rejected", n+1, n),
		"--into answers: the program's output is not a row of the table",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("stderr lacks %q:\n%s", want, s[:min(len(s), 3000)])
		}
	}
}

// --into names a table that --init defined and that can be written, and
// goes with no --out.
func TestWorkIntoBadInput(t *testing.T) {
	addr, topic, group := idTopic(t, 0, 1)
	ddl := ordersDDL(t, addr, "orders", topic, group, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--into", "nope"}, "--into: "},
		{[]string{"--into", "orders", "--out", filepath.Join(t.TempDir(), "o.jsonl")}, "--out and --into both say where outputs go: give one"},
		{[]string{"--into", "orders"}, "table 'orders' has connector 'kafka-sharegroup', which can read but not write"},
	} {
		args := append([]string{"work", "--init", ddl, "--query", "SELECT id FROM orders", "--max-rows", "1"}, c.args...)
		cmd, _, stderr := startKshare(t, append(args, "--", "true")...)
		if code := waitExit(t, cmd); code == 0 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want a failure saying %q", c.args, code, stderr, c.want)
		}
	}
}
