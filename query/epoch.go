package query

// This file groups the commits of a query with a State into epochs: the
// batches the caller has moved past are accepted together, once one
// Commit stored what all of them changed.
//
// Without Options.CheckpointInterval every batch is its own epoch, as the
// shell and Go callers have it: a batch's records are accepted as soon as
// the caller moves past it. With it (a pipeline's 'checkpoint-interval'),
// an epoch ends when
//   - the source has nothing more to hand out until the query settles what
//     it holds (flow.ReaderWaiter: a share-group member polls again only
//     once its last poll is settled, so holding on would only idle it),
//   - no batch came for Options.HoldLinger (a source that does not say
//     when it waits, or a member that began to wait just after the query
//     asked),
//   - the interval has passed since the epoch's first batch,
//   - or the query ends (a failure releases the epoch's records instead:
//     the State does not hold their effect).
//
// So a query fed by several members stores the batches they handed out
// together in one synced write (and a sink that writes in transactions
// commits one transaction for them), instead of one per batch; one member
// still gets a write per poll, since it polls again only once its records
// are settled.

import (
	"errors"
	"time"

	"github.com/kshare/kshare/flow"
)

// epoch is the batches the caller has moved past whose effect r.saves
// holds and the State does not yet, and when the first of them came.
type epoch struct {
	acks  multiAck
	start time.Time
}

// errEpoch is the cause of a wait that ended an epoch.
var errEpoch = errors.New("checkpoint")

// stored settles ack once the State holds what its batch changed (which
// r.saves has noted): with the epoch, which ends now unless it is to go
// on. It returns false when the query ended (the commit failed).
func (r *Rows) stored(ack flow.Acker) bool {
	e := &r.epoch
	if len(e.acks) == 0 {
		e.start = time.Now()
	}
	e.acks = append(e.acks, ack)
	if d := r.opts.CheckpointInterval; d > 0 && time.Since(e.start) < d {
		r.mu.Lock()
		r.stats.Awaiting = int64(len(r.saves.records))
		r.mu.Unlock()
		return true
	}
	return r.endEpoch()
}

// endEpoch stores the epoch and accepts its records; on failure it ends
// the query, and reports false.
func (r *Rows) endEpoch() bool {
	if err := r.commitEpoch(); err != nil {
		r.finish(EndError, err)
		return false
	}
	return true
}

// commitEpoch stores what the epoch's batches changed in one Commit, then
// settles them as delivered; a failed Commit releases them instead.
func (r *Rows) commitEpoch() error {
	acks := r.epoch.acks
	if len(acks) == 0 {
		return nil
	}
	if err := r.commitSaves(); err != nil {
		r.abandonEpoch()
		return err
	}
	r.epoch.acks = nil
	acks.Done()
	return nil
}

// abandonEpoch releases the records of the epoch: the query failed, and
// the State does not hold their effect.
func (r *Rows) abandonEpoch() {
	acks := r.epoch.acks
	r.epoch.acks = nil
	acks.Abandon()
	r.mu.Lock()
	r.stats.Awaiting = 0
	r.mu.Unlock()
}

// epochDeadline is when a wait for the next batch ends the epoch: the
// interval's end, or sooner HoldLinger from now; zero when no epoch is
// open.
func (r *Rows) epochDeadline(now time.Time) time.Time {
	if len(r.epoch.acks) == 0 {
		return time.Time{}
	}
	at := r.epoch.start.Add(r.opts.CheckpointInterval)
	if l := r.holdLinger(); l > 0 && now.Add(l).Before(at) {
		at = now.Add(l)
	}
	return at
}
