package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kshare/kshare/table"
)

// Collector exports the stats of the jobs jobs returns (running or ended)
// as Prometheus metrics, labelled by job id: what an operator of kshare
// run watches besides the source's metrics. The package registers nothing
// by itself: a program that serves metrics registers it.
func Collector(jobs func() []table.Job) prometheus.Collector { return collector{jobs} }

var (
	descJobInfo = prometheus.NewDesc("kshare_job_info",
		"A job (INSERT INTO) of the process: 1, with its statement.", []string{"job", "statement"}, nil)
	descJobState = prometheus.NewDesc("kshare_job_state",
		"1 for the state the job is in (RUNNING, FINISHED, FAILED, STOPPED), 0 for the others.", []string{"job", "state"}, nil)
	descJobRows = prometheus.NewDesc("kshare_job_rows_total",
		"Rows of the job: read from its query, written (handed to the sink), acked (acknowledged by the sink).", []string{"job", "stage"}, nil)
	descJobRecords = prometheus.NewDesc("kshare_job_records_total",
		"The job's source records by how they were settled: accepted, released, rejected.", []string{"job", "outcome"}, nil)
	descJobSinkErrors = prometheus.NewDesc("kshare_job_sink_errors_total",
		"Rows the job's sink refused or could not send.", []string{"job"}, nil)
	descJobDeadLettered = prometheus.NewDesc("kshare_job_sink_dead_lettered_total",
		"Rows the job's sink topic refused that went to its dead-letter topic.", []string{"job"}, nil)
	descJobSinkDown = prometheus.NewDesc("kshare_job_sink_unreachable_seconds",
		"How long the brokers of the job's sink have not answered; 0 while they do.", []string{"job"}, nil)
	descJobApplied = prometheus.NewDesc("kshare_job_applied_skipped_total",
		"Records delivered again that the job's state (or its merging sink) held already: accepted without being counted twice.", []string{"job"}, nil)
	descJobCheckpoints = prometheus.NewDesc("kshare_job_checkpoints_total",
		"Checkpoints of the job: writes of the groups and records of its batches since the last one to its state directory.", []string{"job"}, nil)
	descJobCheckpointTook = prometheus.NewDesc("kshare_job_checkpoint_duration_seconds",
		"How long the job's last checkpoint took (its synced write, and the commit of its sink's transaction when it writes exactly once).", []string{"job"}, nil)
	descJobAwaiting = prometheus.NewDesc("kshare_job_records_awaiting_checkpoint",
		"Records the job folded that its next checkpoint stores: locked until then.", []string{"job"}, nil)
	descJobStateBytes = prometheus.NewDesc("kshare_job_state_bytes",
		"Size on disk of the job's state directory.", []string{"job"}, nil)
	descJobCheckpointAge = prometheus.NewDesc("kshare_job_checkpoint_age_seconds",
		"Time since the job last stored its state; absent for a job without a state directory or before its first store.", []string{"job"}, nil)
	descJobStateGroups = prometheus.NewDesc("kshare_job_state_groups",
		"Groups (and open windows) the job kept at its last store.", []string{"job"}, nil)
)

var jobStates = []table.JobState{table.JobRunning, table.JobFinished, table.JobFailed, table.JobStopped}

type collector struct{ jobs func() []table.Job }

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobInfo, descJobState, descJobRows, descJobRecords, descJobSinkErrors, descJobDeadLettered,
		descJobSinkDown, descJobApplied, descJobCheckpoints, descJobCheckpointAge, descJobCheckpointTook, descJobAwaiting, descJobStateBytes, descJobStateGroups} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, j := range c.jobs() {
		id, s := j.ID(), j.Stats()
		ch <- prometheus.MustNewConstMetric(descJobInfo, prometheus.GaugeValue, 1, id, j.Statement())
		for _, st := range jobStates {
			v := 0.0
			if s.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descJobState, prometheus.GaugeValue, v, id, string(st))
		}
		counter := func(d *prometheus.Desc, v int64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{id}, labels...)...)
		}
		counter(descJobRows, s.Read, "read")
		counter(descJobRows, s.Written, "written")
		counter(descJobRows, s.Acked, "acked")
		counter(descJobRecords, s.Accepted, "accepted")
		counter(descJobRecords, s.Released, "released")
		counter(descJobRecords, s.Rejected, "rejected")
		counter(descJobSinkErrors, s.Errors)
		counter(descJobDeadLettered, s.Sink.DeadLettered)
		counter(descJobApplied, s.Applied)
		down := 0.0
		if !s.Sink.Unreachable.IsZero() {
			down = now.Sub(s.Sink.Unreachable).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(descJobSinkDown, prometheus.GaugeValue, down, id)
		if s.Kept.Dir == "" {
			continue
		}
		counter(descJobCheckpoints, s.Kept.Stored)
		ch <- prometheus.MustNewConstMetric(descJobStateGroups, prometheus.GaugeValue, float64(s.Kept.Groups), id)
		ch <- prometheus.MustNewConstMetric(descJobAwaiting, prometheus.GaugeValue, float64(s.Kept.Awaiting), id)
		ch <- prometheus.MustNewConstMetric(descJobStateBytes, prometheus.GaugeValue, float64(s.Kept.Bytes), id)
		if !s.Kept.Last.IsZero() {
			ch <- prometheus.MustNewConstMetric(descJobCheckpointAge, prometheus.GaugeValue, now.Sub(s.Kept.Last).Seconds(), id)
			ch <- prometheus.MustNewConstMetric(descJobCheckpointTook, prometheus.GaugeValue, s.Kept.Took.Seconds(), id)
		}
	}
}
