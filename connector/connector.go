// Package connector is the kafka-sharegroup table source: a table whose rows
// are the records of Kafka topics, read through a share group (KIP-932) by
// 'source.parallelism' members, and acknowledged one record at a time.
//
// Delivery is at least once by default: a record is accepted only after the
// reader settled the batch holding its rows (table.Acker.Done); a batch that
// was not delivered is released at once, so another member gets its records
// without waiting for their locks to expire. The package knows nothing of
// JSON or SQL: the table's format decodes values, the query layer settles.
package connector

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Name is the value of 'connector' that selects this connector.
const Name = "kafka-sharegroup"

func init() { table.RegisterConnector(kafkaConnector{}) }

type kafkaConnector struct{}

var _ table.Connector = kafkaConnector{}

func (kafkaConnector) Name() string                  { return Name }
func (kafkaConnector) Options() *options.Set         { return Options }
func (kafkaConnector) Metadata() []table.MetadataKey { return Metadata }

// pollRecords is the default 'properties.max.poll.records' of a stream of
// parallelism members: 500, less when that many members' polls would
// exceed the broker's per-partition lock cap on one partition.
func pollRecords(parallelism int) int32 {
	return int32(max(1, min(defaultMaxPollRecords, partitionRecordLocks/parallelism)))
}

// NewSource checks the options that need more than one key to check and
// prepares the members' configuration. It performs no I/O.
func (kafkaConnector) NewSource(b *table.Bound) (table.Source, error) {
	v := b.Options
	cc, err := newClientConfig(v)
	if err != nil {
		return nil, err
	}
	cc.discovery = v.Duration(OptDiscoveryInterval)
	s := &source{
		name:        b.Def.Name,
		client:      cc,
		group:       v.String(OptShareGroupID),
		parallelism: int(v.Int(OptParallelism)),
		startup:     v.String(OptStartupMode),
		guarantee:   v.String(OptDeliveryGuarantee),
		onError:     v.String(OptOnDecodeError),
		batchSize:   defaultBatchSize,
		unavailable: v.Duration(OptBrokerUnavailableTimeout),
		schema:      &b.Def.Schema,
		format:      b.Format,
		bound:       b,
	}
	if s.parallelism < 1 {
		s.parallelism = 1
	}
	if v.Has(OptMaxPollRecords) {
		s.overLocks = s.parallelism*int(cc.maxPollRecs) > partitionRecordLocks
	} else {
		cc.maxPollRecs = pollRecords(s.parallelism)
	}
	if n := v.Int(OptBatchSize); n > 0 {
		s.batchSize = int(n)
	}
	if t := v.String(OptTopic); t != "" {
		for _, name := range strings.Split(t, ";") {
			if name = strings.TrimSpace(name); name != "" {
				s.topics = append(s.topics, name)
			}
		}
	} else {
		// The pattern names whole topics, as Flink's topic-pattern does;
		// franz-go matches anywhere in the name, so anchor it.
		re, err := regexp.Compile("^(?:" + v.String(OptTopicPattern) + ")$")
		if err != nil {
			return nil, fmt.Errorf("'%s' is not a regular expression: %w", OptTopicPattern, err)
		}
		s.pattern = re
	}
	s.physCols, s.physIdx = b.Def.Schema.Physical()
	for i, c := range b.Def.Schema.Columns {
		if !c.Metadata {
			continue
		}
		fill, err := metaFiller(c.Key())
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", c.Name, err)
		}
		s.meta = append(s.meta, metaCol{idx: i, fill: fill})
	}
	// The format says now, at CREATE TABLE, whether it can decode these
	// columns; each member makes its own decoder at Open.
	if _, err := b.Format.NewDecoder(s.physCols, v); err != nil {
		return nil, err
	}
	return s, nil
}
