package kshare_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/state"
	"github.com/kshare/kshare/table"
)

// stateOrders are n orders of customers c0..c9 as JSON values, starting at
// order from, and adds them to the truth, as "customer|count|sum".
func stateOrders(from, n int, count, sum map[string]int) [][]byte {
	var out [][]byte
	for i := from; i < from+n; i++ {
		c, q := fmt.Sprintf("c%d", i%10), i%7+1
		out = append(out, fmt.Appendf(nil, `{"customer": %q, "qty": %d}`, c, q))
		count[c]++
		sum[c] += q
	}
	return out
}

// waitJob waits for res's job to end and checks how many records it
// accepted and how many groups it restored.
func waitJob(t *testing.T, res *table.Result, what string, accepted, restored int64) {
	t.Helper()
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.Accepted != accepted || st.Restored != restored {
		t.Errorf("%s: %d records accepted, %d groups restored; want %d and %d", what, st.Accepted, st.Restored, accepted, restored)
	}
}

// changelogEndsAt checks that the changelog of table counts ends at each
// key's count and sum.
func changelogEndsAt(t *testing.T, eng *kshare.Engine, count, sum map[string]int) {
	t.Helper()
	got := replay(t, changesOf(t, eng, "SELECT * FROM counts"))
	want := map[string]string{}
	for k := range count {
		want[k] = fmt.Sprintf("%s|%d|%d", k, count[k], sum[k])
	}
	if !maps.Equal(got, want) {
		t.Errorf("the changelog ends at\n %v\nwant\n %v", got, want)
	}
}

// An aggregate job with a state directory, started again in a new session
// on the same directory, continues its groups: the changelog both jobs
// wrote is a valid one (the second job's first change of a group retracts
// the row the first job left) and ends at the counts and sums of every
// order, though the second job counted only the orders produced after the
// first ended.
func TestStateDirContinuesAJob(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 2)
	out := kafkatest.Topic(t, addr, 1)
	dir := t.TempDir()
	count, sum := map[string]int{}, map[string]int{}
	kafkatest.Produce(t, addr, topic, stateOrders(0, 300, count, sum)...)
	insert := "INSERT INTO counts SELECT customer, COUNT(*), SUM(qty) FROM orders GROUP BY customer"
	session := func() *kshare.Engine {
		eng := kshare.New()
		exec(t, eng, "SET 'execution.checkpointing.dir' = 'file://"+dir+"'")
		exec(t, eng, fmt.Sprintf("SET 'idle-timeout' = '%s'", kafkatest.Idle()))
		exec(t, eng, `CREATE TABLE orders (customer STRING, qty BIGINT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`', 'properties.max.poll.records' = '50')`)
		exec(t, eng, changelogDDL("counts", addr, out))
		return eng
	}
	waitJob(t, exec(t, session(), insert), "first job", 300, 0)
	kafkatest.Produce(t, addr, topic, stateOrders(300, 200, count, sum)...)
	eng := session()
	waitJob(t, exec(t, eng, insert), "second job", 200, 10)
	changelogEndsAt(t, eng, count, sum)

	// The job ended and freed its folder: the same INSERT again in the
	// same session continues from it rather than from a folder of its own.
	third := exec(t, eng, insert)
	if err := third.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := third.Job.Stats(); st.Restored != 10 {
		t.Errorf("the same INSERT again in the session restored %d groups, want 10", st.Restored)
	}
	show := exec(t, eng, "SHOW JOBS")
	kept := show.Rows[0][slices.Index(show.Columns, "state kept")]
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Join(dir, "counts")) + `: 10 groups, [1-9][0-9]* checkpoints \(the last [0-9]+s ago, took [0-9.]+[µm]?s\), 0 records awaiting the next, [1-9][0-9]* KiB on disk$`).MatchString(kept) {
		t.Errorf("SHOW JOBS says the second job kept its state %q, want in %s, 10 groups, its checkpoints, none awaiting and its size", kept, filepath.Join(dir, "counts"))
	}

	// Another query on the same folder (in a new session: a session's
	// second job into a table gets a folder of its own) is refused,
	// saying what to do.
	_, err := session().Exec(kafkatest.Context(t), "INSERT INTO counts SELECT customer, COUNT(*), MAX(qty) FROM orders GROUP BY customer")
	if !errors.Is(err, kshare.ErrStateDir) || !errors.Is(err, state.ErrOtherQuery) || !strings.Contains(err.Error(), "use another directory") {
		t.Errorf("another query on the job's folder: %v", err)
	}
}

