package kafka

// This file is the 'upsert-kafka' connector, Flink's: a table whose topic
// holds the latest row of each PRIMARY KEY, written from an updating
// query's changes and read as a changelog (upsertsource.go). INSERT INTO it writes each +I and +U as a record keyed
// by the row's key, and each -D as a tombstone (the key with no value); a
// -U is not written, the +U after it replaces the row. A compacted topic
// then keeps one record per key.

import (
	"errors"
	"slices"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// UpsertName is the value of 'connector' that selects the upsert-kafka
// connector.
const UpsertName = "upsert-kafka"

// UpsertConnector is the 'upsert-kafka' connector, registered with the
// package.
var UpsertConnector table.Sinker = upsertConnector{}

func init() { table.RegisterConnector(UpsertConnector) }

type upsertConnector struct{}

var (
	_ table.Sinker             = upsertConnector{}
	_ table.KeyedConnector     = upsertConnector{}
	_ table.ChangelogConnector = upsertConnector{}
	_ flow.ChangelogSink       = (*upsertSink)(nil)
	_ flow.KeyedSink           = (*upsertSink)(nil)
)

func (upsertConnector) Name() string                  { return UpsertName }
func (upsertConnector) Options() *options.Set         { return UpsertOptions }
func (upsertConnector) Metadata() []table.MetadataKey { return nil }
func (upsertConnector) TakesPrimaryKey()              {}

// sinkOption is the sink option of key k (sinkOptions declares them).
func sinkOption(k string) options.Option {
	i := slices.IndexFunc(sinkOptions, func(o options.Option) bool { return o.Key == k })
	return sinkOptions[i]
}

// UpsertOptions are the keys of an 'upsert-kafka' table, besides
// 'connector' and 'value.format' (or 'format'), which the table layer
// reads: Flink's.
var UpsertOptions = &options.Set{
	Owner: "connector 'upsert-kafka'",
	Options: slices.Concat([]options.Option{
		described(kafkaclient.Topic, "The topic written and read: one. Make it compacted (cleanup.policy=compact: CREATE TOPIC t WITH ('cleanup.policy' = 'compact')) "+
			"so that it keeps the latest record of each key."),
		kafkaclient.Bootstrap,
	}, kafkaclient.Client, kafkaclient.Refused, []options.Option{
		func() options.Option {
			o := sinkOption(OptKeyFormat)
			o.Required = true
			o.Description = "Format of the record key: the PRIMARY KEY columns, in the key's order (a registered format that writes, such as 'json' or 'raw')."
			return o
		}(),
		sinkOption(OptValueFieldsInclude),
		{Key: OptBoundedMode, Type: options.Enum, Default: ModeUnbounded, Allowed: []string{ModeUnbounded, ModeLatest},
			Description: "Where a query of the table ends: 'unbounded' never (it reads the topic from its start, then waits for new records until stopped); " +
				"'latest-offset' at each partition's end when the query opens (the table as it is then)."},
		sinkOption(OptSinkUnavailable),
		sinkOption(OptCompression),
		{Key: "sink.buffer-flush.max-rows", Type: options.Int, Min: 0, HasMin: true,
			Description: "Accepted so that Flink's DDL runs as it is; kshare writes each batch of changes at once and waits for its acknowledgement, so nothing is buffered to flush."},
		{Key: "sink.buffer-flush.interval", Type: options.Duration, BareMillis: true,
			Description: "Accepted so that Flink's DDL runs as it is; see 'sink.buffer-flush.max-rows'."},
		isolationLevel,
		{Key: OptKeyFields, Refused: "the key is the table's PRIMARY KEY (...) NOT ENFORCED"},
		{Key: OptSinkPartitioner, Refused: "a key's records go to the partition of its hash, so that they stay in order and compaction keeps the latest"},
		sinkOption(OptDeliveryGuarantee),
		sinkOption(OptTransactionalIDPrefix),
		{Key: "sink.parallelism", Refused: "an INSERT writes from one producer per job"},
		{Key: OptTopicPattern, Refused: "an upsert-kafka table writes one topic: give it in 'topic'"},
	}),
	Validate: validateUpsert,
}

// validateUpsert checks the rules between keys: the cluster's
// (kafkaclient.Validate) and the delivery guarantee's.
func validateUpsert(v options.Values) error {
	var errs options.Errors
	if err := kafkaclient.Validate(v); err != nil {
		es, ok := err.(options.Errors)
		if !ok {
			return err
		}
		errs = append(errs, es...)
	}
	if errs = append(errs, validateGuarantee(v)...); len(errs) > 0 {
		return errs
	}
	return nil
}

// NewSource reads the table's topic from its start as a changelog (see
// upsertsource.go); a table without a PRIMARY KEY is refused, as Flink does
// at CREATE TABLE.
func (upsertConnector) NewSource(b *table.Bound) (flow.Source, error) {
	if b.Def.PrimaryKey == nil {
		return nil, errNoUpsertKey
	}
	v := b.Options
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return nil, err
	}
	opts = readIsolation(v, opts)
	topics := splitFields(v.String(OptTopic))
	if len(topics) != 1 {
		return nil, table.Errorf(options.Cut(b.Def.Name), "an 'upsert-kafka' table reads one topic ('%s' is '%s')", OptTopic, options.Cut(v.String(OptTopic)))
	}
	s := &source{bound: b, opts: opts, topics: topics, startup: ModeEarliest, bounded: v.String(OptBoundedMode),
		timeout: v.Duration(kafkaclient.OptRequestTimeoutMs), seeds: v.String(kafkaclient.OptBootstrapServers)}
	return &upsertSource{source: s, key: b.Def.KeyIndexes()}, nil
}

