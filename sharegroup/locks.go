package sharegroup

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// lockKeeper keeps the records of one poll locked to their member from the
// moment the member has them until each is settled. Its timer runs from the
// poll on, while the member still hands the poll's batches to a reader that
// may take minutes over them, not only once everything is handed over: in
// batch_optimized mode one fetch can acquire thousands of records, and a
// slow reader then holds the last of them for many lock durations before
// the member is done handing them out.
//
// The broker restarts a record's lock when it receives a renewal; the keeper
// renews when two thirds of the lock are left, every third of it: one third
// is margin for the broker's clock having started before ours (the
// deadline is computed when the fetch's answer is decoded), and a renewal
// that is slow to be answered (seen: over a second on a loaded machine) is
// waited for until the locks would run out.
//
// It also knows until when the locks are surely held (poll.lockUntil): a
// record settled after that may already be with another consumer, and the
// broker's answer cannot tell, since it silently ignores acknowledgements
// of records that another consumer has since settled (it skips offsets
// below the share partition's start offset).
type lockKeeper struct {
	m     *member
	p     *poll
	timer *time.Timer // nil: nothing to renew (no deadline, or renewal off)
}

// Not every poll's locks start when it returns. franz-go's strict pull
// (MaxConcurrentFetches(0)) lets a fetch start when a poll drains the
// previous one and has not returned yet; on a busy machine that fetch
// acquires the next records while the member still delivers the last poll
// (seen on a real broker: a poll's records arrived with 7 s of a 10 s lock
// left after a 3 s pause). So the keeper schedules by the time a poll's
// locks have left, not by the time since it returned, and a poll that comes
// with less than arrivalMargin of its lock left is released undelivered:
// a renewal may no longer reach the broker in time, and its records may be
// with another consumer already.
//
// The margin is a third of the lock, not less: the deadline we know is
// computed when the fetch's answer is decoded, later than the broker started
// the locks by however long the answer waited to be read and decoded. Seen
// on a loaded two-core machine, four members in one process under the race
// detector, on a 2 s lock: a poll fetched ahead and let through with a
// quarter of its lock left (by our clock) had its locks run out at the
// broker before the renewal sent at once arrived; the broker refused its
// accepts and handed its records to another consumer.
const arrivalMargin = 3 // a third of the lock

// observeLock returns how much of p's locks is left, and learns the
// broker's lock duration as the most time left that any poll of the member
// came with (a fresh fetch's answer is decoded a little after the broker
// started its locks, so this errs short).
func (m *member) observeLock(p *poll) (left time.Duration) {
	if p.lockUntil.IsZero() {
		return 0
	}
	left = time.Until(p.lockUntil)
	if left > m.lockDur {
		m.lockDur = left
	}
	return left
}

// arrivedExpired reports whether p came with too little of its locks left
// to be delivered (see arrivalMargin).
func (m *member) arrivedExpired(p *poll) bool {
	left := m.observeLock(p)
	return !p.lockUntil.IsZero() && left < m.lockDur/arrivalMargin
}

// releaseExpired releases p's records undelivered (see arrivalMargin), in
// an acknowledgement request of their own. Kafka applies a partition's
// acknowledgements in one request all or none: when one of them is for a
// record the member no longer holds, it refuses them all. Sent together
// with the accepts of the poll before, a release of records that another
// consumer has taken meanwhile made the broker refuse those accepts, and
// hand rows already delivered out a second time. So the acknowledgements
// queued before go out first, then these alone.
func (m *member) releaseExpired(p *poll) {
	flush := func() {
		ctx, cancel := context.WithTimeout(context.Background(), m.st.src.client.RequestTimeout())
		defer cancel()
		if err := m.cl.FlushAcks(ctx); err != nil {
			m.st.log.Debug("flushing acknowledgements around a release of expired records", "member", m.name, "err", err)
		}
	}
	flush()
	p.releaseOnArrival()
	flush()
	m.st.log.Warn("released records undelivered: the client fetched them ahead and their locks had nearly run out when they were polled; another consumer may have them already",
		"member", m.name, "records", len(p.records), "lock_until", p.lockUntil)
}

// keepLocks starts keeping p's locks; stop ends it.
func (m *member) keepLocks(p *poll) *lockKeeper {
	k := &lockKeeper{m: m, p: p}
	if m.lockDur > 0 && !p.lockUntil.IsZero() && renewLocks {
		k.timer = time.NewTimer(k.untilDue())
	}
	return k
}

// renewEvery is the renewal period: a third of the lock (see lockKeeper).
const renewEvery = 3

// untilDue is how long until two thirds of the lock are left.
func (k *lockKeeper) untilDue() time.Duration {
	return max(0, k.left()-k.m.lockDur+k.m.lockDur/renewEvery)
}

// left is how long the locks surely hold from now.
func (k *lockKeeper) left() time.Duration {
	k.p.mu.Lock()
	defer k.p.mu.Unlock()
	return time.Until(k.p.lockUntil)
}

// C fires when the locks are due for renewal; nil when they never are.
func (k *lockKeeper) C() <-chan time.Time {
	if k.timer == nil {
		return nil
	}
	return k.timer.C
}

func (k *lockKeeper) stop() {
	if k.timer != nil {
		k.timer.Stop()
	}
}

// renew extends the locks of the records not settled yet, and sends the
// acknowledgements queued meanwhile with them. Call it when C fires.
func (k *lockKeeper) renew(ctx context.Context) {
	m, lock := k.m, k.m.lockDur
	n := 0
	k.p.unsettled(func(r *kgo.Record) {
		r.Ack(kgo.AckRenew)
		n++
	})
	if n == 0 {
		k.timer.Reset(lock / renewEvery)
		return
	}
	sent := time.Now()
	refused := m.ackErrors.Load()
	// A renewal sent while another is in flight does nothing, so wait for
	// this one to be answered, for as long as the locks hold (and a
	// little, should they have run out already: the answer still tells).
	fctx, cancel := context.WithTimeout(ctx, max(k.left(), lock/renewEvery))
	err := m.cl.FlushAcks(fctx)
	cancel()
	m.st.stats.renewed.Add(int64(n))
	switch {
	case err != nil:
		if ctx.Err() == nil {
			m.st.log.Warn("renewing record locks timed out; trying again", "member", m.name, "records", n, "err", err)
		}
	case m.ackErrors.Load() != refused:
		// The broker refused this flush's acknowledgements for some
		// partition (onAcks logged it): the renewal may not have been
		// applied, so the locks are not counted as extended.
	default:
		// The broker restarted the locks after our send, so they surely
		// last until sent + lock, unless they had run out before it.
		k.p.extendLock(sent, sent.Add(lock))
	}
	k.timer.Reset(max(k.untilDue(), lock/8))
}

// lockDeadline is when the first of recs' locks surely runs out: by the
// member's lockClock, or franz-go's deadline for a member without one (a
// test's).
func (m *member) lockDeadline(recs []*kgo.Record) time.Time {
	if m != nil && m.clock != nil {
		return m.clock.deadline(recs)
	}
	return pollDeadline(recs)
}

// pollDeadline is when the first of recs' locks runs out by franz-go's
// deadlines (the zero time when none has one: not a share-group fetch).
func pollDeadline(recs []*kgo.Record) time.Time {
	var first time.Time
	for _, r := range recs {
		if d := r.AcquisitionDeadline(); !d.IsZero() && (first.IsZero() || d.Before(first)) {
			first = d
		}
	}
	return first
}
