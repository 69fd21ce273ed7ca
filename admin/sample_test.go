package admin_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
)

// TestSample: the latest values, an equal share from each partition; none
// from a topic without records; an unknown topic named as such.
func TestSample(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 2)
	var rs []*kgo.Record
	for i, v := range []string{"a0", "a1", "a2", "b0", "b1", "b2"} {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i / 3), Value: []byte(v)})
	}
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(kafkatest.Context(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	empty := kafkatest.Topic(t, addr, 1)
	adm := newAdmin(t, addr)
	ctx := kafkatest.Context(t)

	values, err := adm.Sample(ctx, topic, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range values {
		got = append(got, string(v))
	}
	slices.Sort(got)
	if want := []string{"a1", "a2", "b1", "b2"}; !slices.Equal(got, want) {
		t.Errorf("Sample(4) = %v, want the latest two of each partition %v", got, want)
	}
	if values, err := adm.Sample(ctx, empty, 0); err != nil || len(values) != 0 {
		t.Errorf("Sample of an empty topic = %d values, %v; want none and no error", len(values), err)
	}
	if _, err := adm.Sample(ctx, topic+"x", 0); !errors.Is(err, admin.ErrUnknownTopic) {
		t.Errorf("Sample of an unknown topic: %v, want %v", err, admin.ErrUnknownTopic)
	}
}
