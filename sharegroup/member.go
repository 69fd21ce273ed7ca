package sharegroup

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Policy knobs, fixed in production and varied only by the measurements in
// this package's tests and benchmarks (see export_test.go and
// docs/delivery.md for the figures that chose them).
var (
	// prefetchFetches is franz-go's MaxConcurrentFetches: 0 fetches only
	// when the member polls.
	prefetchFetches = 0
	// renewLocks renews the locks of records still being delivered.
	renewLocks = true
	// testClientOpts are added to every member's client by this package's
	// tests (to watch the requests a member sends).
	testClientOpts []kgo.Opt
)

// member is one share-group member: its own franz-go client and record
// builder (decoder included), run by one goroutine that the stream owns.
type member struct {
	st   *stream
	id   int
	name string
	cl   *kgo.Client
	rb   *kafkarecord.Builder
	cur  *poll // the last poll, until the member stops
	acks ackLedger

	// refused counts this member's acknowledgements the broker refused or
	// that could not be sent; closeErr is what shutdown could not finish,
	// reported by the stream's Close.
	refused    atomic.Int64
	refusedErr atomic.Pointer[error] // why the last refusal
	closeErr   error
	// ackErrors counts the answers (a partition's acknowledgements of one
	// request) that the broker refused; a renewal that saw one is not
	// counted as having extended the locks.
	ackErrors atomic.Int64
	// lockDur is the broker's lock duration as the member's polls tell it
	// (see observeLock); only the member's goroutine uses it.
	lockDur time.Duration
	// clock tells when a poll's locks surely run out (see lockClock).
	clock *lockClock
}

// memberOpts are the franz-go options of member m of stream st: the
// client's (kafkaclient.Config.Opts), and what makes it a share-group
// member.
func (s *source) memberOpts(st *stream, m *member) []kgo.Opt {
	o := append(s.client.Opts(),
		kgo.ShareGroup(s.group),
		kgo.ShareMaxRecords(st.maxPoll),
		// No prefetch: a prefetched batch's locks run while the previous
		// batch is still being delivered, so a slow reader would get
		// records whose lock already expired and that went to another
		// member too. Without it a member holds only what its one fetch
		// acquired, all of which its poll takes and renews until delivered.
		kgo.MaxConcurrentFetches(prefetchFetches),
		kgo.ShareAckCallback(m.onAcks),
		kgo.WithHooks(m.clock),
		st.health.Opt(),
		kgo.DisableClientMetrics(),
	)
	o = append(o, testClientOpts...)
	if st.strict {
		// record_limit: the broker splits producer batches so that one
		// fetch acquires at most max.poll.records records.
		o = append(o, kgo.ShareMaxRecordsStrict())
	}
	if s.pattern != nil {
		o = append(o, kgo.ConsumeRegex(), kgo.ConsumeTopics(s.pattern.String()))
	} else {
		o = append(o, kgo.ConsumeTopics(s.topics...))
	}
	if s.client.ClientID() == "" {
		o = append(o, kgo.ClientID("kshare-"+m.name))
	}
	return o
}

func (s *source) newMember(st *stream, i int, o flow.OpenOptions) (*member, error) {
	rb, err := kafkarecord.NewSchemaBuilder(s.bound, st.schema, o.Alloc, o.BatchSize)
	if err != nil {
		return nil, err
	}
	m := &member{st: st, id: i, name: fmt.Sprintf("%s-%d", s.group, i), rb: rb, clock: newLockClock()}
	cl, err := kgo.NewClient(s.memberOpts(st, m)...)
	if err != nil {
		rb.Release()
		return nil, table.Errorf(s.name, "kafka client: %w", err)
	}
	m.cl = cl
	return m, nil
}

// onAcks counts what the broker answered for each partition's
// acknowledgements, and logs those it refused: their records come back when
// their locks expire, so nothing is lost, but the user should see why a
// record may be delivered twice.
func (m *member) onAcks(_ *kgo.Client, res kgo.ShareAckResults) {
	for _, r := range res {
		n := m.acks.answered(r.Topic, r.Partition)
		if r.Err == nil {
			for d, c := range n {
				m.st.stats.confirmed(flow.Disposition(d), c)
			}
			continue
		}
		m.ackErrors.Add(1)
		total := n[flow.Accept] + n[flow.Release] + n[flow.Reject]
		err := r.Err
		m.refusedErr.Store(&err)
		m.refused.Add(total)
		m.st.stats.refused.Add(total)
		// A refused accept is a record whose rows were delivered and that
		// the broker hands out again.
		m.st.stats.acceptsLost.Add(n[flow.Accept])
		if total > 0 {
			m.st.log.Warn("acknowledgement not applied; the records will be delivered again",
				"member", m.name, "topic", r.Topic, "partition", r.Partition, "records", total, "err", r.Err)
		}
	}
}

