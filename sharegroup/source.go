package sharegroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkaadmin"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// source is a kafka-sharegroup table's reader factory: its options are
// parsed and checked; each Open starts new members of the share group.
type source struct {
	name   string // table name, for messages
	client *kafkaclient.Config
	// A member's settings beyond its client (see memberOpts).
	maxPollRecs int32 // 'properties.max.poll.records', its default computed by pollDefault
	pollSet     bool  // the table set 'properties.max.poll.records'
	strict      bool  // record_limit acquisition, when modeSet
	modeSet     bool  // the table set 'properties.share.acquire.mode'
	group       string
	topics      []string
	pattern     *regexp.Regexp
	parallelism int
	parallelSet bool // the table set 'source.parallelism'
	startup     string
	guarantee   string
	onError     string
	onEvalError string // 'scan.on-eval-error': the policy batchAck.FailRow applies
	deadTopic   string // 'scan.dead-letter.topic'; Validate allows it only with 'dead-letter'
	batchSize   int
	unavailable time.Duration // 'scan.broker-unavailable-timeout'; 0: retry forever
	// overLocks: the table's parallelism x max.poll.records exceeds the
	// broker's default per-partition lock cap (Open warns).
	overLocks bool

	schema *types.Schema
	bound  *table.Bound
}

var _ flow.Source = (*source)(nil)

// Open checks that the cluster answers and the topics exist, applies the
// startup mode to the group, and starts source.parallelism members.
func (s *source) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.BatchSize <= 0 {
		o.BatchSize = s.batchSize
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	partitions, deadLimit, err := s.prepare(ctx)
	if err != nil {
		return nil, err
	}
	st := &stream{
		src:     s,
		parts:   partitions,
		strict:  s.recordLimit(len(partitions)),
		maxPoll: s.maxPollRecs,
		schema:  s.schema.Arrow(),
		log:     o.Logger.With("table", s.name, "group", s.group),
		health:  kafkaclient.NewHealth(s.client.Seeds()),
	}
	if o.Limit > 0 {
		st.bound(o.Limit)
	}
	members := s.parallelism
	if o.Pace > 0 {
		members = st.pace(o.Pace)
	}
	st.out = make(chan item, members)
	if s.overLocks {
		st.log.Warn(fmt.Sprintf("'%s' x '%s' = %d x %d exceeds the %d records of one partition that the broker locks at once by default "+
			"(group.share.partition.max.record.locks): members will sit idle on a partition they share unless the broker's cap is raised; "+
			"lower '%s' or '%s'", OptParallelism, OptMaxPollRecords, s.parallelism, s.maxPollRecs, partitionRecordLocks, OptMaxPollRecords, OptParallelism))
	}
	if s.deadTopic != "" {
		if st.dead, err = s.newDeadLetter(st, deadLimit); err != nil {
			return nil, err
		}
	}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	st.fetchCtx, st.stopFetch = context.WithCancel(st.ctx)
	for i := 0; i < members; i++ {
		m, err := s.newMember(st, i, o)
		if err != nil {
			// The members built so far have not joined (nothing polled),
			// but each has a client with goroutines and a record builder.
			for _, m := range st.members {
				m.discard()
			}
			closeDeadLetters(st.dead)
			st.cancel()
			return nil, err
		}
		st.members = append(st.members, m)
	}
	st.stats.consumers = make([]atomic.Int64, len(st.members))
	track(st)
	st.wg.Go(func() {
		st.watch(st.ctx)
	})
	for _, m := range st.members {
		st.wg.Go(func() {
			m.run(st.ctx)
		})
	}
	return st, nil
}