// A state directory is refused for a source that a restarted job reads
// from its start (a plain 'kafka' table), and ignored by a query without
// groups to keep.
func TestStateDirRefusals(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	eng := kshare.New()
	exec(t, eng, "SET 'state-dir' = '"+t.TempDir()+"'")
	exec(t, eng, `CREATE TABLE plain (customer STRING, qty BIGINT) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset')`)
	exec(t, eng, `CREATE TABLE counts (customer STRING, n BIGINT) WITH ('connector' = 'blackhole')`)
	_, err := eng.Exec(kafkatest.Context(t), "INSERT INTO counts SELECT customer, COUNT(*) FROM plain GROUP BY customer")
	if !errors.Is(err, kshare.ErrStateDir) || !strings.Contains(err.Error(), "connector 'kafka'") || !strings.Contains(err.Error(), "RESET 'state-dir'") {
		t.Errorf("a GROUP BY over a kafka table with a state directory: %v", err)
	}
	exec(t, eng, `CREATE TABLE copy (customer STRING, qty BIGINT) WITH ('connector' = 'blackhole')`)
	res := exec(t, eng, "INSERT INTO copy SELECT * FROM plain")
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Errorf("a query without groups, with a state directory set: %v", err)
	}
}

// produceEvents writes events from to from+n-1 to topic's two partitions,
// event i at second i of the day, the even ones to partition 0.
func produceEvents(t *testing.T, addr, topic string, from, n int) {
	var parts []int32
	var values []string
	for i := from; i < from+n; i++ {
		parts = append(parts, int32(i%2))
		values = append(values, fmt.Sprintf(`{"id": %d, "ts": "2024-01-01 %02d:%02d:%02d"}`, i, i/3600, i/60%60, i%60))
	}
	produceTo(t, addr, topic, parts, values)
}

// A window aggregation with a state directory writes each window's row
// once, so a plain 'kafka' topic takes it; stopped with windows open and
// started again in a new session on the same directory, the job continues
// them: the topic ends with every window once, with the count and sum of
// exactly its events; written exactly once, in transactions, a
// read_committed reader sees the same. Without a state directory the same
// INSERT is refused, saying how to make it work.
func TestStateDirWindowsOnce(t *testing.T) {
	t.Parallel()
	for _, guarantee := range []string{"at-least-once", "exactly-once"} {
		t.Run(guarantee, func(t *testing.T) {
			t.Parallel()
			stateDirWindows(t, guarantee)
		})
	}
}