// run polls until the stream closes or fails. It never polls while records
// of its last poll are unsettled (see poll).
func (m *member) run(ctx context.Context) {
	defer m.shutdown()
	fetching := m.st.fetchCtx // ended by StopFetching too
	for fetching.Err() == nil {
		// All that the one fetch brought (0 = everything buffered): in
		// batch_optimized mode it may be more than max.poll.records, and a
		// record left in franz-go's buffer would be locked to this member
		// without being renewed.
		fetches := m.cl.PollRecords(fetching, 0)
		if err := m.fetchError(fetches); err != nil {
			if fetching.Err() == nil {
				m.st.send(ctx, item{err: err}, nil)
			}
			// Nothing of this poll was handed out.
			fetches.EachRecord(func(r *kgo.Record) { r.Ack(kgo.AckRelease) })
			return
		}
		recs := fetches.Records()
		if len(recs) == 0 {
			continue
		}
		if !m.handle(ctx, recs) {
			return
		}
	}
}

// fetchError picks the error that ends the stream out of a poll's errors.
// franz-go retries what can be retried; what it surfaces is for the user.
func (m *member) fetchError(fs kgo.Fetches) error {
	var first error
	fs.EachError(func(topic string, p int32, err error) {
		if first != nil || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		if kerr.IsRetriable(err) {
			m.st.log.Debug("retriable fetch error", "member", m.name, "topic", topic, "partition", p, "err", err)
			return
		}
		if topic != "" {
			first = table.Errorf(m.st.src.name, "reading %s[%d]: %w", topic, p, err)
		} else {
			first = table.Errorf(m.st.src.name, "share group '%s': %w", m.st.src.group, err)
		}
	})
	return first
}

// handle decodes one poll into batches, hands them to the reader and waits
// until every record is settled, renewing locks meanwhile. It reports
// whether the member should go on.
func (m *member) handle(ctx context.Context, recs []*kgo.Record) bool {
	st := m.st
	p := newPoll(m, recs)
	m.cur = p
	st.stats.records.Add(int64(len(recs)))
	st.stats.consumers[m.id].Add(int64(len(recs)))
	if m.arrivedExpired(p) {
		m.releaseExpired(p)
		return true
	}
	// The locks run from the fetch: keep them from here on, not only once
	// the batches are handed over (see lockKeeper).
	locks := m.keepLocks(p)
	defer locks.stop()
	defer m.logExpired(p)

	batches, fail := m.decode(p)
	if st.src.guarantee == GuaranteeAtMostOnce {
		// Accept on receipt: the records are done before anyone reads them.
		for i := range recs {
			p.settle(i, flow.Accept)
		}
	}
	// From here on this member waits for the reader: for it to take the
	// batches and to settle them. The batches count as on their way until
	// each is in the queue (or discarded), so that a reader that took one
	// while the next is still being handed over does not see the stream
	// waiting for it (see WaitsForReader).
	st.waiting.Add(1)
	defer st.waiting.Add(-1)
	if !m.deliver(ctx, batches, locks) {
		return false
	}
	if fail != nil {
		st.send(ctx, item{err: fail}, locks)
		// Wait for the rows already sent to be settled, so that what the
		// reader delivered is accepted while this member still holds the
		// records.
		m.wait(ctx, p, locks)
		return false
	}
	return m.wait(ctx, p, locks)
}

