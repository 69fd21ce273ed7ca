package sharegroup

// This file is 'scan.on-decode-error' = 'dead-letter': a record that the
// table's format cannot decode is produced to 'scan.dead-letter.topic', and
// accepted only once that produce is acknowledged (acks=all). A produce that
// fails releases the record, so it is delivered again, never lost.
//
// The producing client and its headers are kafkaclient.DeadLetters, which
// the 'kafka' sink's dead letters share; what a dead letter's answer does
// to its record is this file's.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
)

// deadLetterTopic is the table's dead-letter topic, as kafkaclient
// checks it and heads its dead letters.
func (s *source) deadLetterTopic() kafkaclient.DeadLetterTopic {
	return kafkaclient.DeadLetterTopic{Table: s.name, Group: s.group, Topic: s.deadTopic, Key: OptDeadLetterTopic, Seeds: s.client.Seeds()}
}

// newDeadLetter makes the producing client of stream st, on the table's
// cluster and with its security settings; limit is the topic's
// max.message.bytes (0: unknown).
func (s *source) newDeadLetter(st *stream, limit int32) (*kafkaclient.DeadLetters, error) {
	o := append(s.client.Opts(),
		// A dead letter not acknowledged within the request timeout is
		// given up and its record released: the member does not poll
		// again until every record of its poll is settled.
		kgo.RecordDeliveryTimeout(s.client.RequestTimeout()),
		st.health.Opt(),
		kgo.DisableClientMetrics(),
	)
	o = append(o, testClientOpts...)
	if s.client.ClientID() == "" {
		o = append(o, kgo.ClientID("kshare-"+s.group+"-dead-letter"))
	}
	return s.deadLetterTopic().Open(limit, o...)
}

// deadLetter produces record i of poll p to the dead-letter topic, and
// settles it when the broker answers: accepted once the dead letter is
// acknowledged, released if the produce fails. derr is why (the
// kshare.error header); what says it in the log: "that does not decode",
// "whose row could not be evaluated".
func (m *member) deadLetter(p *poll, i int, derr error, what string) {
	st := m.st
	r := p.records[i]
	// Not the stream's context: Close lets dead letters on the wire finish
	// (member.shutdown flushes them) rather than fail them half sent.
	st.dead.ProduceRead(context.Background(), r, derr, func(err error) {
		if err != nil {
			if !errors.Is(err, kgo.ErrClientClosed) {
				st.stats.deadLetterFailed.Add(1)
				st.log.Warn("could not produce a record "+what+" to the dead-letter topic; released, it will be delivered again",
					"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "delivery_count", r.DeliveryCount(),
					"dead_letter_topic", st.dead.Topic(), "err", err)
			}
			p.settle(i, flow.Release)
			return
		}
		st.stats.deadLettered.Add(1)
		st.log.Warn("dead-lettered a record "+what, "topic", r.Topic, "partition", r.Partition, "offset", r.Offset,
			"dead_letter_topic", st.dead.Topic(), "err", derr)
		p.settle(i, flow.Accept)
	})
}

// closeDeadLetters stops d, if any, once no member produces any more.
// Its Close fails what is still buffered (those records were released by
// their members' shutdown) and may take seconds without a broker: closing
// owns it.
func closeDeadLetters(d *kafkaclient.DeadLetters) {
	if d == nil {
		return
	}
	closing.Go(d.Close)
}
