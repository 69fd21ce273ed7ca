package sharegroup

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kshare/kshare/flow"
)

// Every stream this process opens is counted here, so that a Prometheus
// scrape sees the work of the streams that are open and of those that have
// closed. The package registers nothing by itself: a program that serves
// metrics registers Collector() (cmd/kshare does with --metrics-addr).
var registry = struct {
	sync.Mutex
	open   map[*stream]struct{}
	closed map[streamKey]*closedTotals
}{open: map[*stream]struct{}{}, closed: map[streamKey]*closedTotals{}}

type streamKey struct{ table, group string }

type closedTotals struct {
	stats   flow.Stats
	members map[string]int64
}

func track(st *stream) {
	registry.Lock()
	defer registry.Unlock()
	registry.open[st] = struct{}{}
}

// untrack moves a closed stream's counts into the totals of its table.
func untrack(st *stream) {
	s := st.Stats()
	registry.Lock()
	defer registry.Unlock()
	if _, ok := registry.open[st]; !ok {
		return // Open failed before the stream was counted
	}
	delete(registry.open, st)
	k := streamKey{st.src.name, st.src.group}
	c := registry.closed[k]
	if c == nil {
		c = &closedTotals{members: map[string]int64{}}
		registry.closed[k] = c
	}
	c.stats.Add(s)
	for _, m := range s.Consumers {
		c.members[m.Name] += m.Records
	}
}

var (
	descRecords      = sourceDesc("kshare_source_records_total", "Records received from the broker, by member.", "member")
	descRows         = sourceDesc("kshare_source_rows_total", "Rows the records decoded into.")
	descAcks         = sourceDesc("kshare_source_acks_total", "Records settled, by disposition (accept, release, reject), as the broker confirmed them.", "disposition")
	descRefused      = sourceDesc("kshare_source_acks_refused_total", "Acknowledgements the broker refused or that could not be sent; their records are delivered again.")
	descLockExpired  = sourceDesc("kshare_source_lock_expired_total", "Records settled after their lock may have run out, so possibly delivered to another consumer too; counted in no disposition of kshare_source_acks_total.")
	descOnArrival    = sourceDesc("kshare_source_expired_on_arrival_total", "Records released undelivered because their lock had nearly run out when the client handed them over.")
	descAhead        = sourceDesc("kshare_source_fetched_ahead_total", "Records the client acquired beyond what a stream needed and that went back undelivered when it closed, their delivery count raised.")
	descAcceptsLost  = sourceDesc("kshare_source_accepts_lost_total", "Records accepted here (their rows delivered, or filtered out) whose accept the broker did not apply: refused, never sent, or unanswered when the stream closed; the broker delivers them again, here or to another consumer.")
	descRedelivered  = sourceDesc("kshare_source_redelivered_total", "Records received with a delivery count above 1. A record whose accept was lost is counted here only by the consumer it comes back to (see kshare_source_accepts_lost_total).")
	descDecodeErrors = sourceDesc("kshare_source_decode_errors_total", "Records the format could not decode.")
	descEvalErrors   = sourceDesc("kshare_source_eval_errors_total", "Records whose rows a query could not evaluate, settled by 'scan.on-eval-error'.")
	descSkipped      = sourceDesc("kshare_source_skipped_total", "Records the format skipped (json.ignore-parse-errors).")
	descRenewed      = sourceDesc("kshare_source_lock_renewals_total", "Lock renewals sent for records still being delivered.")
	descDeadLettered = sourceDesc("kshare_source_dead_lettered_total", "Records that did not decode (or whose rows could not be evaluated), produced to the dead-letter topic and accepted.")
	descDeadFailed   = sourceDesc("kshare_source_dead_letter_failures_total", "Records that did not decode (or whose rows could not be evaluated) whose produce to the dead-letter topic failed; they were released.")
	descOpen         = sourceDesc("kshare_source_streams_open", "Streams (queries) reading the table now.")
)

// sourceDesc describes a metric of a table's streams: labelled by table
// and group, and by extra labels after those.
func sourceDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append([]string{"table", "group"}, extra...), nil)
}

// Collector exposes the counts of every kafka-sharegroup stream of this
// process as Prometheus metrics.
func Collector() prometheus.Collector { return collector{} }

type collector struct{}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecords, descRows, descAcks, descRefused, descAcceptsLost, descLockExpired, descOnArrival, descAhead, descRedelivered, descDecodeErrors, descEvalErrors, descSkipped, descRenewed, descDeadLettered, descDeadFailed, descOpen} {
		ch <- d
	}
}

func (collector) Collect(ch chan<- prometheus.Metric) {
	registry.Lock()
	totals := map[streamKey]*closedTotals{}
	open := map[streamKey]float64{}
	for k, c := range registry.closed {
		cp := &closedTotals{stats: c.stats, members: map[string]int64{}}
		for m, n := range c.members {
			cp.members[m] = n
		}
		totals[k] = cp
	}
	streams := make([]*stream, 0, len(registry.open))
	for st := range registry.open {
		streams = append(streams, st)
	}
	registry.Unlock()

	for _, st := range streams {
		k := streamKey{st.src.name, st.src.group}
		open[k]++
		c := totals[k]
		if c == nil {
			c = &closedTotals{members: map[string]int64{}}
			totals[k] = c
		}
		s := st.Stats()
		c.stats.Add(s)
		for _, m := range s.Consumers {
			c.members[m.Name] += m.Records
		}
	}
	counter := func(d *prometheus.Desc, v int64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}
	for k, c := range totals {
		for m, n := range c.members {
			counter(descRecords, n, k.table, k.group, m)
		}
		counter(descRows, c.stats.Rows, k.table, k.group)
		counter(descAcks, c.stats.Accepted, k.table, k.group, "accept")
		counter(descAcks, c.stats.Released, k.table, k.group, "release")
		counter(descAcks, c.stats.Rejected, k.table, k.group, "reject")
		counter(descRefused, c.stats.AckRefused, k.table, k.group)
		counter(descAcceptsLost, c.stats.AcceptsLost, k.table, k.group)
		counter(descLockExpired, c.stats.LockExpired, k.table, k.group)
		counter(descOnArrival, c.stats.ExpiredOnArrival, k.table, k.group)
		counter(descAhead, c.stats.FetchedAhead, k.table, k.group)
		counter(descRedelivered, c.stats.Redelivered, k.table, k.group)
		counter(descDecodeErrors, c.stats.DecodeErrors, k.table, k.group)
		counter(descEvalErrors, c.stats.EvalErrors, k.table, k.group)
		counter(descSkipped, c.stats.Skipped, k.table, k.group)
		counter(descRenewed, c.stats.Renewed, k.table, k.group)
		counter(descDeadLettered, c.stats.DeadLettered, k.table, k.group)
		counter(descDeadFailed, c.stats.DeadLetterFailed, k.table, k.group)
		ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, open[k], k.table, k.group)
	}
}