// decode turns the records of p into batches. A record that does not
// decode is settled by 'scan.on-decode-error'; under 'fail' decoding stops
// there, that record and all after it are released, and fail is the error
// that ends the stream once the batches before it are delivered.
func (m *member) decode(p *poll) (batches []flow.Batch, fail error) {
	st := m.st
	recs := p.records
	// A batch's slices are sized for a batch of one row per record, so
	// that the common case appends without growing them.
	newAck := func(left int) *batchAck {
		n := min(left, m.rb.Size())
		return &batchAck{p: p, recs: make([]int32, 0, n), rowRec: make([]int32, 0, n)}
	}
	ack := newAck(len(recs))
	next := 0 // records handled so far
	cut := func() {
		if len(ack.rowRec) == 0 {
			return
		}
		rec := m.rb.NewBatch()
		st.stats.rows.Add(int64(len(ack.rowRec)))
		var a flow.Acker = ack
		if st.src.guarantee == GuaranteeAtMostOnce {
			a = flow.NoAck{}
		}
		batches = append(batches, flow.Batch{Record: rec, Ack: a})
		ack = newAck(len(recs) - next)
	}
	for i, r := range recs {
		next = i + 1
		if r.DeliveryCount() > 1 {
			st.stats.redelivered.Add(1)
		}
		n, err := m.rb.Append(r.Value, r)
		switch {
		case errors.Is(err, table.ErrSkipped):
			// The format's options say to skip such values: the record
			// is done.
			st.stats.skipped.Add(1)
			p.settle(i, flow.Accept)
		case err != nil:
			st.stats.decodeErrors.Add(1)
			if m.settleFailed(p, i, st.src.onError, err, "that does not decode") {
				continue
			}
			// fail: deliver the rows before it, then end the stream. The
			// record and all after it are released, not lost.
			for j := i; j < len(recs); j++ {
				p.settle(j, flow.Release)
			}
			cut()
			return batches, &RecordError{Table: st.src.name, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, DeliveryCount: r.DeliveryCount(), Err: err}
		case n == 0:
			// A value with no rows (an empty JSON array) is done.
			p.settle(i, flow.Accept)
		default:
			ri := int32(len(ack.recs))
			ack.recs = append(ack.recs, int32(i))
			for k := 0; k < n; k++ {
				ack.rowRec = append(ack.rowRec, ri)
			}
			if m.rb.Full() {
				cut()
			}
		}
	}
	cut()
	return batches, nil
}

// deliver hands batches to the reader, one at a time. It reports false when
// the stream closed meanwhile; when fetching stopped, the batches not handed
// over are released and those the reader has are still settled.
func (m *member) deliver(ctx context.Context, batches []flow.Batch, locks *lockKeeper) bool {
	st := m.st
	st.sending.Add(int32(len(batches)))
	for i, b := range batches {
		ok := st.send(ctx, item{b: b}, locks)
		st.sending.Add(-1)
		if !ok {
			// Closed or no longer fetching: send released this batch;
			// release the rest too.
			for _, rest := range batches[i+1:] {
				st.discard(item{b: rest})
			}
			st.sending.Add(-int32(len(batches) - i - 1))
			return ctx.Err() == nil
		}
	}
	return true
}

// wait blocks until every record of p is settled, renewing the locks of
// those still out before they expire. It reports false when the stream
// closed first.
func (m *member) wait(ctx context.Context, p *poll, locks *lockKeeper) bool {
	for {
		select {
		case <-p.done:
			return true
		case <-ctx.Done():
			return false
		case <-locks.C():
			locks.renew(ctx)
		}
	}
}

// logExpired says so when records of p were settled after their locks may
// have run out: the broker may have handed them to another consumer too.
func (m *member) logExpired(p *poll) {
	p.mu.Lock()
	n := p.expired
	p.mu.Unlock()
	if n > 0 {
		m.st.log.Warn("records settled after their locks may have expired; another consumer may have them too, and they are not counted as accepted",
			"member", m.name, "records", n, "lock_until", p.lockUntil)
	}
}

