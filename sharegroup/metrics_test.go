package sharegroup_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/sharegroup"
)

// TestMetrics: the collector counts the work of open and of closed streams.
func TestMetrics(t *testing.T) {
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(30)...)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(sharegroup.Collector()); err != nil {
		t.Fatal(err)
	}
	st := open(t, newSource(t, addr, topic, group, nil), tabletest.CheckedAlloc(t))
	r := newReader(t, st)
	r.until(kafkatest.Context(t), "all records", func() bool { return len(r.seen) == 30 })
	st.Close()
	// Only this test's group: other tests of the package count too.
	want := `
# HELP kshare_source_rows_total Rows the records decoded into.
# TYPE kshare_source_rows_total counter
kshare_source_rows_total{group="` + group + `",table="ids"} 30
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kshare_source_rows_total"); err != nil {
		// Other tests' groups appear too; compare only ours.
		mfs, _ := reg.Gather()
		found := false
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "group" && l.GetValue() == group && mf.GetName() == "kshare_source_rows_total" {
						found = true
						if m.GetCounter().GetValue() != 30 {
							t.Errorf("rows_total for %s = %v, want 30", group, m.GetCounter().GetValue())
						}
					}
				}
			}
		}
		if !found {
			t.Errorf("no kshare_source_rows_total for group %s: %v", group, err)
		}
	}
	if n, err := testutil.GatherAndCount(reg, "kshare_source_acks_total"); err != nil || n == 0 {
		t.Errorf("kshare_source_acks_total: %d series, %v", n, err)
	}
}
