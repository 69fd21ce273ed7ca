package worker

import "github.com/prometheus/client_golang/prometheus"

var (
	descRows    = prometheus.NewDesc("kshare_worker_rows_total", "Rows the worker pool finished, by outcome (accepted, released, rejected).", []string{"outcome"}, nil)
	descRunning = prometheus.NewDesc("kshare_worker_rows_running", "Rows running now.", nil, nil)
	descPanics  = prometheus.NewDesc("kshare_worker_panics_total", "Released rows whose function panicked.", nil, nil)
	descTimeout = prometheus.NewDesc("kshare_worker_timeouts_total", "Released rows that ran past their timeout.", nil, nil)
)

// Collector is a Prometheus collector of the pool's counts, for a program
// that serves metrics (kshare work does with --metrics-addr); the
// connector's own (sharegroup.Collector) count the records.
func (p *Pool) Collector() prometheus.Collector { return poolCollector{p} }

type poolCollector struct{ p *Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRows
	ch <- descRunning
	ch <- descPanics
	ch <- descTimeout
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	ch <- prometheus.MustNewConstMetric(descRows, prometheus.CounterValue, float64(p.accepted.Load()), "accepted")
	ch <- prometheus.MustNewConstMetric(descRows, prometheus.CounterValue, float64(p.released.Load()), "released")
	ch <- prometheus.MustNewConstMetric(descRows, prometheus.CounterValue, float64(p.rejected.Load()), "rejected")
	ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(p.running.Load()))
	ch <- prometheus.MustNewConstMetric(descPanics, prometheus.CounterValue, float64(p.panics.Load()))
	ch <- prometheus.MustNewConstMetric(descTimeout, prometheus.CounterValue, float64(p.timedOut.Load()))
}