// prepare is the I/O done once per Open before any member joins: it turns
// an unreachable cluster, refused credentials or a missing topic into an
// error at query start instead of a member that waits forever.
//
// It returns the partitions the table's topics have now, and the
// dead-letter topic's max.message.bytes (0: unknown or no such topic).
func (s *source) prepare(ctx context.Context) (partitions []flow.PartitionID, deadLimit int32, err error) {
	cl, err := kgo.NewClient(s.client.Opts()...)
	if err != nil {
		return nil, 0, table.Errorf(s.name, "kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.client.RequestTimeout()+time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	if len(s.topics) > 0 {
		tds, err := adm.ListTopics(ctx, s.topics...)
		if err != nil {
			return nil, 0, s.connectError(err)
		}
		var missing []string
		for _, t := range s.topics {
			td, ok := tds[t]
			switch {
			case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
				missing = append(missing, "'"+t+"'")
			case td.Err != nil:
				return nil, 0, table.Errorf(s.name, "topic '%s': %w", t, td.Err)
			default:
				partitions = appendPartitions(partitions, td)
			}
		}
		if len(missing) > 0 {
			word := "topic"
			if len(missing) > 1 {
				word = "topics"
			}
			return nil, 0, table.Errorf(s.name, "%s %s not found on %s; create it first, or check the 'topic' option", word, strings.Join(missing, ", "), strings.Join(s.client.Seeds(), ","))
		}
	} else {
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, 0, s.connectError(err)
		}
		for name, td := range tds {
			if s.pattern.MatchString(name) {
				partitions = appendPartitions(partitions, td)
			}
		}
	}
	var reset string
	switch s.startup {
	case StartupEarliestOffset:
		reset = "earliest"
	case StartupLatestOffset:
		reset = "latest"
	}
	if reset != "" {
		// share.auto.offset.reset is a property of the whole group, read
		// when the group first fetches a partition; a group that has
		// already started keeps its position.
		if err := kafkaadmin.SetShareGroupConfig(ctx, cl, s.group, map[string]string{"share.auto.offset.reset": reset}); err != nil {
			return nil, 0, table.Errorf(s.name, "applying 'scan.startup.mode' = '%s': %w", s.startup, err)
		}
	}
	if s.deadTopic != "" {
		if deadLimit, err = s.deadLetterTopic().Check(ctx, adm); err != nil {
			return nil, 0, err
		}
	}
	return partitions, deadLimit, nil
}

var _ flow.ShareProgress = (*source)(nil)

