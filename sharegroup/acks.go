package sharegroup

import (
	"sync"

	"github.com/kshare/kshare/flow"
)

// ackLedger counts a member's acknowledgements from the moment they are
// queued until the broker answers for their partition. franz-go reports
// outcomes per partition, not per record, and sends every acknowledgement
// queued for a partition in one request, so the answer for a partition
// settles all that was counted for it before. An acknowledgement queued
// while an earlier request of its partition is on the wire is counted with
// that request's answer: the counts can run one request ahead, never count
// an acknowledgement twice.
type ackLedger struct {
	mu      sync.Mutex
	pending map[ackKey]*[3]int64 // by flow.Disposition
}

type ackKey struct {
	topic     string
	partition int32
}

func (l *ackLedger) sent(topic string, partition int32, d flow.Disposition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[ackKey]*[3]int64{}
	}
	k := ackKey{topic, partition}
	c := l.pending[k]
	if c == nil {
		c = new([3]int64)
		l.pending[k] = c
	}
	c[d]++
}

// answered takes the counts waiting for the partition's answer.
func (l *ackLedger) answered(topic string, partition int32) [3]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := ackKey{topic, partition}
	c := l.pending[k]
	if c == nil {
		return [3]int64{}
	}
	delete(l.pending, k)
	return *c
}

// unconfirmed counts the acknowledgements that have no answer yet.
func (l *ackLedger) unconfirmed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.pending {
		n += c[0] + c[1] + c[2]
	}
	return n
}

// unconfirmedOf counts the acknowledgements of disposition d that have no
// answer yet.
func (l *ackLedger) unconfirmedOf(d flow.Disposition) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, c := range l.pending {
		n += c[d]
	}
	return n
}
