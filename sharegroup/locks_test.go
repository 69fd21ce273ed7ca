package sharegroup

import (
	"testing"
	"time"
)

// A poll tells the member the lock's duration by the most time any poll
// came with; one that comes with less than a third of it left (fetched
// ahead while the previous poll was delivered) is not delivered.
func TestArrivedExpired(t *testing.T) {
	m := &member{}
	now := time.Now()
	for _, tc := range []struct {
		left    time.Duration
		expired bool
	}{
		{10 * time.Second, false}, // a fresh fetch: the lock is 10 s
		{5 * time.Second, false},  // fetched ahead, half of it left: renewed at once
		{3 * time.Second, true},   // under a third left: a renewal may come too late
		{4 * time.Second, false},  // over a third left
		{-time.Second, true},      // already run out
		{9 * time.Second, false},
	} {
		p := &poll{lockUntil: now.Add(tc.left)}
		if got := m.arrivedExpired(p); got != tc.expired {
			t.Errorf("a poll with %v of its lock left: arrivedExpired = %v, want %v", tc.left, got, tc.expired)
		}
	}
	if m.lockDur < 9*time.Second || m.lockDur > 10*time.Second {
		t.Errorf("lock duration learnt %v, want about 10s", m.lockDur)
	}
	// A poll from outside a share group has no lock to lose.
	if m.arrivedExpired(&poll{}) {
		t.Errorf("a poll without a deadline counts as expired")
	}
}

// A renewal extends the locks only when it was sent before they could have
// run out: the broker confirms a renewal of records another consumer has
// settled since as if it were applied.
func TestExtendLock(t *testing.T) {
	now := time.Now()
	p := &poll{lockUntil: now.Add(time.Second)}
	p.extendLock(now, now.Add(10*time.Second))
	if !p.lockUntil.Equal(now.Add(10 * time.Second)) {
		t.Errorf("a renewal sent in time: lock until %v, want %v", p.lockUntil, now.Add(10*time.Second))
	}
	p.extendLock(now.Add(11*time.Second), now.Add(21*time.Second))
	if !p.lockUntil.Equal(now.Add(10 * time.Second)) {
		t.Errorf("a renewal sent after the lock ran out extended it to %v", p.lockUntil)
	}
	p.extendLock(now, now.Add(5*time.Second))
	if !p.lockUntil.Equal(now.Add(10 * time.Second)) {
		t.Errorf("an older renewal's answer shortened the lock to %v", p.lockUntil)
	}
}
