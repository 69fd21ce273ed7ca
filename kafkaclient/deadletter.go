package kafkaclient

// This file is the one producer of dead letters: a record that a table could
// not take is produced, with its key, value and headers, to a topic of its
// own, with kshare.* headers that say why and where it came from. Two
// tables produce them: a kafka-sharegroup table, of the records it reads
// that do not decode or whose rows cannot be evaluated
// ('scan.dead-letter.topic'), and a 'kafka' sink, of the records its topic
// refuses ('sink.dead-letter.topic'). What becomes of the record once its
// dead letter is answered (accepted, released, a row written or failed) is
// the caller's.
//
// Kafka 4.4 adds a broker-side dead-letter queue for share groups (KIP-1191,
// the group config errors.deadletterqueue.topic.name): the broker itself
// copies records that are rejected or reach the delivery limit. When kshare
// can count on it, the share-group source's 'dead-letter' can become a
// reject that the broker turns into a dead letter, with the broker's own
// headers; this producer is then needed only where the broker lacks it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/table"
)

// Headers that a dead letter carries besides the original record's, which
// it keeps (a header the original already had under one of these names
// comes first; readers take the last). Values are UTF-8 text; numbers in
// decimal.
const (
	// HeaderError is why the table could not take the record: what the
	// format said of a value it could not decode, why a query could not
	// evaluate its row ('scan.on-eval-error'), or why the sink topic
	// refused it.
	HeaderError = "kshare.error"
	// HeaderTopic is the topic the record was read from, or the sink topic
	// that refused it.
	HeaderTopic = "kshare.topic"
	// HeaderPartition and HeaderOffset say where a record that was read
	// is.
	HeaderPartition = "kshare.partition"
	HeaderOffset    = "kshare.offset"
	// HeaderTimestamp is a read record's timestamp, in milliseconds since
	// the epoch; the dead letter's own is when it was produced.
	HeaderTimestamp = "kshare.timestamp"
	// HeaderDeliveryCount is how many times the share group had handed a
	// read record out, the delivery that dead-lettered it included.
	HeaderDeliveryCount = "kshare.delivery-count"
	// HeaderTable names the table that read or wrote the record, and
	// HeaderGroup the share group that read it.
	HeaderTable = "kshare.table"
	HeaderGroup = "kshare.group"
)

// ErrNoTopic is the cause of TopicLimit's error for a topic that does not
// exist.
var ErrNoTopic = errors.New("no such topic")

// TopicLimit checks that topic exists on the cluster adm reaches, and
// returns its max.message.bytes (0: unknown, and franz-go's default batch
// limit applies). A missing topic is ErrNoTopic; the broker's error about
// the topic or the request's comes wrapped with the topic's name.
func TopicLimit(ctx context.Context, adm *kadm.Client, topic string) (int32, error) {
	tds, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reading topic '%s': %w", topic, err)
	}
	td, ok := tds[topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return 0, ErrNoTopic
	case td.Err != nil:
		return 0, fmt.Errorf("topic '%s': %w", topic, td.Err)
	}
	limit, err := MaxMessageBytes(ctx, adm, topic)
	if err != nil {
		// Not fatal: franz-go's default batch limit applies, and a record
		// too large for it fails with a message that says so.
		return 0, nil
	}
	return limit, nil
}

// DeadLetterTopic is a table's dead-letter topic and what a dead letter
// says of the table.
type DeadLetterTopic struct {
	// Table is the table's name, for messages and the kshare.table header.
	Table string
	// Group is the share group that reads the table, for the kshare.group
	// header; "" for a table that no share group reads.
	Group string
	// Topic is the dead-letter topic, which Key (an option key) names.
	Topic, Key string
	// Seeds are the brokers of the table's cluster, for messages.
	Seeds []string
}

// Check is a table's check of its dead-letter topic before it reads or
// writes anything: the topic exists (a missing one is an error naming it,
// rather than records failed or released over and over), and its
// max.message.bytes, which Open takes, sizes the producer.
func (t DeadLetterTopic) Check(ctx context.Context, adm *kadm.Client) (limit int32, err error) {
	limit, err = TopicLimit(ctx, adm, t.Topic)
	switch {
	case errors.Is(err, ErrNoTopic):
		return 0, table.Errorf(t.Table, "dead-letter topic '%s' ('%s') not found on %s; create it first", t.Topic, t.Key, strings.Join(t.Seeds, ","))
	case err != nil:
		return 0, table.Errorf(t.Table, "'%s': %w", t.Key, err)
	}
	return limit, nil
}

