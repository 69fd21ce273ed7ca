package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/kafka"
	ktable "github.com/kshare/kshare/table"
)

// outagePipeline is an engine whose job INSERTs the share group of a topic
// holding the ids 0..n/2-1 (raw) into table out over a topic of its own,
// with the sink's producing client dialing through a link the test cuts.
// It returns the running job, the link, the engine's log and the topics.
func outagePipeline(t *testing.T, n int, sinkWith string) (eng *kshare.Engine, job ktable.Job, l *kafkatest.Link, logs *watch.Buffer, addr, src, dst string) {
	t.Helper()
	addr = kafkatest.Bootstrap(t)
	src, dst = kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, src, kafkatest.Values(n)[:n/2]...)
	l = kafkatest.NewLink()
	t.Cleanup(kafka.SetSinkClientOpts(l.Opt()))
	logs = &watch.Buffer{}
	eng = kshare.New(kshare.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	exec := func(sql string) *ktable.Result {
		t.Helper()
		res, err := eng.Exec(kafkatest.Context(t), sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return res
	}
	exec(`CREATE TABLE src (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw', 'bootstrap.servers' = '` + addr +
		`', 'topic' = '` + src + `', 'share-group-id' = '` + kafkatest.ShareGroup(t, addr) + `')`)
	exec(`CREATE TABLE out (v STRING) WITH ('connector' = 'kafka', 'format' = 'raw', 'properties.bootstrap.servers' = '` + addr +
		`', 'topic' = '` + dst + `'` + sinkWith + `)`)
	job = exec("INSERT INTO out SELECT v FROM src").Job
	t.Cleanup(job.Stop)
	return eng, job, l, logs, addr, src, dst
}

func waitJob(t *testing.T, job ktable.Job, what string, ok func(ktable.JobStats) bool) {
	t.Helper()
	kafkatest.Eventually(t, what, func() error {
		if st := job.Stats(); !ok(st) {
			return fmt.Errorf("job stats %+v", st)
		}
		return nil
	})
}

// sinkOutage is how long TestSinkOutage keeps the sink's broker away: the
// issue's 30 s.
const sinkOutage = 30 * time.Second

// TestSinkOutage: the sink's broker unreachable for 30 s under a running
// INSERT job. The job says so (log, SHOW JOBS), waits without failing and
// without accepting a source record whose row the sink did not acknowledge
// (the source keeps their locks renewed), goes on when the broker is back,
// and in the end every source id is in the sink topic.
func TestSinkOutage(t *testing.T) {
	const n = 2000
	eng, job, l, logs, addr, src, dst := outagePipeline(t, n, "")
	waitJob(t, job, "the first half written", func(s ktable.JobStats) bool { return s.Accepted == n/2 })

	l.Set(true)
	cut := time.Now()
	kafkatest.Produce(t, addr, src, kafkatest.Values(n)[n/2:]...)
	waitJob(t, job, "the outage told", func(s ktable.JobStats) bool { return !s.Sink.Unreachable.IsZero() })
	t.Logf("outage told after %s", time.Since(cut).Round(time.Millisecond))
	if want := "cannot reach Kafka at " + addr + " since "; !strings.Contains(logs.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, logs.String())
	}
	res, err := eng.Exec(kafkatest.Context(t), "SHOW JOBS")
	if err != nil {
		t.Fatal(err)
	}
	if state := res.Rows[0][2]; !strings.HasPrefix(state, "RUNNING: cannot reach Kafka at "+addr+" since ") || !strings.HasSuffix(state, ", retrying") {
		t.Errorf("SHOW JOBS state = %q, want RUNNING and the outage", state)
	}
	// Throughout the outage the job runs, and no record is accepted past
	// what the sink acknowledged before the cut.
	tick := time.NewTicker(500 * time.Millisecond)
	for time.Since(cut) < sinkOutage {
		<-tick.C
		s := job.Stats()
		if s.State != ktable.JobRunning || s.Accepted > s.Acked || s.Acked != n/2 {
			t.Fatalf("%s into the outage: job %+v; want it running with only the %d acknowledged rows accepted", time.Since(cut).Round(time.Second), s, n/2)
		}
	}
	tick.Stop()
	if s := job.Stats(); s.Read <= n/2 {
		t.Errorf("the job read %d rows during the outage, want some of the second half held", s.Read)
	}

	l.Set(false)
	waitJob(t, job, "every record written and accepted", func(s ktable.JobStats) bool { return s.Accepted == n })
	waitJob(t, job, "the return told", func(s ktable.JobStats) bool { return s.Sink.Unreachable.IsZero() })
	if !strings.Contains(logs.String(), "Kafka at "+addr+" answers again") {
		t.Errorf("the log does not say the broker answers again:\n%s", logs.String())
	}
	job.Stop()
	if s := job.Stats(); s.Err != nil || s.Errors != 0 || s.Acked < n {
		t.Errorf("job %+v: want no error and every row acknowledged", s)
	}
	seen := map[string]int{}
	for _, r := range kafkatest.ReadTopic(t, addr, dst, n) {
		seen[string(r.Value)]++
	}
	dups := 0
	for i := range n {
		switch c := seen[fmt.Sprint(i)]; {
		case c == 0:
			t.Errorf("id %d is not in the sink topic", i)
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("%d ids in the sink, %d duplicates", len(seen), dups)
}

// TestSinkOutageBound: past 'sink.broker-unavailable-timeout' the job fails
// with an error naming it, and the source records of the rows not
// acknowledged are released, not accepted.
func TestSinkOutageBound(t *testing.T) {
	const n = 200
	_, job, l, _, addr, src, _ := outagePipeline(t, n, ", 'sink.broker-unavailable-timeout' = '3s'")
	waitJob(t, job, "the first half written", func(s ktable.JobStats) bool { return s.Accepted == n/2 })
	l.Set(true)
	kafkatest.Produce(t, addr, src, kafkatest.Values(n)[n/2:]...)
	ctx, cancel := context.WithTimeout(kafkatest.Context(t), 30*time.Second)
	defer cancel()
	err := job.Wait(ctx)
	want := fmt.Sprintf("table 'out': no answer from Kafka at %s since ", addr)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(3s, the table's 'sink.broker-unavailable-timeout')") {
		t.Fatalf("job ended with %v, want the sink's broker-unavailable error", err)
	}
	s := job.Stats()
	if s.State != ktable.JobFailed || s.Accepted != n/2 || s.Released < 1 {
		t.Errorf("job %+v: want FAILED, only the first %d records accepted and the rest released", s, n/2)
	}
}
