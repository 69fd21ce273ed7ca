package sharegroup

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A fetch's deadline is taken back by the time from writing its request to
// the buffering of its records: franz-go counts the lock from the decoding
// of the answer, the broker from before it sent it.
func TestLockClock(t *testing.T) {
	c := newLockClock()
	t0 := time.Now()
	broker := kgo.BrokerMetadata{NodeID: 1}
	c.OnBrokerWrite(broker, int16(kmsg.ShareFetch), 100, 0, 0, nil)
	c.OnBrokerWrite(broker, int16(kmsg.ShareAcknowledge), 100, 0, 0, nil) // not a fetch
	c.OnBrokerRead(broker, int16(kmsg.ShareFetch), 100, 0, 0, nil)
	// The answer was decoded 3 s after the request was written (a starved
	// machine); franz-go says the 10 s lock runs until decode + 10 s.
	decoded := t0.Add(3 * time.Second)
	franz := decoded.Add(10 * time.Second)
	c.buffered(franz, decoded)
	got := c.safe([]time.Time{franz})
	if want := t0.Add(10 * time.Second); got.After(want.Add(100*time.Millisecond)) || got.Before(want.Add(-100*time.Millisecond)) {
		t.Errorf("safe deadline %v after the write, want about 10s (from the request, not the answer)", got.Sub(t0))
	}
	// A deadline the clock never saw buffered is kept; the earliest of a
	// poll's counts.
	other := t0.Add(20 * time.Second)
	if got := c.safe([]time.Time{other, franz}); got.After(t0.Add(10*time.Second + 100*time.Millisecond)) {
		t.Errorf("safe deadline of two answers %v, want the earlier one's", got.Sub(t0))
	}
	if got := c.safe([]time.Time{{}}); !got.IsZero() {
		t.Errorf("records without a deadline got %v", got)
	}
	// A later answer's deadline: older ones are forgotten once polled past.
	c.OnBrokerWrite(broker, int16(kmsg.ShareFetch), 100, 0, 0, nil)
	c.OnBrokerRead(broker, int16(kmsg.ShareFetch), 100, 0, 0, nil)
	next := time.Now().Add(30 * time.Second)
	c.buffered(next, time.Now())
	c.safe([]time.Time{next})
	c.mu.Lock()
	_, kept := c.until[franz.UnixNano()]
	c.mu.Unlock()
	if kept {
		t.Errorf("the first answer's deadline is still kept after a poll of a later answer")
	}
}