// ShareStartOffsets asks the cluster where the table's share group stands
// on each partition it has state for (flow.ShareProgress). A partition
// whose state the broker does not give is left out.
func (s *source) ShareStartOffsets(ctx context.Context) (string, []flow.PartitionStart, error) {
	cl, err := kgo.NewClient(s.client.Opts()...)
	if err != nil {
		return "", nil, table.Errorf(s.name, "kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, s.client.RequestTimeout()+time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).DescribeShareGroupOffsets(ctx, s.group)
	if err == nil {
		err = offs[s.group].Err
	}
	if err != nil {
		return "", nil, table.Errorf(s.name, "describing the offsets of share group '%s': %w", s.group, err)
	}
	var starts []flow.PartitionStart
	offs[s.group].Offsets.Each(func(so kadm.ShareOffset) {
		if so.Err == nil && so.StartOffset >= 0 {
			starts = append(starts, flow.PartitionStart{Topic: so.Topic, Partition: so.Partition, Offset: so.StartOffset})
		}
	})
	return s.group, starts, nil
}

// recordLimit tells whether the members of a stream acquire in record_limit
// mode. Unless the table says, they do when they outnumber the partitions:
// in batch_optimized mode one member may then take a whole producer batch
// (thousands of records) and leave the others of its partition idle, while
// with a partition or more each, batch_optimized read 1.6x to 3.3x faster
// (whole batches per fetch, none split; see docs/delivery.md).
func (s *source) recordLimit(partitions int) bool {
	if s.modeSet {
		return s.strict
	}
	return s.parallelism > partitions
}

// bound sizes the members' polls for a reader that needs at most limit
// records (flow.OpenOptions.Limit): a member takes no more than limit
// records at once, in record_limit mode so that the broker splits
// producer batches to keep to it. Whatever a poll takes beyond what the
// reader needs goes back released with its delivery count raised: a few
// LIMIT 1 queries over polls of 500 would bring the records behind the
// first toward the broker's delivery limit. What the table set itself
// stands, and a bound no smaller than a poll changes nothing: record_limit
// would only slow the reading (kshare --max-rows 500000 read 0.6x the
// records/s of batch_optimized on 1 and 8 partitions, side by side).
func (st *stream) bound(limit int64) {
	s := st.src
	if limit >= int64(st.maxPoll) {
		return
	}
	if !s.pollSet {
		st.maxPoll = int32(limit)
	}
	if !s.modeSet {
		st.strict = true
	}
}

// pace sizes the stream for a slow reader that works on about n records
// at once (flow.OpenOptions.Pace: a model's calls in flight) and returns
// how many members to run. Each member polls at most 4n records, in
// record_limit mode, so that a process holds about what it works on and
// the broker's lock cap of a partition (2,000 records) is left to the other
// processes of the group: 16 processes behind one partition each take their
// share, where polls of 500 let four of them hold every record the broker
// hands out. Two members, so that one fetches while the other's records
// are worked on: a member polls again only once its last poll's records
// are all settled, and one member alone leaves the reader idle at each
// poll's end. What the table sets itself stands.
func (st *stream) pace(n int) int {
	s := st.src
	if !s.pollSet {
		st.maxPoll = int32(min(int64(st.maxPoll), 4*int64(n)))
	}
	if !s.modeSet {
		st.strict = true
	}
	if s.parallelSet {
		return s.parallelism
	}
	return max(s.parallelism, 2)
}

// connectError says what a user checks when the first contact fails.
func (s *source) connectError(err error) error {
	seeds := strings.Join(s.client.Seeds(), ",")
	var ke *kerr.Error
	if errors.As(err, &ke) && (ke == kerr.SaslAuthenticationFailed || ke == kerr.IllegalSaslState || ke == kerr.UnsupportedSaslMechanism) {
		mechanism, user := s.client.Identity()
		return table.Errorf(s.name, "authentication to Kafka at %s failed (mechanism %s, user '%s'); check 'properties.sasl.*': %w", seeds, mechanism, user, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return table.Errorf(s.name, "no answer from Kafka at %s within %s; check 'bootstrap.servers', 'properties.security.protocol' and that the broker is running", seeds, s.client.RequestTimeout())
	}
	return table.Errorf(s.name, "cannot reach Kafka at %s; check 'bootstrap.servers' and that the broker is running: %w", seeds, err)
}

// item is what members hand the stream: a batch, or the error that ends it.
type item struct {
	b   flow.Batch
	err error
}

// appendPartitions adds a topic's partitions to ids.
func appendPartitions(ids []flow.PartitionID, td kadm.TopicDetail) []flow.PartitionID {
	for _, p := range td.Partitions.Numbers() {
		ids = append(ids, flow.PartitionID{Topic: td.Topic, Partition: p})
	}
	return ids
}

// stream merges the batches of a table's members.
type stream struct {
	src     *source
	parts   []flow.PartitionID // the topics' partitions when it opened
	strict  bool               // record_limit acquisition (see recordLimit and bound)
	maxPoll int32              // the most records a member takes at once (see bound)
	schema  *arrow.Schema
	out     chan item
	log     *slog.Logger
	members []*member
	health  *kafkaclient.Health
	dead    *kafkaclient.DeadLetters // nil unless 'scan.on-decode-error' or 'scan.on-eval-error' = 'dead-letter'

	ctx    context.Context // the members' lifetime, ended by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// fetchCtx is the members' polling, ended by StopFetching or Close.
	fetchCtx  context.Context
	stopFetch context.CancelFunc

	closeOnce sync.Once
	closeErr  error
	// closed is set once the members have stopped: an acknowledgement
	// still unanswered then is not on its way any more (see Stats).
	closed atomic.Bool
	stats  counters

	// waiting counts the members that handed out (or are handing out)
	// their poll's batches and poll nothing until the reader settles them;
	// sending, the batches being handed out and not yet in the queue.
	waiting, sending atomic.Int32
}

var (
	_ flow.Stream       = (*stream)(nil)
	_ flow.ReaderWaiter = (*stream)(nil)
	_ flow.Partitioned  = (*stream)(nil)
)

// Partitions are the partitions of the table's topics when the stream
// opened. A member may be handed records of only some of them (the broker
// splits partitions among members when they are fewer), which a reader
// learns by their silence (see query's watermark).
func (st *stream) Partitions() []flow.PartitionID { return st.parts }

// WaitsForReader reports whether a member waits for the reader to settle
// what it handed out while no batch is queued or on its way: the reader
// has taken everything there is, and holding on only keeps that member
// from polling (the others, if any, are fetching).
func (st *stream) WaitsForReader() bool {
	return st.waiting.Load() > 0 && st.sending.Load() == 0 && len(st.out) == 0
}

func (st *stream) Schema() *arrow.Schema { return st.schema }

func (st *stream) Next(ctx context.Context) (flow.Batch, error) {
	select {
	case it := <-st.out:
		return it.b, it.err
	case <-ctx.Done():
		return flow.Batch{}, ctx.Err()
	case <-st.ctx.Done():
		return flow.Batch{}, errStreamClosed
	}
}

var errStreamClosed = errors.New("stream closed")

// Close stops the members; each releases what it holds and leaves the group.
// Batches still queued are abandoned (released) and their memory freed.
func (st *stream) Close() error {
	st.closeOnce.Do(func() {
		st.cancel()
		done := make(chan struct{})
		go func() {
			st.wg.Wait()
			close(done)
		}()
		// Drain while the members stop: one may be blocked handing over a
		// batch, and a drained batch must be released, not dropped.
		for {
			select {
			case it := <-st.out:
				st.discard(it)
				continue
			case <-done:
			}
			break
		}
		for {
			select {
			case it := <-st.out:
				st.discard(it)
				continue
			default:
			}
			break
		}
		closeDeadLetters(st.dead)
		st.closed.Store(true)
		var errs []error
		for _, m := range st.members {
			if err := m.closeErr; err != nil {
				errs = append(errs, err)
			}
		}
		st.closeErr = errors.Join(errs...)
		untrack(st)
	})
	return st.closeErr
}

func (st *stream) discard(it item) {
	if it.b.Ack != nil {
		it.b.Ack.Abandon()
	}
	if it.b.Record != nil {
		it.b.Record.Release()
	}
}

var _ flow.FetchStopper = (*stream)(nil)

// StopFetching: see flow.FetchStopper. The members poll no more; each
// waits for the batches of its last poll that the reader has, and leaves.
func (st *stream) StopFetching() {
	st.stopFetch()
	st.discardQueued()
}

// discardQueued releases the batches waiting for the reader.
func (st *stream) discardQueued() {
	for {
		select {
		case it := <-st.out:
			st.discard(it)
		default:
			return
		}
	}
}

// send hands an item to the reader, or gives up (releasing it) when the
// stream closes or stops fetching. It reports whether the reader took it.
// While it waits for the reader, it renews the locks that locks keeps (nil:
// none).
func (st *stream) send(ctx context.Context, it item, locks *lockKeeper) bool {
	if st.fetchCtx.Err() != nil {
		st.discard(it)
		return false
	}
	var renew <-chan time.Time
	if locks != nil {
		renew = locks.C()
	}
	for {
		select {
		case st.out <- it:
			if st.fetchCtx.Err() != nil {
				// StopFetching may have emptied the queue before this item
				// landed in it: take one back, so that none is left.
				select {
				case back := <-st.out:
					st.discard(back)
				default:
				}
			}
			return true
		case <-renew:
			locks.renew(ctx)
		case <-ctx.Done():
			st.discard(it)
			return false
		case <-st.fetchCtx.Done():
			st.discard(it)
			return false
		}
	}
}

func (st *stream) Stats() flow.Stats {
	s := flow.Stats{
		Records:          st.stats.records.Load(),
		Rows:             st.stats.rows.Load(),
		Accepted:         st.stats.accepted.Load(),
		Released:         st.stats.released.Load(),
		Rejected:         st.stats.rejected.Load(),
		Redelivered:      st.stats.redelivered.Load(),
		DecodeErrors:     st.stats.decodeErrors.Load(),
		EvalErrors:       st.stats.evalErrors.Load(),
		Skipped:          st.stats.skipped.Load(),
		Renewed:          st.stats.renewed.Load(),
		DeadLettered:     st.stats.deadLettered.Load(),
		DeadLetterFailed: st.stats.deadLetterFailed.Load(),
		AckRefused:       st.stats.refused.Load(),
		LockExpired:      st.stats.lockExpired.Load(),
		ExpiredOnArrival: st.stats.expiredOnArrival.Load(),
		FetchedAhead:     st.stats.fetchedAhead.Load(),
		Brokers:          st.health.Seeds(),
	}
	s.AcceptsLost = st.stats.acceptsLost.Load()
	closed := st.closed.Load()
	for _, m := range st.members {
		s.AckUnconfirmed += m.acks.unconfirmed()
		if closed {
			// The members stopped without an answer for these accepts:
			// the broker hands their records out again. A late answer
			// (the client finishing its close) moves them to refused,
			// which counts them here too, or to accepted, which rightly
			// does not.
			s.AcceptsLost += m.acks.unconfirmedOf(flow.Accept)
		}
	}
	s.Unreachable = st.health.Outage()
	for i, m := range st.members {
		if i < len(st.stats.consumers) {
			s.Consumers = append(s.Consumers, flow.ConsumerStats{Name: m.name, Records: st.stats.consumers[i].Load()})
		}
	}
	return s
}

// counters are a stream's statistics, updated by members as they work.
type counters struct {
	records, rows                      atomic.Int64
	accepted, released, rejected       atomic.Int64
	redelivered, decodeErrors, skipped atomic.Int64
	evalErrors                         atomic.Int64
	renewed, refused, lockExpired      atomic.Int64
	acceptsLost                        atomic.Int64 // accepts refused (see Stats for those unanswered)
	expiredOnArrival, fetchedAhead     atomic.Int64
	deadLettered, deadLetterFailed     atomic.Int64
	consumers                          []atomic.Int64
}

// confirmed counts n acknowledgements of disposition d that the broker
// applied.
func (c *counters) confirmed(d flow.Disposition, n int64) {
	switch d {
	case flow.Accept:
		c.accepted.Add(n)
	case flow.Release:
		c.released.Add(n)
	case flow.Reject:
		c.rejected.Add(n)
	}
}
