package main

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/sharegroup"
)

// shareLag exports kshare_share_group_lag (admin.LagCollector) for the
// share groups that the queries of this process are reading now
// (sharegroup.RunningGroups): one collector per cluster they read, with a
// client of its own made when a query of that cluster is first seen at a
// scrape. Each polls the broker at most every admin.DefaultLagInterval.
type shareLag struct {
	mu       sync.Mutex
	clusters map[string]*clusterLag
}

type clusterLag struct {
	cl  *kgo.Client
	lag *admin.LagCollector
}

func newShareLag() *shareLag { return &shareLag{clusters: map[string]*clusterLag{}} }

// Describe sends nothing, which makes shareLag an unchecked collector: the
// clusters, and so the collectors, come and go with the queries.
func (*shareLag) Describe(chan<- *prometheus.Desc) {}

func (s *shareLag) Collect(ch chan<- prometheus.Metric) {
	running := sharegroup.RunningGroups()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rg := range running {
		if _, ok := s.clusters[rg.Cluster]; ok {
			continue
		}
		// The table's options were checked at CREATE TABLE and its query
		// made a client of them, so this one is made too.
		cl, err := kgo.NewClient(rg.Opts...)
		if err != nil {
			continue
		}
		key := rg.Cluster
		groups := func() []string {
			var out []string
			for _, g := range sharegroup.RunningGroups() {
				if g.Cluster == key {
					out = append(out, g.Group)
				}
			}
			return out
		}
		s.clusters[key] = &clusterLag{cl: cl, lag: admin.NewLagCollector(admin.New(cl), groups, 0)}
	}
	for _, c := range s.clusters {
		c.lag.Collect(ch)
	}
}

// close closes the clients, after the last scrape.
func (s *shareLag) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, c := range s.clusters {
		c.cl.Close()
		delete(s.clusters, k)
	}
}
