package sharegroup

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Name is the value of 'connector' that selects this connector.
const Name = "kafka-sharegroup"

func init() { table.RegisterConnector(kafkaConnector{}) }

type kafkaConnector struct{}

var (
	_ table.Connector        = kafkaConnector{}
	_ table.RecordIdentifier = kafkaConnector{}
)

// IdentifiesRecords: its batches' Ackers tell each row's record and share
// group (batchAck.RowOrigin), what an exactly-once sink stores.
func (kafkaConnector) IdentifiesRecords() {}

func (kafkaConnector) Name() string                  { return Name }
func (kafkaConnector) Options() *options.Set         { return Options }
func (kafkaConnector) Metadata() []table.MetadataKey { return Metadata }

// NewSource checks the options that need more than one key to check and
// prepares the members' configuration. It performs no I/O.
func (kafkaConnector) NewSource(b *table.Bound) (flow.Source, error) {
	if cf, ok := b.Format.(table.ChangelogFormat); ok {
		// A changelog is right only in the order it was written; a share
		// group hands a partition's records to its members in any order.
		return nil, table.Errorf(b.Def.Name, "format '%s' is a changelog, whose updates and deletes must be read in the order they were written, and a share group hands records out in no order; read its topic with 'connector' = 'kafka'", cf.Name())
	}
	v := b.Options
	cc, err := kafkaclient.NewConfig(v)
	if err != nil {
		return nil, err
	}
	s := &source{
		name:        b.Def.Name,
		client:      cc,
		maxPollRecs: v.Int32(OptMaxPollRecords),
		pollSet:     v.Has(OptMaxPollRecords),
		strict:      v.String(OptShareAcquireMode) == AcquireRecordLimit,
		modeSet:     v.Has(OptShareAcquireMode),
		group:       v.String(OptShareGroupID),
		parallelism: int(v.Int(OptParallelism)),
		parallelSet: v.Has(OptParallelism),
		startup:     v.String(OptStartupMode),
		guarantee:   v.String(OptDeliveryGuarantee),
		onError:     v.String(OptOnDecodeError),
		onEvalError: v.String(OptOnEvalError),
		deadTopic:   v.String(OptDeadLetterTopic),
		batchSize:   int(v.Int(kafkarecord.OptBatchSize)),
		unavailable: v.Duration(kafkaclient.OptBrokerUnavailableTimeout),
		schema:      &b.Def.Schema,
		bound:       b,
	}
	// A default poll size keeps within the broker's lock cap (pollDefault);
	// one the table sets may not, and Open warns.
	s.overLocks = s.pollSet && s.parallelism*int(s.maxPollRecs) > partitionRecordLocks
	if t := v.String(kafkaclient.OptTopic); t != "" {
		for _, name := range strings.Split(t, ";") {
			if name = strings.TrimSpace(name); name != "" {
				s.topics = append(s.topics, name)
			}
		}
	} else {
		// The pattern names whole topics, as Flink's topic-pattern does;
		// franz-go matches anywhere in the name, so anchor it.
		re, err := regexp.Compile("^(?:" + v.String(kafkaclient.OptTopicPattern) + ")$")
		if err != nil {
			return nil, fmt.Errorf("'%s' is not a regular expression: %w", kafkaclient.OptTopicPattern, err)
		}
		s.pattern = re
	}
	// The table layer checked the metadata columns against Metadata; a
	// key without a filler is a bug best found at CREATE TABLE.
	if err := kafkarecord.CheckColumns(&b.Def.Schema); err != nil {
		return nil, err
	}
	return s, nil
}
