package kshare_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
)

// sinkEngine is kafkaEngine's t (raw v STRING over a share group holding
// values) and table out, a 'kafka' table (raw v STRING) over a new topic
// that a SELECT reads to its end. Queries and jobs end after
// kafkatest.Idle() without records.
func sinkEngine(t *testing.T, values ...string) (eng *kshare.Engine, addr, outTopic string) {
	t.Helper()
	eng = kafkaEngine(t, values...)
	addr = kafkatest.Bootstrap(t)
	outTopic = kafkatest.Topic(t, addr, 2)
	exec(t, eng, `CREATE TABLE `+"`out`"+` (v STRING) WITH ('connector' = 'kafka', 'format' = 'raw',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+outTopic+`', 'scan.bounded.mode' = 'latest-offset')`)
	exec(t, eng, `SET 'idle-timeout' = '`+kafkatest.Idle().String()+`'`)
	return eng, addr, outTopic
}

// Every source record is in the sink, and accepted only then: the group
// has nothing left.
func TestInsertIntoKafka(t *testing.T) {
	const n = 500
	eng, _, _ := sinkEngine(t, numbers(n)...)
	res := exec(t, eng, "INSERT INTO `out` SELECT v FROM t")
	if res.Job == nil || !strings.Contains(res.Message, "job 1 started") {
		t.Fatalf("INSERT gave %+v, want job 1 started", res)
	}
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	st := res.Job.Stats()
	if st.State != table.JobFinished || st.Read != n || st.Acked != n || st.Accepted != n || st.Released != 0 || st.Errors != 0 {
		t.Errorf("stats %+v, want FINISHED with %d rows read, acked and accepted", st, n)
	}
	got, _ := values(t, eng, "SELECT v FROM `out`")
	if !slices.Equal(sorted(got), numbers(n)) {
		t.Errorf("sink holds %d records, want the %d ids", len(got), n)
	}
	if left, _ := values(t, eng, "SELECT v FROM t", kshare.IdleTimeout(kafkatest.Idle())); len(left) != 0 {
		t.Errorf("the source group still has %d records after the job", len(left))
	}
	if jobs := eng.Jobs(); len(jobs) != 1 || jobs[0].ID() != "1" {
		t.Errorf("Jobs() = %v, want job 1", jobs)
	}
}

// A record the sink topic refuses fails the job, and its batch's source
// records are released, not accepted: the group hands them out again.
func TestInsertProduceFailureReleases(t *testing.T) {
	big := strings.Repeat("x", 3000)
	eng, addr, outTopic := sinkEngine(t, "1", "2", big, "4")
	setTopicConfig(t, addr, outTopic, "max.message.bytes", "1000")
	res := exec(t, eng, "INSERT INTO `out` SELECT v FROM t")
	err := res.Job.Wait(kafkatest.Context(t))
	if err == nil || !strings.Contains(err.Error(), "max.message.bytes is 1000") {
		t.Fatalf("job ended with %v, want an error naming the topic's max.message.bytes", err)
	}
	if st := res.Job.Stats(); st.State != table.JobFailed || st.Errors == 0 || st.Released == 0 {
		t.Errorf("stats %+v, want FAILED with errors and released records", st)
	}
	again, _ := values(t, eng, "SELECT v FROM t", kshare.IdleTimeout(kafkatest.Idle()))
	found := false
	for _, v := range again {
		found = found || v == big
	}
	if !found {
		t.Errorf("the refused record is not in the group again (got %d records back)", len(again))
	}
}

// Under 'sink.on-refused-record' = 'dead-letter' the record the sink topic
// refuses goes to the dead-letter topic instead: the job finishes, and
// every source record is accepted, the refused one too.
func TestInsertRefusedRowDeadLettered(t *testing.T) {
	big := strings.Repeat("x", 3000)
	eng, addr, outTopic := sinkEngine(t, "1", "2", big, "4")
	setTopicConfig(t, addr, outTopic, "max.message.bytes", "1000")
	dlq := kafkatest.Topic(t, addr, 1)
	exec(t, eng, `ALTER TABLE `+"`out`"+` SET ('sink.on-refused-record' = 'dead-letter', 'sink.dead-letter.topic' = '`+dlq+`')`)
	res := exec(t, eng, "INSERT INTO `out` SELECT v FROM t")
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.State != table.JobFinished || st.Accepted != 4 || st.Released != 0 || st.Errors != 0 || st.Acked != 3 || st.Sink.DeadLettered != 1 {
		t.Errorf("stats %+v, want FINISHED, 4 accepted, 3 acked and 1 dead-lettered", st)
	}
	if got := kafkatest.ReadTopic(t, addr, dlq, 1); string(got[0].Value) != big {
		t.Errorf("the dead-letter topic holds %q, want the refused row", got[0].Value)
	}
}

// An INSERT that cannot run fails at statement time, before anything is
// read, and says what to fix.
func TestInsertRefusedAtStatementTime(t *testing.T) {
	eng, addr, _ := sinkEngine(t, "1")
	exec(t, eng, `CREATE TABLE nums (id BIGINT, v STRING) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+kafkatest.TopicName(t)+`')`)
	for _, c := range []struct {
		sql  string
		kind error
		want string
	}{
		{"INSERT INTO t SELECT v FROM t", table.ErrCannotWrite, "connector 'kafka-sharegroup', which can read but not write"},
		{"INSERT INTO `out` SELECT v, v FROM t", kshare.ErrInsertMismatch, "the SELECT gives 2 columns, table 'out' takes 1 (`v` STRING)"},
		{"INSERT INTO `out` SELECT CHAR_LENGTH(v) AS n FROM t", kshare.ErrInsertMismatch, "column 1 (`v`) of table 'out' is STRING, the SELECT gives `n` of type INT; write CAST(`n` AS STRING)"},
		{"INSERT INTO `out` SELECT v FROM t GROUP BY v", kshare.ErrUpdatingInsert, "upsert-kafka"},
		{"INSERT INTO nums SELECT CAST(1 AS BIGINT), v FROM t", nil, "sink topic"},
		{"INSERT INTO nope SELECT v FROM t", nil, "nope"},
	} {
		_, err := eng.Exec(kafkatest.Context(t), c.sql)
		if err == nil || (c.kind != nil && !errors.Is(err, c.kind)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %v with %q", c.sql, err, c.kind, c.want)
		}
	}
	if jobs := eng.Jobs(); len(jobs) != 0 {
		t.Errorf("refused INSERTs started %d jobs", len(jobs))
	}
	// Nothing was read: the group still has its record.
	if got, _ := values(t, eng, "SELECT v FROM t"); len(got) != 1 {
		t.Errorf("the group has %d records after refused INSERTs, want 1", len(got))
	}
}

// setTopicConfig sets one config of topic.
func setTopicConfig(t *testing.T, addr, topic, key, value string) {
	t.Helper()
	rs, err := kafkatest.Admin(t, addr).AlterTopicConfigs(kafkatest.Context(t), []kadm.AlterConfig{{Name: key, Value: &value}}, topic)
	if err == nil {
		_, err = rs.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("setting %s of %s: %v", key, topic, err)
	}
	// The broker applies a config change a moment after it answers; a
	// sink that opens before reads the old value.
	adm := kafkatest.Admin(t, addr)
	kafkatest.Eventually(t, fmt.Sprintf("%s of %s at %s", key, topic, value), func() error {
		rcs, err := adm.DescribeTopicConfigs(kafkatest.Context(t), topic)
		if err != nil {
			return err
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			return err
		}
		for _, c := range rc.Configs {
			if c.Key == key && c.Value != nil && *c.Value == value {
				return nil
			}
		}
		return fmt.Errorf("not yet: %+v", rc.Configs)
	})
}

// SHOW JOBS lists a running job; STOP JOB stops it, and its state says so.
func TestInsertShowAndStopJobs(t *testing.T) {
	eng, _, _ := sinkEngine(t, numbers(20)...)
	exec(t, eng, `SET 'idle-timeout' = '0'`)
	res := exec(t, eng, "INSERT INTO `out` SELECT v FROM t")
	kafkatest.Eventually(t, "the job writes every row", func() error {
		if st := res.Job.Stats(); st.Acked != 20 || st.Accepted != 20 {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	show := exec(t, eng, "SHOW JOBS")
	if len(show.Rows) != 1 || show.Rows[0][0] != "1" || show.Rows[0][2] != "RUNNING" || show.Rows[0][4] != "20" {
		t.Errorf("SHOW JOBS = %q, want job 1 RUNNING with 20 rows written", show.Rows)
	}
	exec(t, eng, "STOP JOB '1'")
	if st := res.Job.Stats(); st.State != table.JobStopped || st.Err != nil {
		t.Errorf("after STOP JOB: %+v, want STOPPED without an error", st)
	}
	if _, err := eng.Exec(kafkatest.Context(t), "STOP JOB '9'"); !errors.Is(err, kshare.ErrNoJob) {
		t.Errorf("STOP JOB of an unknown id: %v, want ErrNoJob", err)
	}
}

// A script (-e, -f) waits for its jobs to finish their input, then says
// how each ended.
func TestShellScriptWaitsForJobs(t *testing.T) {
	eng, _, _ := sinkEngine(t, numbers(30)...)
	var out, errOut strings.Builder
	sh := sqlshell.New(shellEngine{eng}, sqlshell.Config{Stdout: &out, Stderr: &errOut})
	if err := sh.RunScript(kafkatest.Context(t), "-e", "INSERT INTO `out` SELECT v FROM t;"); err != nil {
		t.Fatal(err)
	}
	// Both are notices: without a terminal they go to stderr, which
	// leaves stdout to data.
	if out.String() != "" || !strings.Contains(errOut.String(), "job 1 started") || !strings.Contains(errOut.String(), "job 1 finished: 30 rows written, 30 records accepted, 0 records released") {
		t.Errorf("stdout %q, stderr %q: want the job's id at once and its end", out.String(), errOut.String())
	}
	if got, _ := values(t, eng, "SELECT v FROM `out`"); len(got) != 30 {
		t.Errorf("sink holds %d records, want 30", len(got))
	}
}

// A script whose wait for its jobs is cut short (a signal: ctx ends with a
// cause) stops them, says how each ended, and returns the cause: what the
// job wrote is accepted, the rest released.
func TestShellScriptStoppedWhileWaiting(t *testing.T) {
	eng, _, _ := sinkEngine(t, numbers(30)...)
	exec(t, eng, `SET 'idle-timeout' = '0'`)
	var out, errOut strings.Builder
	sh := sqlshell.New(shellEngine{eng}, sqlshell.Config{Stdout: &out, Stderr: &errOut})
	stopped := errors.New("stopped by SIGTERM")
	ctx, cancel := context.WithCancelCause(kafkatest.Context(t))
	defer cancel(nil)
	go func() {
		// The job has written every row and waits for more: the script
		// would wait for ever.
		err := watch.Wait(ctx, func() error {
			if jobs := eng.Jobs(); len(jobs) != 1 || jobs[0].Stats().Accepted != 30 {
				return errors.New("not every row accepted")
			}
			return nil
		})
		if err == nil {
			cancel(stopped)
		}
	}()
	err := sh.RunScript(ctx, "-e", "INSERT INTO `out` SELECT v FROM t;")
	if !errors.Is(err, stopped) {
		t.Fatalf("RunScript: %v, want the signal's cause", err)
	}
	if !strings.Contains(errOut.String(), "job 1 stopped: 30 rows written, 30 records accepted, 0 records released") {
		t.Errorf("stderr %q: want how the job ended", errOut.String())
	}
	if st := eng.Jobs()[0].Stats(); st.State != table.JobStopped {
		t.Errorf("the job is %s after the script's end, want STOPPED", st.State)
	}
}

// shellEngine is the engine as the shell takes it, as cmd/kshare wires it.
type shellEngine struct{ *kshare.Engine }

func (e shellEngine) Query(ctx context.Context, sql string) (*query.Rows, error) {
	return e.Engine.Query(ctx, sql)
}

// The sink writes its persisted metadata columns: a record's timestamp and
// headers come through the pipeline, and 'fixed' writes partition 0.
func TestInsertWritesMetadata(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	in, out := kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 3)
	stamp := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	kafkatest.ProduceRecords(t, addr, &kgo.Record{Topic: in, Value: []byte("a"), Timestamp: stamp,
		Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}})
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE src (v STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL,
	  hs MAP<STRING, BYTES> METADATA FROM 'headers' VIRTUAL) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+in+`', 'share-group-id' = '`+kafkatest.ShareGroup(t, addr)+`')`)
	exec(t, eng, `CREATE TABLE dst (v STRING, ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', hs MAP<STRING, BYTES> METADATA FROM 'headers')
	  WITH ('connector' = 'kafka', 'format' = 'raw', 'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+out+`',
	  'sink.partitioner' = 'fixed')`)
	// The job runs until its one record is written and accepted, however
	// long the group's first fetch takes on a busy machine (an idle
	// timeout could end it before that, with nothing written).
	exec(t, eng, `SET 'idle-timeout' = '0'`)
	job := exec(t, eng, "INSERT INTO dst SELECT v, ts, hs FROM src").Job
	kafkatest.Eventually(t, "the record written and accepted", func() error {
		if st := job.Stats(); st.Acked != 1 || st.Accepted != 1 {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})
	job.Stop()
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, addr, kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	ctx := kafkatest.Context(t)
	for len(got) == 0 && ctx.Err() == nil {
		got = append(got, cl.PollFetches(ctx).Records()...)
	}
	if len(got) != 1 {
		t.Fatalf("got %d records in the sink, want 1", len(got))
	}
	r := got[0]
	if string(r.Value) != "a" || !r.Timestamp.Equal(stamp) || r.Partition != 0 ||
		len(r.Headers) != 1 || r.Headers[0].Key != "trace" || string(r.Headers[0].Value) != "t1" {
		t.Errorf("sink record: value %q, timestamp %v, partition %d, headers %v; want a, %v, 0, trace=t1", r.Value, r.Timestamp, r.Partition, r.Headers, stamp)
	}
}