func stateDirWindows(t *testing.T, guarantee string) {
	addr, topic, group := kafkatest.Queue(t, 2)
	out := kafkatest.Topic(t, addr, 1)
	dir := t.TempDir()
	produceEvents(t, addr, topic, 0, 400)
	insert := "INSERT INTO per_minute SELECT window_start, window_end, COUNT(*), SUM(id) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end"
	session := func(stateDir string, idle bool) *kshare.Engine {
		eng := kshare.New()
		if stateDir != "" {
			exec(t, eng, "SET 'state-dir' = '"+stateDir+"'")
		}
		if idle {
			exec(t, eng, fmt.Sprintf("SET 'idle-timeout' = '%s'", kafkatest.Idle()))
		}
		exec(t, eng, `CREATE TABLE ev (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`', 'properties.max.poll.records' = '50')`)
		exec(t, eng, `CREATE TABLE per_minute (window_start TIMESTAMP(3), window_end TIMESTAMP(3), n BIGINT, s BIGINT) WITH ('connector' = 'kafka', 'format' = 'json',
		  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+out+`', 'sink.delivery-guarantee' = '`+guarantee+`')`)
		return eng
	}
	_, err := session("", false).Exec(kafkatest.Context(t), insert)
	if !errors.Is(err, kshare.ErrUpdatingInsert) || !strings.Contains(err.Error(), "SET 'state-dir'") {
		t.Errorf("a window aggregation into a kafka table without a state directory: %v", err)
	}
	if guarantee == "exactly-once" {
		_, err := session(dir, false).Exec(kafkatest.Context(t), "INSERT INTO per_minute SELECT ts, ts, id, id FROM ev")
		if !errors.Is(err, kshare.ErrNotExactlyOnce) || !strings.Contains(err.Error(), "write 'at-least-once'") {
			t.Errorf("a query that keeps no state into an exactly-once kafka table: %v", err)
		}
	}

	eng := session(dir, false)
	first := exec(t, eng, insert)
	kafkatest.Eventually(t, "the first job to accept the first 400 events", func() error {
		if st := first.Job.Stats(); st.Accepted < 400 {
			return fmt.Errorf("%d accepted", st.Accepted)
		}
		return nil
	})
	exec(t, eng, "STOP JOB '"+first.Job.ID()+"'")
	if err := first.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	written := first.Job.Stats().Written
	if written == 0 || written >= 7 {
		t.Fatalf("the first job wrote %d rows, want the windows its watermark passed and not the open ones", written)
	}

	produceEvents(t, addr, topic, 400, 200)
	second := exec(t, session(dir, true), insert)
	if err := second.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := second.Job.Stats(); st.Accepted != 200 || st.Restored == 0 || st.Written+written != 10 {
		t.Errorf("second job: %d accepted, %d groups restored, %d rows written after %d; want 200, some and 10 in all", st.Accepted, st.Restored, st.Written, written)
	}
	got := map[string]int{}
	for _, r := range kafkatest.ReadTopic(t, addr, out, 10, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
		got[string(r.Value)]++
	}
	for w := range 10 {
		row := fmt.Sprintf(`{"window_start":"2024-01-01 00:%02d:00","window_end":"2024-01-01 00:%02d:00","n":60,"s":%d}`, w, w+1, 60*60*w+59*60/2)
		if got[row] != 1 {
			t.Errorf("window %d: %d rows %s", w, got[row], row)
		}
		delete(got, row)
	}
	if len(got) != 0 {
		t.Errorf("rows beside the ten windows: %v", got)
	}
}

// A window aggregation with a state directory writes its rows into a
// 'filesystem' table too: each window's row once, each batch of them
// committed as a part before its records are accepted.
func TestStateDirWindowsToFiles(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 2)
	produceEvents(t, addr, topic, 0, 200)
	parts := t.TempDir()
	eng := kshare.New()
	exec(t, eng, "SET 'state-dir' = '"+t.TempDir()+"'")
	exec(t, eng, fmt.Sprintf("SET 'idle-timeout' = '%s'", kafkatest.Idle()))
	exec(t, eng, `CREATE TABLE ev (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`', 'properties.max.poll.records' = '50')`)
	exec(t, eng, `CREATE TABLE per_minute (window_start TIMESTAMP(3), n BIGINT) WITH ('connector' = 'filesystem', 'path' = '`+parts+`', 'format' = 'json')`)
	res := exec(t, eng, "INSERT INTO per_minute SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end")
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.Accepted != 200 || st.Written != 4 {
		t.Errorf("the job accepted %d records and wrote %d rows; want 200 and the 4 windows", st.Accepted, st.Written)
	}
	var rows []string
	ents, err := os.ReadDir(parts)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "part-") {
			t.Errorf("%s left in the table's folder", e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(parts, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	slices.Sort(rows)
	want := []string{
		`{"window_start":"2024-01-01 00:00:00","n":60}`, `{"window_start":"2024-01-01 00:01:00","n":60}`,
		`{"window_start":"2024-01-01 00:02:00","n":60}`, `{"window_start":"2024-01-01 00:03:00","n":20}`,
	}
	if !slices.Equal(rows, want) {
		t.Errorf("the parts hold %q, want %q", rows, want)
	}
}
