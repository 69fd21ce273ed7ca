package sharegroup

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
)

// poll is the records of one PollRecords call of one member and the state
// of their acknowledgements. A member does not poll again until every record
// of its last poll is settled, because franz-go accepts whatever the
// previous poll left pending: polling early would accept rows that were
// never delivered.
//
// Each record is acked as soon as it is settled, accepts included, rather
// than left for the next poll to accept in one pass: franz-go then sends
// the acks while the reader still works, and the next ShareFetch goes
// without them. Leaving accepts to the next poll was measured and cost a
// third of the records/s (1 member: 19.5k-23.5k against 27.5k-29.6k;
// BenchmarkSourceOrders, side by side).
type poll struct {
	m       *member
	records []*kgo.Record

	mu      sync.Mutex
	settled []bool
	pending int
	done    chan struct{} // closed when pending reaches 0
	// lockUntil is until when the broker surely holds the records for this
	// member: the fetch's deadline, moved on by each renewal the broker
	// confirmed (see lockKeeper). Zero: no lock is known (not a share fetch).
	lockUntil time.Time
	// expired counts the records settled after lockUntil.
	expired int
}

func newPoll(m *member, records []*kgo.Record) *poll {
	p := &poll{
		m:         m,
		records:   records,
		settled:   make([]bool, len(records)),
		pending:   len(records),
		done:      make(chan struct{}),
		lockUntil: m.lockDeadline(records),
	}
	if p.pending == 0 {
		close(p.done)
	}
	return p
}

// settle gives record i its final status; the first settlement of a record
// wins, later ones (a batch settled after Close released it) do nothing.
func (p *poll) settle(i int, d flow.Disposition) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settleLocked(i, d, p.lockExpired())
}

// lockExpired reports whether the records' locks may have run out: a
// record settled now may be with another consumer already. Called with
// p.mu held, once for all the records settled together.
func (p *poll) lockExpired() bool {
	return !p.lockUntil.IsZero() && time.Now().After(p.lockUntil)
}

// extendLock records that the broker confirmed a renewal of the locks,
// sent at sent, that lasts until t. A renewal sent after the locks may have
// run out extends nothing: the broker confirms a renewal of records that
// another consumer has settled since as if it were applied.
func (p *poll) extendLock(sent, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sent.Before(p.lockUntil) && t.After(p.lockUntil) {
		p.lockUntil = t
	}
}

// releaseOnArrival releases every record of p undelivered: it came with
// too little of its locks left (see arrivalMargin). Like a late settlement
// it is kept out of the acknowledgement counts.
func (p *poll) releaseOnArrival() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.records {
		p.settled[i] = true
		r.Ack(kgo.AckRelease)
	}
	p.pending = 0
	close(p.done)
	p.m.st.stats.expiredOnArrival.Add(int64(len(p.records)))
}

// settleLocked settles record i; expired says its lock may have run out
// (lockExpired). Such a record's acknowledgement goes out all the same,
// but it is counted as expired, never as accepted, released or rejected:
// the broker may have handed it to another consumer, and it answers an
// acknowledgement of a record that consumer settled as if it were applied.
func (p *poll) settleLocked(i int, d flow.Disposition, expired bool) {
	if p.settled[i] {
		return
	}
	p.settled[i] = true
	r := p.records[i]
	if expired {
		p.expired++
		p.m.st.stats.lockExpired.Add(1)
	} else {
		p.m.acks.sent(r.Topic, r.Partition, d)
	}
	r.Ack(ackStatus(d))
	p.pending--
	if p.pending == 0 {
		close(p.done)
	}
}

// releaseRest releases every record not yet settled: the stream is closing
// or failing, and another member should get them at once.
func (p *poll) releaseRest() {
	p.mu.Lock()
	defer p.mu.Unlock()
	expired := p.lockExpired()
	for i := range p.records {
		p.settleLocked(i, flow.Release, expired)
	}
}

// unsettled calls fn with each record not settled yet.
func (p *poll) unsettled(fn func(*kgo.Record)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.records {
		if !p.settled[i] {
			fn(r)
		}
	}
}

func ackStatus(d flow.Disposition) kgo.AckStatus {
	switch d {
	case flow.Release:
		return kgo.AckRelease
	case flow.Reject:
		return kgo.AckReject
	}
	return kgo.AckAccept
}

// batchAck settles the records behind one batch. Rows map to records
// through rowRec (a record may give several rows, a JSON array).
type batchAck struct {
	p      *poll
	recs   []int32 // indexes into p.records of this batch's records
	rowRec []int32 // for each row, an index into recs
	marks  []flow.Disposition
	// failed marks the records (indexes into recs) that FailRow settles:
	// Done and Abandon leave them to it (a dead letter's answer).
	failed []bool
	once   sync.Once
}

var _ flow.Acker = (*batchAck)(nil)

func (a *batchAck) Mark(row int, d flow.Disposition) {
	if row < 0 || row >= len(a.rowRec) {
		return
	}
	if a.marks == nil {
		if d == flow.Accept {
			return
		}
		a.marks = make([]flow.Disposition, len(a.rowRec))
	}
	a.marks[row] = d
}

// Done accepts each record all of whose rows were delivered; a record with a
// released row is released, else one with a rejected row is rejected.
func (a *batchAck) Done() {
	a.once.Do(func() { a.settle(false) })
}

// Abandon releases every record except those with a rejected row.
func (a *batchAck) Abandon() {
	a.once.Do(func() { a.settle(true) })
}

func (a *batchAck) settle(abandon bool) {
	// Marks are rare (a LIMIT, a WHERE that releases, a reader's verdict):
	// without them every record takes the batch's one disposition.
	var released, rejected []bool
	if a.marks != nil {
		released = make([]bool, len(a.recs))
		rejected = make([]bool, len(a.recs))
		for row, d := range a.marks {
			switch d {
			case flow.Release:
				released[a.rowRec[row]] = true
			case flow.Reject:
				rejected[a.rowRec[row]] = true
			}
		}
	}
	a.p.mu.Lock()
	defer a.p.mu.Unlock()
	expired := a.p.lockExpired()
	for i, rec := range a.recs {
		if a.failed != nil && a.failed[i] {
			continue
		}
		d := flow.Accept
		switch {
		case abandon && rejected != nil && rejected[i]:
			// An explicit reject is the caller's verdict on the record and
			// stands even when the batch as a whole was not delivered.
			d = flow.Reject
		case abandon || (released != nil && released[i]):
			d = flow.Release
		case rejected != nil && rejected[i]:
			d = flow.Reject
		}
		a.p.settleLocked(int(rec), d, expired)
	}
}
