package connector

// This file is 'scan.on-decode-error' = 'dead-letter': a record that the
// table's format cannot decode is produced to 'scan.dead-letter.topic', and
// accepted only once that produce is acknowledged (acks=all). A produce that
// fails releases the record, so it is delivered again, never lost.
//
// Kafka 4.4 adds a broker-side dead-letter queue for share groups (KIP-1191,
// the group config errors.deadletterqueue.topic.name): the broker itself
// copies records that are rejected or reach the delivery limit. When kshare
// can count on it, 'dead-letter' can become a reject that the broker turns
// into a dead letter, with the broker's own headers; the producing client
// here is then needed only where the broker lacks it. Keeping the policy in
// this file, behind deadLetter, is what leaves that choice open.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Headers that a dead letter carries besides the original record's, which
// it keeps (a header the original already had under one of these names
// comes first; readers take the last). Values are UTF-8 text; numbers in
// decimal.
const (
	// HeaderError is why the record did not decode, as the format said,
	// or why a query could not evaluate its row ('scan.on-eval-error').
	HeaderError = "kshare.error"
	// HeaderTopic, HeaderPartition and HeaderOffset say where the original
	// record is.
	HeaderTopic     = "kshare.topic"
	HeaderPartition = "kshare.partition"
	HeaderOffset    = "kshare.offset"
	// HeaderTimestamp is the original record's timestamp, in milliseconds
	// since the epoch; the dead letter's own is when it was produced.
	HeaderTimestamp = "kshare.timestamp"
	// HeaderDeliveryCount is how many times the share group had handed the
	// record out, the delivery that dead-lettered it included.
	HeaderDeliveryCount = "kshare.delivery-count"
	// HeaderTable and HeaderGroup name the table that read the record and
	// its share group.
	HeaderTable = "kshare.table"
	HeaderGroup = "kshare.group"
)

// deadLetter produces a stream's dead letters with a client of its own, on
// the table's cluster and with its security settings (clientConfig.opts).
type deadLetter struct {
	topic string
	cl    *kgo.Client
}

// checkDeadLetter is Open's check of the dead-letter topic: it exists (a
// missing one is an error naming it, rather than poison records released
// over and over), and its max.message.bytes sizes the producer.
func (s *source) checkDeadLetter(ctx context.Context, adm *kadm.Client) (int32, error) {
	tds, err := adm.ListTopics(ctx, s.deadTopic)
	if err != nil {
		return 0, s.connectError(err)
	}
	td, ok := tds[s.deadTopic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return 0, fmt.Errorf("table '%s': dead-letter topic '%s' ('%s') not found on %s; create it first",
			options.Cut(s.name), s.deadTopic, OptDeadLetterTopic, strings.Join(s.client.seeds, ","))
	case td.Err != nil:
		return 0, fmt.Errorf("table '%s': dead-letter topic '%s': %w", options.Cut(s.name), s.deadTopic, td.Err)
	}
	limit, err := MaxMessageBytes(ctx, adm, s.deadTopic)
	if err != nil {
		// franz-go's default batch limit applies; a dead letter too large
		// for it fails, and its record is released.
		return 0, nil
	}
	return limit, nil
}

// newDeadLetter makes the producing client of stream st; limit is the
// topic's max.message.bytes (0: unknown).
func (s *source) newDeadLetter(st *stream, limit int32) (*deadLetter, error) {
	o := append(s.client.opts(),
		// The original is accepted on this acknowledgement: it must be
		// durable (acks=all, franz-go's default, said here because the
		// promise rests on it).
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(s.deadTopic),
		kgo.ProducerLinger(0),
		// A dead letter not acknowledged within the request timeout is
		// given up and its record released: the member does not poll
		// again until every record of its poll is settled.
		kgo.RecordDeliveryTimeout(s.client.reqTimeout),
		kgo.WithHooks(st.health),
		kgo.DisableClientMetrics(),
	)
	o = append(o, ProducerLimits(limit)...)
	o = append(o, testClientOpts...)
	if s.client.clientID == "" {
		o = append(o, kgo.ClientID("kshare-"+s.group+"-dead-letter"))
	}
	cl, err := kgo.NewClient(o...)
	if err != nil {
		return nil, fmt.Errorf("table '%s': kafka client of the dead-letter topic: %w", options.Cut(s.name), err)
	}
	return &deadLetter{topic: s.deadTopic, cl: cl}, nil
}

// deadLetter produces record i of poll p to the dead-letter topic, and
// settles it when the broker answers: accepted once the dead letter is
// acknowledged, released if the produce fails. derr is why (the
// kshare.error header); what says it in the log: "does not decode", "whose
// row could not be evaluated".
func (m *member) deadLetter(p *poll, i int, derr error, what string) {
	st := m.st
	r := p.records[i]
	dl := &kgo.Record{Key: r.Key, Value: r.Value, Headers: deadLetterHeaders(st.src, r, derr)}
	// Not the stream's context: Close lets dead letters on the wire finish
	// (member.shutdown flushes them) rather than fail them half sent.
	st.dead.cl.Produce(context.Background(), dl, func(_ *kgo.Record, err error) {
		if err != nil {
			if !errors.Is(err, kgo.ErrClientClosed) {
				st.stats.deadLetterFailed.Add(1)
				st.log.Warn("could not produce a record that "+what+" to the dead-letter topic; released, it will be delivered again",
					"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "delivery_count", r.DeliveryCount(),
					"dead_letter_topic", st.dead.topic, "err", err)
			}
			p.settle(i, table.Release)
			return
		}
		st.stats.deadLettered.Add(1)
		st.log.Warn("dead-lettered a record that "+what, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
			"dead_letter_topic", st.dead.topic, "err", derr)
		p.settle(i, table.Accept)
	})
}

// deadLetterHeaders are r's headers followed by the kshare.* ones.
func deadLetterHeaders(s *source, r *kgo.Record, derr error) []kgo.RecordHeader {
	h := make([]kgo.RecordHeader, 0, len(r.Headers)+8)
	h = append(h, r.Headers...)
	add := func(k, v string) { h = append(h, kgo.RecordHeader{Key: k, Value: []byte(v)}) }
	add(HeaderError, derr.Error())
	add(HeaderTopic, r.Topic)
	add(HeaderPartition, strconv.FormatInt(int64(r.Partition), 10))
	add(HeaderOffset, strconv.FormatInt(r.Offset, 10))
	add(HeaderTimestamp, strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	add(HeaderDeliveryCount, strconv.FormatInt(int64(r.DeliveryCount()), 10))
	add(HeaderTable, s.name)
	add(HeaderGroup, s.group)
	return h
}

// flush waits, within ctx, for the dead letters on the wire, so that a
// closing member settles their records as their produce went rather than
// releasing records already dead-lettered.
func (d *deadLetter) flush(ctx context.Context) error { return d.cl.Flush(ctx) }

// close stops the client once no member produces any more. franz-go's
// Close fails what is still buffered (those records were released by their
// members' shutdown) and may take seconds without a broker: closing owns it.
func (d *deadLetter) close() {
	if d == nil {
		return
	}
	closing.Go(d.cl.Close)
}
