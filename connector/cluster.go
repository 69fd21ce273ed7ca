package connector

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/options"
)

// This file lets code that is no table reach the cluster a table reads:
// the statements about topics and share groups, and the lag metrics of the
// groups being read. They take the same keys a table takes, declared once
// in Options, and one builder (clientConfig) turns them into a client.

// consumerOnly are the 'properties.*' keys that tune a share-group member,
// not a client of the cluster: a session's cluster refuses them.
var consumerOnly = []string{OptMaxPollRecords, OptShareAcquireMode}

// ClusterOptions are the keys that say how to reach a cluster outside a
// table ('bootstrap.servers' and the 'properties.*' client and security
// keys), as Options declares them; a session sets them with SET.
var ClusterOptions = func() *options.Set {
	s := &options.Set{Owner: "the session's cluster", Validate: Validate}
	for _, o := range Options.Options {
		if (o.Key == OptBootstrapServers || strings.HasPrefix(o.Key, "properties.")) && !slices.Contains(consumerOnly, o.Key) {
			s.Options = append(s.Options, o)
		}
	}
	return s
}()

// ClientOpts returns the franz-go options of a plain client (no group, no
// topics) of the cluster v names; v holds values parsed against Options (a
// table's) or ClusterOptions. It does no I/O beyond reading the TLS files
// v names.
func ClientOpts(v options.Values) ([]kgo.Opt, error) {
	c, err := newClientConfig(v)
	if err != nil {
		return nil, err
	}
	return c.opts(), nil
}

// ClusterKey names the cluster and the identity v connects with (servers,
// protocol and user; no secret), so that tables that read one cluster as
// one principal share a key.
func ClusterKey(v options.Values) string {
	return strings.Join([]string{v.String(OptBootstrapServers), v.String(OptSecurityProtocol), v.String(OptSASLUsername), v.String(OptSSLCertLocation)}, "|")
}

// RunningGroup is the share group of a stream open in this process.
type RunningGroup struct {
	Group   string
	Cluster string    // its table's ClusterKey
	Opts    []kgo.Opt // a plain client of its table's cluster (ClientOpts)
}

// RunningGroups lists the share groups of the streams open now, one entry
// per group and cluster, for the lag metrics of what is being read.
func RunningGroups() []RunningGroup {
	registry.Lock()
	defer registry.Unlock()
	seen := map[[2]string]bool{}
	var out []RunningGroup
	for st := range registry.open {
		s := st.src
		key := ClusterKey(s.bound.Options)
		k := [2]string{s.group, key}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, RunningGroup{Group: s.group, Cluster: key, Opts: s.client.opts()})
	}
	slices.SortFunc(out, func(a, b RunningGroup) int {
		return strings.Compare(a.Cluster+"\x00"+a.Group, b.Cluster+"\x00"+b.Group)
	})
	return out
}
