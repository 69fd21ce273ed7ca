package filesystem_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/sinks/filesystem"
	"github.com/kshare/kshare/table"
)

// pipeline makes an engine with table t (raw v STRING) over a share group
// holding the ids 0 to n-1, and table out, a filesystem table over dir in
// format with the extra WITH pairs; a job's input ends after kafkatest.Idle().
func pipeline(t *testing.T, n int, dir, format, extra string) *kshare.Engine {
	t.Helper()
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = fmt.Append(nil, i)
	}
	addr, topic, group := kafkatest.Queue(t, 1, vs...)
	eng := kshare.New()
	for _, sql := range []string{
		`CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw', 'bootstrap.servers' = '` + addr +
			`', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `', 'scan.batch-size' = '25')`,
		`CREATE TABLE ` + "`out`" + ` (v STRING) WITH ('connector' = 'filesystem', 'path' = '` + dir + `', 'format' = '` + format + `'` + extra + `)`,
		`SET 'idle-timeout' = '` + kafkatest.Idle().String() + `'`,
	} {
		if _, err := eng.Exec(kafkatest.Context(t), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return eng
}

// insert starts INSERT INTO out SELECT v FROM t.
func insert(t *testing.T, eng *kshare.Engine) table.Job {
	t.Helper()
	res, err := eng.Exec(kafkatest.Context(t), "INSERT INTO `out` SELECT v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	return res.Job
}

// heldPart starts a job of n rows into a part of format that the policy
// never ends by itself (inactivity of an hour), and waits until the part
// holds them all.
func heldPart(t *testing.T, n int, format string) (*kshare.Engine, table.Job, string) {
	t.Helper()
	dir := t.TempDir()
	eng := pipeline(t, n, dir, format, ", 'sink.rolling-policy.inactivity-interval' = '1 h'")
	job := insert(t, eng)
	kafkatest.Eventually(t, "every row is in the open part", func() error {
		if st := job.Stats(); st.Written != int64(n) {
			return fmt.Errorf("%d rows written", st.Written)
		}
		return nil
	})
	return eng, job, dir
}

// left counts the records the group still hands out.
func left(t *testing.T, eng *kshare.Engine) int {
	t.Helper()
	rows, err := eng.Query(kafkatest.Context(t), "SELECT v FROM t", kshare.IdleTimeout(kafkatest.Idle()))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	return int(rows.Stats().Rows)
}

// TestPipelineAcceptsOnCommit: a job's rows sit in one in-progress part,
// their records held and none accepted, until the input ends and the part
// is committed; then the part is there under its final name alone, it
// holds every source row, and every record was accepted.
func TestPipelineAcceptsOnCommit(t *testing.T) {
	const n = 200
	eng, job, dir := heldPart(t, n, "json")
	final, hidden := files(t, dir)
	if st := job.Stats(); len(final) != 0 || len(hidden) != 1 || st.Accepted != 0 || st.Acked != 0 {
		t.Fatalf("with the part open: parts %v, hidden %v, stats %+v; want one in-progress part and nothing acknowledged or accepted", final, hidden, st)
	}
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := job.Stats(); st.State != table.JobFinished || st.Acked != n || st.Accepted != n || st.Released != 0 {
		t.Errorf("stats %+v, want FINISHED with every row acknowledged and accepted", st)
	}
	final, hidden = files(t, dir)
	if len(final) != 1 || len(hidden) != 0 {
		t.Errorf("after the job: parts %v, hidden %v; want one part", final, hidden)
	}
	if got := readParts(t, dir, "json"); !slices.Equal(got, upTo(n)) {
		t.Errorf("the part holds %d ids, want the %d source ids", len(got), n)
	}
	if k := left(t, eng); k != 0 {
		t.Errorf("the group still hands out %d records", k)
	}
}

// TestPipelineRollsParts: 'sink.rolling-policy.max-held-rows' ends parts
// while the job runs, so that it never holds more records than that (and
// a batch); parquet parts, each whole, hold every row together.
func TestPipelineRollsParts(t *testing.T) {
	const n, held = 500, 100
	alloc := tabletest.CheckedAlloc(t)
	defer filesystem.SetAlloc(alloc)()
	dir := t.TempDir()
	eng := pipeline(t, n, dir, "parquet", fmt.Sprintf(", 'sink.rolling-policy.inactivity-interval' = '1 h', 'sink.rolling-policy.max-held-rows' = '%d'", held))
	job := insert(t, eng)
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := job.Stats(); st.State != table.JobFinished || st.Acked != n || st.Accepted != n {
		t.Errorf("stats %+v, want FINISHED with every row acknowledged and accepted", st)
	}
	final, hidden := files(t, dir)
	if len(final) < n/held || len(hidden) != 0 {
		t.Errorf("parts %v, hidden %v; want at least %d parts", final, hidden, n/held)
	}
	if got := readParts(t, dir, "parquet"); !slices.Equal(got, upTo(n)) {
		t.Errorf("the parts hold %d ids, want the %d source ids", len(got), n)
	}
}

// TestPipelineStopReleases: a job stopped with its part open accepts
// nothing: the part is removed, no file is left, and the group hands every
// record out again.
func TestPipelineStopReleases(t *testing.T) {
	const n = 100
	eng, job, dir := heldPart(t, n, "csv")
	job.Stop()
	// Released counts the broker's confirmations; once, under -race, it
	// counted 200 for these 100 records (the group still handed out 100).
	if st := job.Stats(); st.State != table.JobStopped || st.Accepted != 0 || st.Released < n {
		t.Errorf("after Stop: %+v, want STOPPED, nothing accepted, every record released", st)
	}
	if final, hidden := files(t, dir); len(final)+len(hidden) != 0 {
		t.Errorf("a stopped job left files %v %v", final, hidden)
	}
	if k := left(t, eng); k != n {
		t.Errorf("the group hands out %d records after Stop, want all %d", k, n)
	}
}