// ReadsChanges makes the connector a table.ChangelogConnector: a query
// over its table gets the rows' inserts, updates and deletes.
func (upsertConnector) ReadsChanges() {}

// NewSink is the kafka sink keyed by the table's PRIMARY KEY, taking an
// updating query's changes.
func (upsertConnector) NewSink(b *table.Bound) (flow.Sink, error) {
	v := b.Options
	name := options.Cut(b.Def.Name)
	if b.Def.PrimaryKey == nil {
		return nil, table.Errorf(name, "%w", errNoUpsertKey)
	}
	topics := splitFields(v.String(OptTopic))
	if len(topics) != 1 {
		return nil, table.Errorf(name, "an 'upsert-kafka' table writes one topic ('%s' is '%s')", OptTopic, options.Cut(v.String(OptTopic)))
	}
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return nil, err
	}
	s := &sink{table: name, topic: topics[0], opts: opts, timeout: v.Duration(kafkaclient.OptRequestTimeoutMs),
		unavailable: v.Duration(OptSinkUnavailable), seeds: splitList(v.String(kafkaclient.OptBootstrapServers), ","), ts: -1, headers: -1}
	s.guarantee(v)
	s.compression = compressionCodecs[v.String(OptCompression)]
	phys, _ := b.Def.Schema.Physical()
	s.cols = append(s.cols, phys...)
	key := b.Def.KeyIndexes()
	if err := s.encoders(b, phys, key); err != nil {
		return nil, err
	}
	if _, ok := s.value.(table.ChangeEncoder); ok {
		return nil, table.Errorf(name, "'value.format' '%s' writes changes, and an 'upsert-kafka' table's values are rows (the latest of each key); give it a format of rows, such as 'json', or write the changelog to a 'kafka' table", b.Format.Name())
	}
	return &upsertSink{changelogSink: changelogSink{s}, key: key}, nil
}

var errNoUpsertKey = errors.New("an 'upsert-kafka' table needs a PRIMARY KEY (...) NOT ENFORCED: its columns are each record's key, by which the topic keeps a row's latest value")

// upsertSink is a bound upsert-kafka table. Its changes are written as the
// file's comment says by changelogSink's writer, which does so because the
// table's value format writes rows, not changes.
type upsertSink struct {
	changelogSink
	key []int // positions in cols of the PRIMARY KEY
}

func (u *upsertSink) PrimaryKey() []int { return u.key }