// DeadLetters produces one table's dead letters with a client of its own.
type DeadLetters struct {
	t  DeadLetterTopic
	cl *kgo.Client
}

// Open makes the producer of t's dead letters; limit is the topic's
// max.message.bytes (Check; 0: unknown). opts are the table's client
// options (Config.Opts) and whatever its producer adds (a broker health,
// a delivery timeout, a partitioner); Open adds what every dead letter
// needs.
func (t DeadLetterTopic) Open(limit int32, opts ...kgo.Opt) (*DeadLetters, error) {
	o := append(slices.Clip(opts),
		// The original is settled on this acknowledgement: it must be
		// durable (acks=all, franz-go's default, said here because the
		// promise rests on it).
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(t.Topic),
		// Nobody flushes the producer after a dead letter: it must not
		// linger.
		kgo.ProducerLinger(0),
	)
	o = append(o, ProducerLimits(limit)...)
	cl, err := kgo.NewClient(o...)
	if err != nil {
		return nil, table.Errorf(t.Table, "kafka client of the dead-letter topic: %w", err)
	}
	return &DeadLetters{t: t, cl: cl}, nil
}

// Topic is the dead-letter topic.
func (d *DeadLetters) Topic() string { return d.t.Topic }

// ProduceRead produces r, a record the table read and could not take, with
// the headers that say why (why) and where it is (its topic, partition,
// offset, timestamp and delivery count). answered is called once the
// broker acknowledged the dead letter (err nil) or it failed.
func (d *DeadLetters) ProduceRead(ctx context.Context, r *kgo.Record, why error, answered func(error)) {
	h := d.headers(r, why, 8)
	add := func(k, v string) { h = append(h, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	add(HeaderTopic, r.Topic)
	add(HeaderPartition, strconv.FormatInt(int64(r.Partition), 10))
	add(HeaderOffset, strconv.FormatInt(r.Offset, 10))
	add(HeaderTimestamp, strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	add(HeaderDeliveryCount, strconv.FormatInt(int64(r.DeliveryCount()), 10))
	d.produce(ctx, r, h, answered)
}

// ProduceRefused produces r, a record that the topic it was written to
// (r.Topic) refused, with the headers that say why (why) and which topic.
// answered is called as ProduceRead's is.
func (d *DeadLetters) ProduceRefused(ctx context.Context, r *kgo.Record, why error, answered func(error)) {
	h := d.headers(r, why, 3)
	h = append(h, kgo.RecordHeader{Key: HeaderTopic, Value: []byte(r.Topic)})
	d.produce(ctx, r, h, answered)
}

// headers are r's headers and the kshare.error one, with room for more.
func (d *DeadLetters) headers(r *kgo.Record, why error, more int) []kgo.RecordHeader {
	h := make([]kgo.RecordHeader, 0, len(r.Headers)+more)
	h = append(h, r.Headers...)
	return append(h, kgo.RecordHeader{Key: HeaderError, Value: []byte(why.Error())})
}

// produce sends r's key and value with headers h and the table's own.
func (d *DeadLetters) produce(ctx context.Context, r *kgo.Record, h []kgo.RecordHeader, answered func(error)) {
	h = append(h, kgo.RecordHeader{Key: HeaderTable, Value: []byte(d.t.Table)})
	if d.t.Group != "" {
		h = append(h, kgo.RecordHeader{Key: HeaderGroup, Value: []byte(d.t.Group)})
	}
	dl := &kgo.Record{Key: r.Key, Value: r.Value, Headers: h}
	d.cl.Produce(ctx, dl, func(_ *kgo.Record, err error) { answered(err) })
}

// Flush waits, within ctx, for the dead letters on the wire, so that a
// closing reader settles their records as their produce went.
func (d *DeadLetters) Flush(ctx context.Context) error { return d.cl.Flush(ctx) }

// Close stops the client; what is still buffered fails (kgo.ErrClientClosed).
// Without a broker it may take seconds: a caller that must not wait runs it
// in a goroutine it owns.
func (d *DeadLetters) Close() { d.cl.Close() }
