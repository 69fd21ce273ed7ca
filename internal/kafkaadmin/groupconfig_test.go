package kafkaadmin_test

import (
	"errors"
	"fmt"
	"testing"

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

	// Read back through DescribeConfigs: the only proof the broker kept
	// what it acknowledged. Kafka applies a config change through its
	// metadata log, so a describe sent at once may still show the old
	// values (seen on 4.3.1): wait for the new ones.
	kafkatest.Eventually(t, "the configs set to show", func() error {
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
			return fmt.Errorf("described configs after set: share.auto.offset.reset=%q share.record.lock.duration.ms=%q (source GROUP_CONFIG)",
				got["share.auto.offset.reset"], got["share.record.lock.duration.ms"])
		}
		return nil
	})
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
