package kafkaadmin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/internal/kafkaadmin"
	"github.com/kshare/kshare/internal/kafkatest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestSetShareGroupConfig(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, addr)
	group := kafkatest.GroupName(t)
	ctx := kafkatest.Context(t)

	err := kafkaadmin.SetShareGroupConfig(ctx, cl, group, map[string]string{
		"share.auto.offset.reset": "earliest",
		// 1000 is the real test broker's floor; kfake accepts it too.
		"share.record.lock.duration.ms": "1000",
	})
	if err != nil {
		t.Fatalf("setting valid configs: %v", err)
	}

	// Read back through DescribeConfigs at once: the only proof the
	// broker kept what it acknowledged, and SetShareGroupConfig returns
	// only once the broker has applied it (Kafka applies a config change
	// through its metadata log, so a describe sent right after the alter
	// alone may still show the old values).
	cs, err := kafkaadmin.DescribeGroupConfigs(ctx, cl, group)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range cs {
		if c.Source == kmsg.ConfigSourceGroupConfig {
			got[c.Name] = c.Value
		}
	}
	if got["share.auto.offset.reset"] != "earliest" || got["share.record.lock.duration.ms"] != "1000" {
		t.Errorf("described configs after set: share.auto.offset.reset=%q share.record.lock.duration.ms=%q (source GROUP_CONFIG)",
			got["share.auto.offset.reset"], got["share.record.lock.duration.ms"])
	}
}

func TestSetShareGroupConfigErrors(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	cl := kafkatest.Client(t, addr)
	group := kafkatest.GroupName(t)
	ctx := kafkatest.Context(t)

	err := kafkaadmin.SetShareGroupConfig(ctx, cl, group, map[string]string{"no.such.config": "1"})
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("unknown config key: got %v, want an error wrapping %v", err, kerr.InvalidConfig)
	}
	t.Logf("unknown key: %v", err)
	// kfake checks config names but not values; only Kafka rejects this.
	if kafkatest.Real() {
		err = kafkaadmin.SetShareGroupConfig(ctx, cl, group, map[string]string{"share.auto.offset.reset": "sometimes"})
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("bad value: got %v, want an error wrapping %v", err, kerr.InvalidConfig)
		}
		t.Logf("bad value: %v", err)
	}
	if err := kafkaadmin.SetShareGroupConfig(ctx, cl, group, nil); !errors.Is(err, kafkaadmin.ErrNoConfig) {
		t.Errorf("empty config: got %v, want %v", err, kafkaadmin.ErrNoConfig)
	}
	if err := kafkaadmin.SetShareGroupConfig(ctx, cl, "", map[string]string{"share.auto.offset.reset": "earliest"}); err == nil {
		t.Errorf("empty group name: got no error")
	}
}

// lagging is a broker that takes a group config change at once but
// describes the old value for its first stale describes, as Kafka does
// for a moment while it applies the change from its metadata log.
type lagging struct {
	stale     int
	describes int
	value     string
}

func (l *lagging) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
		for _, res := range r.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	case *kmsg.DescribeConfigsRequest:
		l.describes++
		v := "latest"
		if l.describes > l.stale {
			v = l.value
		}
		resp := kmsg.NewPtrDescribeConfigsResponse()
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, r.Resources[0].ResourceName
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value = "share.auto.offset.reset", &v
		rr.Configs = append(rr.Configs, c)
		resp.Resources = append(resp.Resources, rr)
		return resp, nil
	}
	return nil, fmt.Errorf("unexpected request %T", req)
}

// SetShareGroupConfig returns only once the broker describes the values
// set: a consumer that joined while it still described the old ones would
// start where they say.
func TestSetShareGroupConfigWaitsUntilApplied(t *testing.T) {
	l := &lagging{stale: 3, value: "earliest"}
	set := map[string]string{"share.auto.offset.reset": "earliest"}
	if err := kafkaadmin.SetShareGroupConfig(context.Background(), l, "g", set); err != nil {
		t.Fatal(err)
	}
	if l.describes != 4 {
		t.Errorf("returned after %d describes, want 4 (3 showing the old value, then the new)", l.describes)
	}

	// A broker that never shows the change: an error that says so when
	// the caller's deadline passes, not a silent success.
	never := &lagging{stale: 1 << 30, value: "earliest"}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := kafkaadmin.SetShareGroupConfig(ctx, never, "g", set)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still describes [share.auto.offset.reset] as before") {
		t.Errorf("a change never applied gave %v, want a deadline error naming the key", err)
	}
}
