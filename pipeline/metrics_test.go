package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kshare/kshare/pipeline"
	"github.com/kshare/kshare/table"
)

// statsJob is a job that only tells its stats.
type statsJob struct {
	id    string
	stats table.JobStats
}

func (j statsJob) ID() string                 { return j.id }
func (j statsJob) Statement() string          { return "INSERT INTO out SELECT * FROM src" }
func (j statsJob) Wait(context.Context) error { return nil }
func (j statsJob) Stop()                      {}
func (j statsJob) Drain(time.Duration) error  { return nil }
func (j statsJob) Stats() table.JobStats      { return j.stats }

// The collector exports each job's stats under its id: its state, rows and
// records, and for a job with a state directory its stores; a job without
// one has no checkpoint metrics.
func TestCollector(t *testing.T) {
	jobs := []table.Job{
		statsJob{id: "1", stats: table.JobStats{State: table.JobRunning, Read: 10, Written: 9, Acked: 8, Accepted: 30, Released: 2, Rejected: 1, Errors: 1, Applied: 4,
			Kept: table.KeptStats{Dir: "/var/lib/kshare/out", Stored: 5, Groups: 7, Last: time.Now(), Took: 1500 * time.Microsecond, Awaiting: 120, Bytes: 4096}}},
		statsJob{id: "2", stats: table.JobStats{State: table.JobFailed}},
	}
	want := `
# HELP kshare_job_checkpoint_duration_seconds How long the job's last checkpoint took (its synced write, and the commit of its sink's transaction when it writes exactly once).
# TYPE kshare_job_checkpoint_duration_seconds gauge
kshare_job_checkpoint_duration_seconds{job="1"} 0.0015
# HELP kshare_job_checkpoints_total Checkpoints of the job: writes of the groups and records of its batches since the last one to its state directory.
# TYPE kshare_job_checkpoints_total counter
kshare_job_checkpoints_total{job="1"} 5
# HELP kshare_job_records_awaiting_checkpoint Records the job folded that its next checkpoint stores: locked until then.
# TYPE kshare_job_records_awaiting_checkpoint gauge
kshare_job_records_awaiting_checkpoint{job="1"} 120
# HELP kshare_job_records_total The job's source records by how they were settled: accepted, released, rejected.
# TYPE kshare_job_records_total counter
kshare_job_records_total{job="1",outcome="accepted"} 30
kshare_job_records_total{job="1",outcome="rejected"} 1
kshare_job_records_total{job="1",outcome="released"} 2
kshare_job_records_total{job="2",outcome="accepted"} 0
kshare_job_records_total{job="2",outcome="rejected"} 0
kshare_job_records_total{job="2",outcome="released"} 0
# HELP kshare_job_state 1 for the state the job is in (RUNNING, FINISHED, FAILED, STOPPED), 0 for the others.
# TYPE kshare_job_state gauge
kshare_job_state{job="1",state="FAILED"} 0
kshare_job_state{job="1",state="FINISHED"} 0
kshare_job_state{job="1",state="RUNNING"} 1
kshare_job_state{job="1",state="STOPPED"} 0
kshare_job_state{job="2",state="FAILED"} 1
kshare_job_state{job="2",state="FINISHED"} 0
kshare_job_state{job="2",state="RUNNING"} 0
kshare_job_state{job="2",state="STOPPED"} 0
# HELP kshare_job_state_bytes Size on disk of the job's state directory.
# TYPE kshare_job_state_bytes gauge
kshare_job_state_bytes{job="1"} 4096
# HELP kshare_job_state_groups Groups (and open windows) the job kept at its last store.
# TYPE kshare_job_state_groups gauge
kshare_job_state_groups{job="1"} 7
`
	c := pipeline.Collector(func() []table.Job { return jobs })
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kshare_job_checkpoints_total", "kshare_job_records_total", "kshare_job_state", "kshare_job_state_groups",
		"kshare_job_checkpoint_duration_seconds", "kshare_job_records_awaiting_checkpoint", "kshare_job_state_bytes"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "kshare_job_checkpoint_age_seconds"); n != 1 {
		t.Errorf("%d checkpoint ages, want job 1's alone", n)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
