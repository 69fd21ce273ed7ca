package kafka

// This file is the connector's write side: INSERT INTO a 'kafka' table.

import (
	"context"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

var _ table.Sinker = kafkaConnector{}

// writable are the metadata keys a persisted (not VIRTUAL) metadata
// column may write, as Flink's kafka sink allows.
var writable = []string{"timestamp", "headers"}

// testSinkOpts are added to every writer's producing client by this
// package's tests (a dialer they can cut).
var testSinkOpts []kgo.Opt

// NewSink checks what a write needs beyond the keys' own checks: one topic,
// key columns that exist, metadata columns that can be written, formats
// that can encode the columns. It performs no I/O beyond reading the TLS
// files the options name.
func (kafkaConnector) NewSink(b *table.Bound) (flow.Sink, error) {
	v := b.Options
	name := options.Cut(b.Def.Name)
	topics := splitFields(v.String(OptTopic))
	if len(topics) != 1 {
		return nil, table.Errorf(name, "INSERT INTO a 'kafka' table needs one topic in '%s' (it has '%s'); '%s' and lists are for reading", OptTopic, options.Cut(v.String(OptTopic)), OptTopicPattern)
	}
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return nil, err
	}
	s := &sink{table: name, topic: topics[0], opts: opts, timeout: v.Duration(kafkaclient.OptRequestTimeoutMs),
		unavailable: v.Duration(OptSinkUnavailable), seeds: splitList(v.String(kafkaclient.OptBootstrapServers), ","), deadTopic: v.String(OptSinkDeadLetter),
		ts: -1, headers: -1}
	s.guarantee(v)
	s.compression = compressionCodecs[v.String(OptCompression)]
	switch v.String(OptSinkPartitioner) {
	case PartitionerFixed:
		s.opts = append(s.opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	case PartitionerRoundRobin:
		s.opts = append(s.opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	}
	phys, _ := b.Def.Schema.Physical()
	s.cols = append(s.cols, phys...)
	for _, c := range b.Def.Schema.Columns {
		if !c.Metadata || c.Virtual {
			continue
		}
		switch c.Key() {
		case "timestamp":
			s.ts = len(s.cols)
		case "headers":
			s.headers = len(s.cols)
		default:
			return nil, table.Errorf(name, "metadata column %s (key '%s') cannot be written; declare it VIRTUAL (writable keys: %s)", types.QuoteIdent(c.Name), c.Key(), strings.Join(writable, ", "))
		}
		s.cols = append(s.cols, c)
	}
	var keyIdx []int
	if v.Has(OptKeyFields) {
		for _, f := range splitFields(v.String(OptKeyFields)) {
			i := findColumn(phys, f)
			if i < 0 {
				return nil, table.Errorf(name, "'%s' names column %s, which is not a physical column of the table", OptKeyFields, types.QuoteIdent(f))
			}
			keyIdx = append(keyIdx, i)
		}
	}
	if err := s.encoders(b, phys, keyIdx); err != nil {
		return nil, err
	}
	if _, ok := s.value.(table.ChangeEncoder); ok {
		return changelogSink{s}, nil
	}
	return s, nil
}

// changelogSink is a kafka sink that takes an updating query's changes:
// a 'kafka' table in a changelog format (debezium-json), which writes each
// as a record of its kind, or, inside upsertSink, an 'upsert-kafka' table.
// Both write through writer.write, which tells the two apart by the value
// format, so they share this type and its writer.
type changelogSink struct{ *sink }

var _ flow.ChangelogSink = changelogSink{}

func (changelogSink) TakesChanges() {}

func (c changelogSink) Open(ctx context.Context) (flow.Writer, error) {
	w, err := c.sink.Open(ctx)
	if err != nil {
		return nil, err
	}
	return changelogWriter{w.(*writer)}, nil
}

// changelogWriter writes changes: in the table's changelog format, or as
// an upsert-kafka table's keyed records and tombstones.
type changelogWriter struct{ *writer }

var _ flow.ChangelogWriter = changelogWriter{}

func (w changelogWriter) WriteChanges(ctx context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error {
	return w.write(ctx, rec, kinds, done)
}

// keyedLayout is how a keyed table's physical columns are split between
// the record's key and its value: the key's columns (keyIdx of phys, in
// 'key.format' with keyOpts) and the value's (all of them, unless
// 'value.fields-include' is 'EXCEPT_KEY'). The sinks write by it and the
// upsert-kafka source reads by it.
type keyedLayout struct {
	keyFormat  table.Format
	keyOpts    options.Values
	keyCols    []types.Column
	valueCols  []types.Column
	valueIdx   []int // positions in phys of valueCols
	exceptKeys bool
}

func newKeyedLayout(b *table.Bound, phys []types.Column, keyIdx []int) (*keyedLayout, error) {
	v := b.Options
	l := &keyedLayout{valueCols: phys, valueIdx: indexes(len(phys))}
	if len(keyIdx) == 0 {
		return l, nil
	}
	inKey := map[int]bool{}
	for _, i := range keyIdx {
		l.keyCols = append(l.keyCols, phys[i])
		inKey[i] = true
	}
	kf, err := table.LookupFormat(v.String(OptKeyFormat))
	if err != nil {
		return nil, err
	}
	l.keyFormat, l.keyOpts = kf, v
	if kf != b.Format {
		// The key format's own keys were not in the WITH clause's sets:
		// it reads and writes with its defaults.
		if l.keyOpts, err = options.Parse(nil, nil, kf.Options()); err != nil {
			return nil, err
		}
	}
	if v.String(OptValueFieldsInclude) == IncludeExceptKey {
		l.exceptKeys = true
		l.valueCols, l.valueIdx = nil, nil
		for i, c := range phys {
			if !inKey[i] {
				l.valueCols, l.valueIdx = append(l.valueCols, c), append(l.valueIdx, i)
			}
		}
	}
	return l, nil
}

// encoders makes s's key encoder, of the columns keyIdx of phys in
// 'key.format' (none when keyIdx is empty), and its value encoder, of the
// columns 'value.fields-include' says in the table's format.
func (s *sink) encoders(b *table.Bound, phys []types.Column, keyIdx []int) error {
	l, err := newKeyedLayout(b, phys, keyIdx)
	if err != nil {
		return err
	}
	if len(keyIdx) > 0 {
		s.keyIdx = keyIdx
		if s.key, err = table.NewEncoder(l.keyFormat, l.keyCols, l.keyOpts); err != nil {
			return table.Errorf(s.table, "'%s': %w", OptKeyFormat, err)
		}
	}
	s.valueIdx = l.valueIdx
	if s.value, err = table.NewEncoder(b.Format, l.valueCols, b.Options); err != nil {
		return table.Errorf(s.table, "%w", err)
	}
	return nil
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func findColumn(cols []types.Column, name string) int {
	for i, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

type sink struct {
	table, topic string
	opts         []kgo.Opt
	seeds        []string
	timeout      time.Duration
	unavailable  time.Duration // 'sink.broker-unavailable-timeout'; 0: forever
	deadTopic    string        // 'sink.dead-letter.topic'; validateSink allows it only with 'dead-letter'
	none         bool          // sink.delivery-guarantee 'none'
	txnID        string        // 'exactly-once': the producer's transactional.id; '' otherwise
	compression  kgo.CompressionCodec
	cols         []types.Column
	key, value   table.Encoder
	keyIdx       []int // columns of the key, in cols
	valueIdx     []int // columns of the value, in cols
	ts, headers  int   // metadata columns in cols; -1 when absent
}

func (s *sink) Columns() []types.Column { return s.cols }

// guarantee sets the sink up for its 'sink.delivery-guarantee': 'none', or
// 'exactly-once' with the transactional id of its
// 'sink.transactional-id-prefix'.
func (s *sink) guarantee(v options.Values) {
	switch v.String(OptDeliveryGuarantee) {
	case GuaranteeNone:
		s.none = true
	case GuaranteeExactlyOnce:
		prefix := v.String(OptTransactionalIDPrefix)
		if prefix == "" {
			prefix = "kshare-" + s.topic
		}
		s.txnID = transactionalID(prefix)
	}
}

// Open checks that the topic (and the dead-letter topic) exists and reads
// its max.message.bytes, with a client of its own: a producing client's
// batch limit is set when it is created.
func (s *sink) Open(ctx context.Context) (flow.Writer, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+time.Second)
	defer cancel()
	admCl, err := kgo.NewClient(s.opts...)
	if err != nil {
		return nil, table.Errorf(s.table, "kafka client: %w", err)
	}
	adm := kadm.NewClient(admCl)
	limit, err := s.check(ctx, adm)
	var deadLimit int32
	if err == nil && s.deadTopic != "" {
		deadLimit, err = s.deadLetterTopic().Check(ctx, adm)
	}
	admCl.Close()
	if err != nil {
		return nil, err
	}
	w := &writer{sink: s, limit: limit, health: kafkaclient.NewHealth(s.seeds), stop: make(chan struct{}), flying: map[*pending]struct{}{},
		flushes: make(chan struct{}, 1), txn: txnState{id: s.txnID}}
	w.flushCtx, w.flushCancel = context.WithCancel(context.Background())
	if w.cl, err = s.producer(limit, w.health); err != nil {
		return nil, err
	}
	if s.deadTopic != "" {
		if w.dead, err = s.deadLetterTopic().Open(deadLimit, s.clientOpts(w.health)...); err != nil {
			w.cl.Close()
			return nil, err
		}
	}
	w.watching.Go(w.watch)
	w.watching.Go(w.flush)
	return w, nil
}

// deadLetterTopic is 'sink.dead-letter.topic', as kafkaclient checks it
// and heads its dead letters.
func (s *sink) deadLetterTopic() kafkaclient.DeadLetterTopic {
	return kafkaclient.DeadLetterTopic{Table: s.table, Topic: s.deadTopic, Key: OptSinkDeadLetter, Seeds: s.seeds}
}

// clientOpts are the options of the sink's producing clients, of its topic
// and of its dead-letter topic: the table's client (with its partitioner),
// its compression, and h, which their contacts with the brokers report to.
//
// franz-go retries a produce without end (no record delivery timeout,
// which would also count from a record's own timestamp, old when a
// 'timestamp' column copies the source's): during an outage the rows wait,
// and watch fails them past 'sink.broker-unavailable-timeout'.
func (s *sink) clientOpts(h *kafkaclient.Health) []kgo.Opt {
	opts := append(append([]kgo.Opt{}, s.opts...), kgo.ProducerBatchCompression(s.compression), h.Opt())
	return append(opts, testSinkOpts...)
}

// producer is the client that produces to the sink topic, whose
// max.message.bytes is limit (0: unknown), reporting its contacts with the
// brokers to h.
func (s *sink) producer(limit int32, h *kafkaclient.Health) (*kgo.Client, error) {
	// acks=all and idempotence are franz-go's defaults; they are said
	// here because the delivery promise rests on them.
	// The linger is franz-go's; the writer ends it by a flush once a
	// Write's records are all buffered (writer.flush).
	opts := append(s.clientOpts(h), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(s.topic))
	if s.txnID != "" {
		opts = append(opts, kgo.TransactionalID(s.txnID))
	}
	opts = append(opts, kafkaclient.ProducerLimits(limit)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, table.Errorf(s.table, "kafka client: %w", err)
	}
	return cl, nil
}

// compressionCodecs are 'properties.compression.type”s values.
var compressionCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}
