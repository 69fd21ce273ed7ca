package admin_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
)

// TestLagCollector: the lag metric shows the figure DESCRIBE SHARE GROUP
// does, per topic-partition; a group that does not exist yet adds nothing,
// and a failed poll counts an error.
func TestLagCollector(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(10)...)
	readAndAccept(t, addr, group, topic, 4)
	adm := newAdmin(t, addr)
	missing := "no-such-" + kafkatest.GroupName(t)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(admin.NewLagCollector(adm, func() []string { return []string{group, missing, group} }, time.Millisecond))
	want := fmt.Sprintf(`# HELP kshare_share_group_lag Records of a topic-partition not yet settled by the share group (the broker's lag, KIP-1226), or, where the group has not read the partition yet, those its share.auto.offset.reset will give it.
# TYPE kshare_share_group_lag gauge
kshare_share_group_lag{group=%q,partition="0",topic=%q} 6
`, group, topic)
	ctx := kafkatest.Context(t)
	kafkatest.Eventually(t, "the lag metric", func() error {
		d, err := adm.Group(ctx, group)
		if err != nil {
			return err
		}
		if len(d.Partitions) != 1 || d.Partitions[0].Lag != 6 {
			return fmt.Errorf("described %+v, want lag 6", d.Partitions)
		}
		return testutil.GatherAndCompare(reg, strings.NewReader(want), "kshare_share_group_lag")
	})
	if n, err := testutil.GatherAndCount(reg, "kshare_share_group_lag_errors_total"); err != nil || n != 0 {
		t.Errorf("lag poll errors: %d series, %v; want none (an unknown group is no error)", n, err)
	}

	// A cluster that does not answer: the poll fails and says so.
	c := kafkatest.Fake(t)
	down := admin.New(kafkatest.Client(t, c.ListenAddrs()[0]))
	c.Close()
	reg2 := prometheus.NewPedanticRegistry()
	reg2.MustRegister(admin.NewLagCollector(down, func() []string { return []string{"g"} }, 200*time.Millisecond))
	if n, err := testutil.GatherAndCount(reg2, "kshare_share_group_lag_errors_total"); err != nil || n != 1 {
		t.Errorf("lag poll errors of a closed cluster: %d series, %v; want 1", n, err)
	}
}
