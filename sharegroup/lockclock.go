package sharegroup

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lockClock tells when a fetch's locks surely run out, by the member's
// clock, more safely than franz-go's Record.AcquisitionDeadline: that is
// the time the fetch's answer was decoded plus the lock duration, and the
// broker started the locks earlier, before it sent the answer. On a
// machine short of CPU the answer can wait seconds to be read and decoded
// (seen in CI under load: a lock believed to have a third left had run out
// at the broker, and another consumer got and accepted the records while
// the slow reader still delivered them). The broker cannot have acquired
// the records before it got the request, so the deadline is taken back by
// the time from writing the ShareFetch request to the buffering of its
// records: the lock then counts from the request, never from later than the
// broker's start. The cost is a lock believed shorter by the fetch's wait
// at the broker ('properties.fetch.max.wait.ms', 500 ms) at most.
//
// It is a franz-go hook of the member's client: the request's write, its
// answer's read and each buffered record. Fetches to several brokers run
// at once; see buffered for which answer a record is taken to come in.
type lockClock struct {
	mu sync.Mutex
	// sent are the write times of the ShareFetch requests in flight to
	// each broker, in order (a connection answers in order).
	sent map[int32][]time.Time
	// answered is, for each broker, its last answer read: when, and when
	// its request was written.
	answered map[int32]answer
	// lastKey is the last answer's deadline (all records of one answer
	// share franz-go's), already taken note of.
	lastKey int64
	// until maps franz-go's deadlines (UnixNano) to the safe ones, for the
	// records buffered and not yet polled.
	until map[int64]time.Time
}

var (
	_ kgo.HookBrokerWrite         = (*lockClock)(nil)
	_ kgo.HookBrokerRead          = (*lockClock)(nil)
	_ kgo.HookFetchRecordBuffered = (*lockClock)(nil)
)

func newLockClock() *lockClock {
	return &lockClock{sent: map[int32][]time.Time{}, answered: map[int32]answer{}, until: map[int64]time.Time{}}
}

// answer is a ShareFetch answer: when its request was written and when it
// was read.
type answer struct{ sent, read time.Time }

func (c *lockClock) OnBrokerWrite(meta kgo.BrokerMetadata, key int16, _ int, _, timeToWrite time.Duration, err error) {
	if key != int16(kmsg.ShareFetch) || err != nil {
		return
	}
	// The writing started before the broker could read the request.
	at := time.Now().Add(-timeToWrite)
	c.mu.Lock()
	c.sent[meta.NodeID] = append(c.sent[meta.NodeID], at)
	c.mu.Unlock()
}

func (c *lockClock) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key != int16(kmsg.ShareFetch) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.sent[meta.NodeID]
	if len(q) == 0 {
		return
	}
	if err == nil {
		c.answered[meta.NodeID] = answer{sent: q[0], read: time.Now()}
	}
	c.sent[meta.NodeID] = q[1:]
}

// OnFetchRecordBuffered runs right after franz-go decoded the answer that
// brought r: the time since the request was written bounds how much later
// than the broker franz-go started the lock.
func (c *lockClock) OnFetchRecordBuffered(r *kgo.Record) {
	c.buffered(r.AcquisitionDeadline(), time.Now())
}

// recentAnswers is how far back an answer counts for records buffered
// now: a broker that did not answer for longer did not bring them (an
// idle broker answers a long-polling fetch every
// 'properties.fetch.max.wait.ms').
const recentAnswers = 10 * time.Second

// buffered takes note of franz-go's deadline d of records buffered at now.
func (c *lockClock) buffered(d, now time.Time) {
	if d.IsZero() {
		return
	}
	key := d.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if key == c.lastKey {
		return // the rest of an answer already taken note of
	}
	// The answer that brought them is one of the brokers' last ones; a
	// record does not say which (franz-go does not tell a share
	// consumer's partition leaders), so the earliest request of the
	// brokers that answered lately is taken, which errs on the safe side
	// by at most a fetch's wait.
	var first time.Time
	for _, a := range c.answered {
		if now.Sub(a.read) <= recentAnswers && (first.IsZero() || a.sent.Before(first)) {
			first = a.sent
		}
	}
	until := d
	if !first.IsZero() {
		if late := now.Sub(first); late > 0 {
			until = d.Add(-late)
		}
	}
	c.lastKey = key
	c.until[key] = until
}

// deadline is when the first of recs' locks surely runs out (the zero time
// when none has one: not a share-group fetch). It forgets the deadlines of
// answers older than recs', whose records have all been polled.
func (c *lockClock) deadline(recs []*kgo.Record) time.Time {
	ds := make([]time.Time, len(recs))
	for i, r := range recs {
		ds[i] = r.AcquisitionDeadline()
	}
	return c.safe(ds)
}

// safe is the earliest of franz-go's deadlines ds taken back as buffered
// said (a deadline it did not see is kept as it is).
func (c *lockClock) safe(ds []time.Time) time.Time {
	var first time.Time
	var newest int64
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range ds {
		if d.IsZero() {
			continue
		}
		key := d.UnixNano()
		newest = max(newest, key)
		if safe, ok := c.until[key]; ok {
			d = safe
		}
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	for key := range c.until {
		if key < newest && key != c.lastKey {
			delete(c.until, key)
		}
	}
	return first
}
