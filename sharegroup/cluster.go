package sharegroup

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/kafkaclient"
)

// RunningGroups lets code that is no table reach the share groups this
// process reads: the lag metrics of the groups being read.

// RunningGroup is the share group of a stream open in this process.
type RunningGroup struct {
	Group   string
	Cluster string    // its table's kafkaclient.ClusterKey
	Opts    []kgo.Opt // a plain client of its table's cluster (kafkaclient.ClientOpts)
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
		key := kafkaclient.ClusterKey(s.bound.Options)
		k := [2]string{s.group, key}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, RunningGroup{Group: s.group, Cluster: key, Opts: s.client.Opts()})
	}
	slices.SortFunc(out, func(a, b RunningGroup) int {
		return strings.Compare(a.Cluster+"\x00"+a.Group, b.Cluster+"\x00"+b.Group)
	})
	return out
}