// shutdown releases what this member still holds and leaves the group.
// Close sends the pending acknowledgements (our releases among them) before
// leaving, so another member gets the released records at once. Each step
// is bounded (see kafkaclient.Health.CloseContext): without a broker, the records'
// locks expire on the broker and it delivers them again.
func (m *member) shutdown() {
	if m.cur != nil {
		if m.st.dead != nil {
			// Dead letters on the wire settle their records as their
			// produce goes, which a broker does in milliseconds; one that
			// cannot be produced (its topic gone) must not hold Close up,
			// and its record is released below.
			ctx, cancel := context.WithTimeout(context.Background(), kafkaclient.CloseSilence)
			if err := m.st.dead.Flush(ctx); err != nil {
				m.st.log.Debug("dead letters not acknowledged before closing; their records are released", "member", m.name, "err", err)
			}
			cancel()
		}
		m.cur.releaseRest()
	}
	// What the client fetched ahead: released with the accepts while its
	// locks surely hold (a fetch of the moment the stream stopped, the
	// common case), apart from them otherwise. A release of records whose
	// locks ran out, which another consumer may hold by now, makes the
	// broker refuse every acknowledgement of the partition sent with it
	// (see releaseExpired): the rows delivered last would go out again.
	ahead := m.takeFetchedAhead()
	fresh := len(ahead) > 0 && m.lockDur > 0 && time.Until(m.lockDeadline(ahead)) >= m.lockDur/arrivalMargin
	if fresh {
		m.releaseAhead(ahead)
	}
	h, limit, start := m.st.health, m.st.src.client.RequestTimeout(), time.Now()
	// Send every queued acknowledgement (the accepts of delivered rows and
	// the releases above) on the open share session before leaving, rather
	// than racing them against the session's close.
	refused := m.refused.Load()
	ctx, cancel := h.CloseContext(start, limit)
	err := m.cl.FlushAcks(ctx)
	cancel()
	switch {
	case err != nil && m.acks.unconfirmed() > 0:
		m.closeErr = fmt.Errorf("member %s: acknowledgements of %d records not applied by Kafka at %s; those records will be delivered again: %w",
			m.name, m.acks.unconfirmed(), h.Seeds(), err)
	case m.refused.Load() > refused:
		m.closeErr = fmt.Errorf("member %s: acknowledgements of %d records not applied by Kafka at %s; those records will be delivered again: %w",
			m.name, m.refused.Load()-refused, h.Seeds(), *m.refusedErr.Load())
	}
	if m.closeErr != nil {
		m.st.log.Warn("acknowledgements not applied before leaving", "member", m.name, "err", m.closeErr)
	}
	if len(ahead) > 0 && !fresh {
		m.releaseAhead(ahead)
		ctx, cancel := h.CloseContext(start, limit)
		if err := m.cl.FlushAcks(ctx); err != nil {
			m.st.log.Debug("releasing records fetched ahead before leaving; leaving releases them too", "member", m.name, "err", err)
		}
		cancel()
	}
	// Leave with the same bound; Close then only tears down what is left.
	ctx, cancel = h.CloseContext(start, limit)
	if err := m.cl.LeaveGroupContext(ctx); err != nil {
		m.st.log.Debug("leaving the share group", "member", m.name, "err", err)
	}
	cancel()
	// franz-go's Close waits for its fetch loops, which a dead or frozen
	// broker holds for up to the fetch's wait plus 5 s: wait for it as
	// for the steps above, and past that let it finish on its own (see
	// closing), so that Ctrl-C returns at once.
	done := make(chan struct{})
	closing.Go(func() {
		m.cl.Close()
		close(done)
	})
	ctx, cancel = h.CloseContext(start, limit)
	select {
	case <-done:
	case <-ctx.Done():
		m.st.log.Debug("the kafka client finishes closing in the background", "member", m.name)
	}
	cancel()
	m.rb.Release()
}

// takeFetchedAhead takes what the client acquired beyond the member's
// last poll. franz-go's strict pull can grant the next fetch while a poll
// takes the buffered one (see locks.go); on a stream that stops fetching
// (a LIMIT reached, a Close) that fetch's records wait in the client's
// buffer. Leaving the group would release them too, but uncounted: taken
// here they are released (releaseAhead) and counted in Stats.FetchedAhead,
// since their delivery count went up for nothing. A fetch still on the
// wire is released by the broker when the member leaves.
func (m *member) takeFetchedAhead() []*kgo.Record {
	// A poll accepts whatever the one before left unmarked; every record
	// of the member's last poll is settled by now (run releases those of
	// a poll that failed).
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // take what is buffered, wait for nothing
	return m.cl.PollRecords(ctx, 0).Records()
}

// releaseAhead releases, undelivered, records takeFetchedAhead took.
func (m *member) releaseAhead(recs []*kgo.Record) {
	for _, r := range recs {
		r.Ack(kgo.AckRelease)
	}
	m.st.stats.fetchedAhead.Add(int64(len(recs)))
	m.st.log.Debug("released records fetched ahead", "member", m.name, "records", len(recs))
}

// discard frees a member that never ran: Open failed after it was built.
func (m *member) discard() {
	m.cl.Close()
	m.rb.Release()
}

// RecordError is a decode error together with the coordinates of the
// record at fault and how often the broker has handed it out:
// "orders[0]@1234 (delivery 2): field "quantity": expected INT, got "two"".
type RecordError struct {
	Topic         string
	Partition     int32
	Offset        int64
	DeliveryCount int32
	// Table is set when the record stopped a query of that table
	// ('scan.on-decode-error' = 'fail'). The record goes back to the group,
	// so every later query stops on it too until the broker's delivery
	// limit archives it; the message then says how to get past it.
	Table string
	Err   error
}

func (e *RecordError) Error() string {
	msg := fmt.Sprintf("%s[%d]@%d (delivery %d): %v", e.Topic, e.Partition, e.Offset, e.DeliveryCount, e.Err)
	if e.Table == "" {
		return msg
	}
	return msg + fmt.Sprintf("; under '%s' = '%s' every query stops at this record until the broker's delivery limit archives it; "+
		"to read past it, ALTER TABLE %s SET ('%s' = '%s') to drop it, or '%s' to hand it back and read on",
		OptOnDecodeError, OnDecodeErrorFail, options.Cut(types.QuoteIdent(e.Table)), OptOnDecodeError, OnDecodeErrorReject, OnDecodeErrorRelease)
}

func (e *RecordError) Unwrap() error { return e.Err }
