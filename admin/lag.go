package admin

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	descLag = prometheus.NewDesc("kshare_share_group_lag",
		"Records of a topic-partition not yet settled by the share group (the broker's lag, KIP-1226), "+
			"or, where the group has not read the partition yet, those its share.auto.offset.reset will give it.",
		[]string{"group", "topic", "partition"}, nil)
	descLagErrors = prometheus.NewDesc("kshare_share_group_lag_errors_total",
		"Lag polls of a share group that failed; its lag is then left out until a poll succeeds.",
		[]string{"group"}, nil)
)

// LagCollector exports the lag of share groups per topic-partition as the
// Prometheus gauge kshare_share_group_lag{group, topic, partition}, so that
// replicas of a pipeline can be scaled on it. It polls the broker when
// scraped, at most once per interval (scrapes in between get the last
// figures), so it starts no goroutine and a fast scraper cannot flood the
// broker. Register it with a prometheus.Registerer; it is safe for
// concurrent scrapes.
type LagCollector struct {
	adm      *Admin
	groups   func() []string
	interval time.Duration
	timeout  time.Duration

	mu     sync.Mutex
	polled time.Time
	last   []prometheus.Metric
	errors map[string]float64
}

// DefaultLagInterval is the least time between two polls of a LagCollector
// when NewLagCollector is given 0.
const DefaultLagInterval = 10 * time.Second

// NewLagCollector returns a collector of the lag of the share groups that
// groups names when called (the groups of the running queries, say; it is
// called once per poll). interval is the least time between two polls (0:
// DefaultLagInterval); a poll gives up after the same time, or after
// DefaultLagInterval if that is longer.
func NewLagCollector(adm *Admin, groups func() []string, interval time.Duration) *LagCollector {
	if interval <= 0 {
		interval = DefaultLagInterval
	}
	return &LagCollector{adm: adm, groups: groups, interval: interval, timeout: max(interval, DefaultLagInterval), errors: map[string]float64{}}
}

// Describe implements prometheus.Collector.
func (c *LagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLag
	ch <- descLagErrors
}

// Collect implements prometheus.Collector.
func (c *LagCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.polled.IsZero() || time.Since(c.polled) >= c.interval {
		c.poll()
		c.polled = time.Now()
	}
	for _, m := range c.last {
		ch <- m
	}
	for g, n := range c.errors {
		ch <- prometheus.MustNewConstMetric(descLagErrors, prometheus.CounterValue, n, g)
	}
}

// poll describes every group named; it holds c.mu.
func (c *LagCollector) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	c.last = c.last[:0]
	seen := map[string]bool{}
	for _, g := range c.groups() {
		if seen[g] {
			continue
		}
		seen[g] = true
		d, err := c.adm.Group(ctx, g)
		if errors.Is(err, ErrUnknownGroup) {
			continue // not started yet: nothing waits for it
		}
		if err != nil {
			c.errors[g]++
			continue
		}
		for _, p := range d.Partitions {
			if p.Lag < 0 {
				continue
			}
			c.last = append(c.last, prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(p.Lag),
				g, p.Topic, strconv.Itoa(int(p.Partition))))
		}
	}
}
