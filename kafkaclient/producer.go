package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MaxMessageBytes reads topic's max.message.bytes: its own setting, or the
// broker's message.max.bytes that it inherits. Both writers of records
// (`kshare produce` and the 'kafka' connector's sink) size their producer
// with it (ProducerLimits).
func MaxMessageBytes(ctx context.Context, adm *kadm.Client, topic string) (int32, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return 0, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return 0, err
	}
	if rc.Err != nil {
		return 0, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key != "max.message.bytes" {
			continue
		}
		n, err := strconv.ParseInt(c.MaybeValue(), 10, 32)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("max.message.bytes is %q", c.MaybeValue())
		}
		return int32(n), nil
	}
	return 0, errors.New("the broker did not return max.message.bytes")
}

// ProducerLimits sizes a producing client for a topic whose
// max.message.bytes is limit (0: unknown, franz-go's defaults stay).
// franz-go's own batch limit (about 1 MB) would refuse a larger record
// before the broker saw it, whatever the topic allows. A batch can be as
// large as the topic's limit (franz-go takes up to 1 GiB), and a request as
// large as its batch. franz-go takes no batch limit under 512 bytes: a
// topic that allows less gets 512, and the broker refuses what is larger
// than its limit.
func ProducerLimits(limit int32) []kgo.Opt {
	if limit <= 0 {
		return nil
	}
	batch := max(min(limit, 1<<30), 512)
	return []kgo.Opt{kgo.ProducerBatchMaxBytes(batch), kgo.BrokerMaxWriteBytes(max(batch, 100<<20))}
}
