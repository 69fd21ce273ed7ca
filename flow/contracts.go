package flow

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// A Source reads a table. Open may be called any number of times; each
// stream is independent (for kafka-sharegroup: new members of the group).
type Source interface {
	// Open connects and starts reading. ctx bounds the connecting only; the
	// stream lives until Close.
	Open(ctx context.Context, o OpenOptions) (Stream, error)
}

// WriteOnly is the Source of a table whose connector only writes ('print',
// 'blackhole', 'filesystem'): opening it says so and what to do, and hint,
// if any, is said after that.
func WriteOnly(name, connector, hint string) Source {
	return writeOnly{name, connector, hint}
}

type writeOnly struct{ table, connector, hint string }

func (w writeOnly) Open(context.Context, OpenOptions) (Stream, error) {
	hint := ""
	if w.hint != "" {
		hint = ", and " + w.hint
	}
	return nil, fmt.Errorf("table '%s' has connector '%s', which kshare writes but cannot read; use it as the target of INSERT INTO%s",
		options.Cut(w.table), w.connector, hint)
}

// A Looker is a Source that reads without taking: it joins no share group
// and settles nothing, so a query over it consumes nothing, not even the
// records its WHERE filters out (TABLE(PEEK(TABLE t)) reads so).
type Looker interface {
	Source
	// TakesNothing marks the source; it does nothing.
	TakesNothing()
}

// OpenOptions are the reader's wishes for a stream.
type OpenOptions struct {
	// Alloc allocates every batch; nil means memory.DefaultAllocator.
	Alloc memory.Allocator
	// BatchSize bounds the rows of one batch; 0 means the source's default.
	BatchSize int
	// Logger receives the source's warnings (rejected records, say); nil
	// means slog.Default().
	Logger *slog.Logger
	// Keep, if set, is where the query keeps rows on disk (a job's state
	// directory): a lookup join hands it to the table it looks up
	// (LookupOptions.Keep). Sources that keep nothing ignore it.
	Keep Keep
	// Limit, if above 0, is the most records the reader will need: it
	// takes that many rows at most (a query's LIMIT or max-rows), and
	// every record gives it one or more. A source that takes records from
	// a broker ahead of its reader (a share group's poll, whose records it
	// locks and must hand back) then takes no more than that many at a
	// time. 0: no bound, or one that says nothing of how many records the
	// reader needs (a WHERE that drops rows, an aggregation).
	Limit int64
	// Pace, if above 0, says the reader is slow: it works on about this
	// many records at once (ML_PREDICT: the model's calls in flight). A
	// source that takes records ahead of its reader then takes no more
	// than it needs to keep the reader busy, and leaves the rest to the
	// other readers of its share group (see kafka-sharegroup's Open).
	Pace int
}

// A Stream is an open read of a table: a sequence of batches, each of which
// its reader settles.
type Stream interface {
	// Schema is the schema of every batch: the table's columns.
	Schema() *arrow.Schema
	// Next waits for the next batch. The caller owns b.Record (Release it)
	// and must settle b.Ack exactly once (Done or Abandon). Next returns
	// io.EOF when a bounded source has no more rows, and ctx.Err() when ctx
	// ends first; in that case no batch is lost: Close releases what was
	// queued.
	Next(ctx context.Context) (Batch, error)
	// Stats counts what the stream has done so far. Safe to call from any
	// goroutine.
	Stats() Stats
	// Close stops reading, releases every record held and not settled (so
	// the broker can hand it to another member at once), and waits for the
	// stream's goroutines. A batch that is out but not settled is abandoned.
	Close() error
}

// A FetchStopper is a Stream that can stop taking records while the
// batches it handed out are still settled, as a pipeline that drains needs:
// after StopFetching the stream fetches nothing more, releases at once
// every record it fetched and has not handed out (so that another member of
// the group gets them without waiting for their locks), and keeps what it
// needs to settle the batches that are out until they are settled or Close.
// Safe to call from any goroutine, more than once, and after Close.
type FetchStopper interface {
	StopFetching()
}

// A ReaderWaiter is a Stream that tells when it waits for its reader: the
// reader took every batch there is, and a member that handed some out
// fetches nothing more until the reader settles them (a share-group member
// polls again only then). A reader that holds batches back (a window
// aggregation) then emits what reflects them at once instead of after a
// quiet spell: holding on would only keep that member idle. Safe to call
// from any goroutine; found by type assertion.
type ReaderWaiter interface {
	WaitsForReader() bool
}

// A Partitioned is a Stream that can name the partitions its records come
// from before any of them arrives (a Kafka topic's). An event-time window
// aggregation holds its watermark back until each of them delivered a
// record or went idle, so that the first partition read does not close the
// windows the others still have records for (Flink's per-split
// watermarks). A row's partition is its record's Origin (RowOrigins), by
// Topic and Partition. Safe to call from any goroutine; found by type
// assertion.
type Partitioned interface {
	Partitions() []PartitionID
}

// PartitionID names one partition of a topic.
type PartitionID struct {
	Topic     string
	Partition int32
}

// Batch is a record batch together with the handle that settles its rows.
type Batch struct {
	Record arrow.RecordBatch
	Ack    Acker
	// Kinds are, for a changelog table (a ChangelogFormat), each row's
	// kind of change; nil means every row is an insert.
	Kinds []RowKind
}

// Disposition is what becomes of a row's record.
type Disposition uint8

const (
	// Accept: delivered, done.
	Accept Disposition = iota
	// Release: not delivered; the broker hands it out again.
	Release
	// Reject: never deliver again (the broker archives it).
	Reject
)

// dispositions are the Dispositions' names, in the constants' order.
var dispositions = [...]string{Accept: "accept", Release: "release", Reject: "reject"}

func (d Disposition) String() string {
	if int(d) < len(dispositions) {
		return dispositions[d]
	}
	return fmt.Sprintf("disposition(%d)", uint8(d))
}

// An Acker settles the records behind one batch's rows. A record that gave
// several rows is accepted only if all of them were; released if any was
// released; otherwise rejected if any was rejected.
type Acker interface {
	// Mark sets the disposition of row (default Accept). Call before Done.
	Mark(row int, d Disposition)
	// Done settles the batch as delivered: unmarked rows are accepted.
	Done()
	// Abandon settles the batch as not delivered: every row not marked
	// Reject is released.
	Abandon()
}

// NoAck is the Acker of batches whose rows settle nothing: a plain
// reader's (it read without taking), an at-most-once source's (accepted on
// receipt), or a row that came from no record (SELECT 1).
type NoAck struct{}

func (NoAck) Mark(int, Disposition) {}
func (NoAck) Done()                 {}
func (NoAck) Abandon()              {}

// A RowFailer is an Acker whose table has a policy for rows that a query
// cannot evaluate (a division by zero, a CAST that does not fit):
// kafka-sharegroup's 'scan.on-eval-error'. The query then leaves such rows
// out and goes on, instead of ending with the error. It is a capability
// found by type assertion; a batch whose Acker lacks it ends the query.
type RowFailer interface {
	Acker
	// FailsRows reports whether the table's policy settles the records of
	// such rows (reject, release, dead-letter); false ('fail', the
	// default) means the query ends with the error.
	FailsRows() bool
	// FailRow settles the record behind row, whose evaluation failed with
	// err, by the policy: at once, or for a dead letter once its produce
	// is answered (accepted if it was acknowledged, released if not). It
	// returns the rows [from, to) that the record gave, row among them: a
	// record is settled as a whole, so the caller leaves all of them out
	// of its result and calls FailRow for none of them again. Call before
	// Done or Abandon, which then leave that record alone.
	FailRow(row int, err error) (from, to int)
}

// Stats counts a stream's work.
type Stats struct {
	Records      int64 // records received
	Rows         int64 // rows produced
	Accepted     int64
	Released     int64
	Rejected     int64
	Redelivered  int64 // records received with a delivery count above 1 (see AcceptsLost)
	DecodeErrors int64
	// EvalErrors counts records whose row a query could not evaluate and
	// that the table's policy settled (RowFailer) instead of failing it.
	EvalErrors int64
	Skipped    int64 // values the format skipped (ignore-parse-errors)
	Renewed    int64 // lock renewals sent for records still being delivered
	// DeadLettered counts records produced to the dead-letter topic (and
	// so accepted); DeadLetterFailed those whose produce failed (released).
	DeadLettered     int64
	DeadLetterFailed int64
	// Accepted, Released and Rejected count what the broker confirmed.
	// AckRefused counts acknowledgements it refused or that could not be
	// sent (the broker went away, say): their records come again.
	// AckUnconfirmed counts those sent without an answer yet.
	AckRefused     int64
	AckUnconfirmed int64
	// AcceptsLost counts records this stream accepted (their rows
	// delivered, or filtered out) whose accept the broker did not apply:
	// refused or never sent, or still unanswered when the stream closed
	// (a broker that stalled or went away). The broker delivers each of
	// them again, to this stream or to another consumer (another process,
	// say), so their rows are seen twice; only the consumer that receives
	// one again counts it in Redelivered.
	AcceptsLost int64
	// LockExpired counts records settled after their lock may have run
	// out: the broker may have handed them to another consumer as well,
	// and it answers an acknowledgement of a record that consumer has
	// since settled as if it were applied, so they are counted here and
	// in none of Accepted, Released and Rejected.
	LockExpired int64
	// ExpiredOnArrival counts records released undelivered because their
	// lock had nearly run out when the client handed them over (it had
	// fetched them while the previous poll was still being delivered).
	ExpiredOnArrival int64
	// FetchedAhead counts records the client acquired beyond what the
	// stream needed and that went back undelivered when it closed, their
	// delivery count raised: franz-go can start the next fetch while a
	// poll takes the last one's records (see sharegroup/locks.go).
	FetchedAhead int64
	Consumers    []ConsumerStats
	// Model counts the model calls of a stream read through a model
	// (ML_PREDICT); nil for other streams.
	Model *ModelStats
	// Lookup counts the lookups of a stream joined with a looked-up table
	// (a lookup join); nil for other streams.
	Lookup *LookupStats
	// Unreachable is when the stream's brokers (Brokers) stopped
	// answering, while none answers; zero otherwise.
	Unreachable time.Time
	Brokers     string
}

// Add adds o's counts of records to s: each count but AckUnconfirmed,
// which says what is waiting now rather than what happened. It leaves
// Consumers, Model, Lookup, Unreachable and Brokers alone.
func (s *Stats) Add(o Stats) {
	s.Records += o.Records
	s.Rows += o.Rows
	s.Accepted += o.Accepted
	s.Released += o.Released
	s.Rejected += o.Rejected
	s.Redelivered += o.Redelivered
	s.DecodeErrors += o.DecodeErrors
	s.EvalErrors += o.EvalErrors
	s.Skipped += o.Skipped
	s.Renewed += o.Renewed
	s.AckRefused += o.AckRefused
	s.AcceptsLost += o.AcceptsLost
	s.LockExpired += o.LockExpired
	s.ExpiredOnArrival += o.ExpiredOnArrival
	s.FetchedAhead += o.FetchedAhead
	s.DeadLettered += o.DeadLettered
	s.DeadLetterFailed += o.DeadLetterFailed
}

// ModelStats count the calls a query made of a model (ML_PREDICT): each
// call by what became of it, how long the calls took, the tokens the server
// said they used, and what runs now. A row's retries are calls of their
// own, so Calls can exceed the rows.
type ModelStats struct {
	// Model is the model's name.
	Model string
	// Calls counts every call made, whatever became of it: the sum of the
	// outcomes below.
	Calls int64
	// OK counts calls answered with an answer that fits OUTPUT.
	OK int64
	// RateLimited counts calls the server refused with 429; ServerErrors
	// those it answered with a 5xx status or 408; Timeouts those without
	// an answer within 'timeout'; ConnectionErrors those whose connection
	// failed. All four are worth retrying.
	RateLimited, ServerErrors, Timeouts, ConnectionErrors int64
	// ClientErrors counts calls refused with another 4xx status, and
	// BadAnswers answers that could not be read or do not fit OUTPUT: the
	// row's own fault (an evaluation error of the row), or, for an answer
	// that is not what the provider speaks at all, worth retrying.
	ClientErrors, BadAnswers int64
	// Failed counts calls that failed in another way (a 'command'
	// program that rejected or released the row, say).
	Failed int64
	// Retries counts calls that were a row's second or later attempt.
	Retries int64
	// TokensIn and TokensOut are the tokens the server counted for the
	// calls' prompts and answers (OpenAI's usage); 0 when it says none.
	TokensIn, TokensOut int64
	// CallsInFlight are calls waiting for their answer now; RowsInFlight
	// rows handed to the model and not done yet (in a call, waiting for a
	// slot, a turn of 'rate-limit' or 'tokens-per-minute', or a retry).
	CallsInFlight, RowsInFlight int64
	// Latency is the calls' durations, whatever their outcome.
	Latency Histogram
}

// Outcomes are the counts of ModelStats by outcome, with the names the
// metrics give them, in a fixed order.
func (m *ModelStats) Outcomes() []OutcomeCount {
	return []OutcomeCount{{"ok", m.OK}, {"rate_limited", m.RateLimited}, {"server_error", m.ServerErrors},
		{"timeout", m.Timeouts}, {"connection_error", m.ConnectionErrors}, {"client_error", m.ClientErrors},
		{"bad_answer", m.BadAnswers}, {"failed", m.Failed}}
}

// Summary is the stats on one line, for SHOW JOBS: "1200 calls (1150 ok,
// 50 rate_limited), p50 <= 50ms, p99 <= 100ms, 3 in flight, tokens 9000
// in, 4000 out"; parts that are zero are left out.
func (m *ModelStats) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls", m.Calls)
	var parts []string
	for _, o := range m.Outcomes() {
		if o.Calls > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", o.Calls, o.Outcome))
		}
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		if d, ok := m.Latency.Quantile(q.q); ok {
			fmt.Fprintf(&b, ", %s <= %s", q.name, d)
		} else if m.Latency.Count() > 0 {
			fmt.Fprintf(&b, ", %s > %s", q.name, LatencyBounds[len(LatencyBounds)-1])
		}
	}
	if m.RowsInFlight > 0 {
		fmt.Fprintf(&b, ", %d in flight", m.RowsInFlight)
	}
	if m.TokensIn > 0 || m.TokensOut > 0 {
		fmt.Fprintf(&b, ", tokens %d in, %d out", m.TokensIn, m.TokensOut)
	}
	return b.String()
}

// OutcomeCount is a count of calls with one outcome.
type OutcomeCount struct {
	Outcome string
	Calls   int64
}

// Add adds o's counts and durations into m (for the totals of several
// queries of one model); the gauges are added too.
func (m *ModelStats) Add(o *ModelStats) {
	m.Calls += o.Calls
	m.OK += o.OK
	m.RateLimited += o.RateLimited
	m.ServerErrors += o.ServerErrors
	m.Timeouts += o.Timeouts
	m.ConnectionErrors += o.ConnectionErrors
	m.ClientErrors += o.ClientErrors
	m.BadAnswers += o.BadAnswers
	m.Failed += o.Failed
	m.Retries += o.Retries
	m.TokensIn += o.TokensIn
	m.TokensOut += o.TokensOut
	m.CallsInFlight += o.CallsInFlight
	m.RowsInFlight += o.RowsInFlight
	m.Latency.Add(&o.Latency)
}

// LatencyBounds are the upper bounds of Histogram's buckets: from a call
// on loopback to a long generation.
var LatencyBounds = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute,
}

// Histogram counts durations in the buckets of LatencyBounds: Counts[i] the
// durations at most LatencyBounds[i] and above the bound before, the last
// count those above every bound. The zero Histogram is empty.
type Histogram struct {
	Counts []int64
	Sum    time.Duration
}

// Observe counts d.
func (h *Histogram) Observe(d time.Duration) {
	if h.Counts == nil {
		h.Counts = make([]int64, len(LatencyBounds)+1)
	}
	i := 0
	for i < len(LatencyBounds) && d > LatencyBounds[i] {
		i++
	}
	h.Counts[i]++
	h.Sum += d
}

// Count is how many durations h counted.
func (h *Histogram) Count() int64 {
	var n int64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Add adds o's counts into h.
func (h *Histogram) Add(o *Histogram) {
	if o.Counts == nil {
		return
	}
	if h.Counts == nil {
		h.Counts = make([]int64, len(LatencyBounds)+1)
	}
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.Sum += o.Sum
}

// Clone is a copy of h that shares nothing with it.
func (h Histogram) Clone() Histogram {
	h.Counts = append([]int64(nil), h.Counts...)
	return h
}

// Quantile is the bound of the bucket that holds the q-th quantile (0 < q
// <= 1) of the durations: the q-th quantile is at most that. ok is false
// when h is empty or the quantile lies above every bound.
func (h *Histogram) Quantile(q float64) (bound time.Duration, ok bool) {
	n := h.Count()
	if n == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			if i == len(LatencyBounds) {
				return 0, false
			}
			return LatencyBounds[i], true
		}
	}
	return 0, false
}

// ConsumerStats counts one consumer's (group member's) records.
type ConsumerStats struct {
	Name    string
	Records int64
}

// A Sink writes rows into a table.
type Sink interface {
	// Columns are the columns a written row has, in order: the table's
	// physical columns and then its persisted (not VIRTUAL) metadata
	// columns, as Flink's INSERT INTO reads them.
	Columns() []types.Column
	// Open connects and checks the destination (for 'kafka': the topic
	// exists), so that an INSERT that cannot write fails before anything
	// is read. ctx bounds the connecting only.
	Open(ctx context.Context) (Writer, error)
}

// A Writer is an open sink. Write may be called from one goroutine at a
// time; done callbacks come from the writer's own goroutines.
type Writer interface {
	// Write sends every row of rec (whose columns are Sink.Columns, in
	// order) and returns once they are handed on; it does not keep rec.
	// done is called exactly once, from any goroutine: with nil when every
	// row was acknowledged by the destination (a Kafka produce with
	// acks=all), or with the first failure, a *RowError naming the row. An
	// error from Write itself (a row the format cannot encode) means done
	// is not called and no row of rec was sent.
	Write(ctx context.Context, rec arrow.RecordBatch, done func(error)) error
	// Close waits for the done of every Write (ending those not
	// acknowledged yet with an error) and disconnects.
	Close() error
	// Stats counts the rows written and acknowledged so far. Safe from
	// any goroutine.
	Stats() SinkStats
}

// A LoggingWriter is a Writer that says on a logger what happens to its
// destination (Kafka brokers that stop answering, and answer again). The
// engine gives it the logger its sources log to; without one it logs to
// slog.Default().
type LoggingWriter interface {
	Writer
	SetLogger(*slog.Logger)
}

// A Flusher is a Writer that holds its acknowledgements until it commits
// what it wrote (the 'filesystem' sink's part files): Flush commits now,
// so that a job whose input ended need not wait for the writer's own
// policy. The done callbacks come as usual. It is a capability found by
// type assertion.
type Flusher interface {
	Writer
	Flush()
}

// A ChangelogSink is a Sink that takes the changes of an updating query
// (GROUP BY, a window's early and late rows: see RowKind), as Flink's print
// and blackhole sinks do; its writers are ChangelogWriters. INSERT INTO a
// sink that is not one refuses an updating query: a sink that only appends
// would keep every version of a group's row. It is a capability found by
// type assertion.
type ChangelogSink interface {
	Sink
	TakesChanges()
}

// A KeyedSink writes by the table's PRIMARY KEY (see KeyedConnector): an
// updating query's changes replace, by key, the rows of earlier ones, so
// INSERT INTO checks at statement time that the query's rows are keyed by
// the same columns. It is a capability found by type assertion.
type KeyedSink interface {
	Sink
	// PrimaryKey are the positions among Columns of the key's columns,
	// in key order.
	PrimaryKey() []int
}

// A ChangelogWriter writes an updating query's batches: kinds[i] is what
// row i of rec is. One batch is written at a time, since a batch's rows
// replace earlier ones; it keeps neither rec nor kinds, and done comes as
// for Write.
type ChangelogWriter interface {
	Writer
	WriteChanges(ctx context.Context, rec arrow.RecordBatch, kinds []RowKind, done func(error)) error
}

// An OriginWriter writes each row together with the identity of the
// source record it came from, in one step: a sink that makes its effect
// exactly once ('jdbc' with 'sink.delivery-guarantee' = 'exactly-once')
// stores the identities with the rows and skips a record delivered again
// whose rows it already wrote. origins[i] is row i's record (several rows
// may share one); done comes as for Write, and a row skipped that way
// counts as written. A job writes a query without aggregation this way
// when its writer is one; INSERT refuses at statement time what cannot
// give every row's origin (see RecordIdentifier).
type OriginWriter interface {
	Writer
	WriteFrom(ctx context.Context, rec arrow.RecordBatch, origins []Origin, done func(error)) error
}

// A TxnWriter writes in transactions that commit with a job's state (a
// 'kafka' table with 'sink.delivery-guarantee' = 'exactly-once'): what it
// acknowledged since the last commit is in an open transaction that a
// reader with read_committed does not see. The job stores the token
// Prepare returns together with its state, in one durable write, and only
// then calls Commit; a job started again on that state first hands the
// stored token to Recover, which finishes that transaction (commits it,
// or, if it can no longer be committed, writes its records again in a new
// one), so that each row is seen once whatever instant the process died
// at. It is a capability found by type assertion.
type TxnWriter interface {
	Writer
	// Transactional reports whether the writer writes in transactions
	// (its table says exactly once); the others need none of this.
	Transactional() bool
	// Prepare returns the token of the open transaction once everything
	// written in it is acknowledged; nil when nothing was written since
	// the last Commit.
	Prepare(ctx context.Context) ([]byte, error)
	// Commit commits the transaction Prepare returned the token of.
	Commit(ctx context.Context) error
	// Recover finishes the transaction of a token a job stored, before
	// anything is written.
	Recover(ctx context.Context, token []byte) error
}

// MergeOp is how a column of an aggregate's result merges into the row a
// destination holds for the same key, so that several replicas of one
// query, each folding part of a share group's records, and the runs of one
// query across restarts (each starting its groups from nothing) add up to
// the totals of all records.
type MergeOp uint8

const (
	// MergeKey is a GROUP BY column: part of the row's key.
	MergeKey MergeOp = iota
	// MergeAdd adds what the change adds (COUNT, SUM): the value after it
	// less the value before it.
	MergeAdd
	// MergeMin keeps the smaller value (MIN over inserts).
	MergeMin
	// MergeMax keeps the larger value (MAX over inserts).
	MergeMax
)

// A MergeWriter writes an aggregate's changes exactly once, from any number
// of replicas of the query and across its restarts: each batch of changes
// is written as the difference it makes, merged column by column into the
// destination's rows, in one transaction with the identities of the source
// records the batch reflects ('jdbc' with 'sink.delivery-guarantee' =
// 'exactly-once'). A record delivered again whose identity a transaction
// holds (Applied) is accepted without being folded again: its effect is
// in the destination already.
type MergeWriter interface {
	Writer
	// WriteMerged writes the changes rec (their kinds: +I, -U, +U; the -U
	// of a key before its +U) that the records origins made, merging
	// column i by ops[i]; done comes once they and the identities are
	// durable, as for Write.
	WriteMerged(ctx context.Context, rec arrow.RecordBatch, kinds []RowKind, ops []MergeOp, origins []Origin, done func(error)) error
	// Applied reports which of records, each delivered more than once,
	// a committed transaction reflects.
	Applied(ctx context.Context, records []Origin) ([]bool, error)
}

// PartitionStart is where a share group stands on one partition: every
// record of it before Offset is settled for good (accepted, rejected or
// archived) and will never be delivered again.
type PartitionStart struct {
	Topic     string
	Partition int32
	Offset    int64
}

// A ShareProgress is a Source read through a share group that can tell
// where the group stands: its start offset on each partition it holds
// state for. A job that writes into a Pruner asks it from time to time.
type ShareProgress interface {
	ShareStartOffsets(ctx context.Context) (group string, starts []PartitionStart, err error)
}

// A Pruner is an OriginWriter that keeps the identities of the records it
// wrote, and can forget those that can never be delivered again: the
// records of group before starts. Prune takes note and returns at once;
// the writer forgets them in its own time, and says so in its log when it
// cannot.
type Pruner interface {
	Prune(group string, starts []PartitionStart)
	// PruneInterval is how often the job should ask the share group where
	// it stands and call Prune.
	PruneInterval() time.Duration
}

// SinkStats counts a writer's rows.
type SinkStats struct {
	Written int64 // rows handed to the destination
	Acked   int64 // rows it acknowledged
	Failed  int64 // rows it refused or that could not be sent
	// DeadLettered counts rows the destination refused that went to a
	// dead-letter topic instead (and count as written).
	DeadLettered int64
	// Duplicates counts rows an OriginWriter did not write again: their
	// record, delivered again, had its rows written already (they count
	// as written and acknowledged).
	Duplicates int64
	// Unreachable is since when the writer's brokers (Brokers) do not
	// answer, while none answers and once the writer said so; zero
	// otherwise.
	Unreachable time.Time
	Brokers     string
}

// A RefusedBySource is a Writer whose refused rows (a *RowError of a
// value the destination will never take: a constraint, a value out of
// range) go by their source table's policy for rows a query cannot use
// ('scan.on-eval-error': reject, release or the dead-letter topic), the
// batch's other rows written without them, rather than fail the job, when
// RefusedBySource says so (a jdbc table's 'sink.on-refused-record' =
// 'dead-letter'). Found by type assertion.
type RefusedBySource interface {
	RefusedBySource() bool
}

// RowError is a row a sink could not write: which row of the batch, and
// why.
type RowError struct {
	Row int
	Err error
}

func (e *RowError) Error() string { return fmt.Sprintf("row %d: %v", e.Row+1, e.Err) }
func (e *RowError) Unwrap() error { return e.Err }

// Origin is where a row came from: its record's coordinates and, for a
// record read through a share group, how often the broker has handed it
// out. A worker that runs a program per row tells it these (kshare work's
// KSHARE_* environment), logs them with what the program said, and a query
// names them in the error of a row it could not evaluate.
type Origin struct {
	Group         string // the share group that handed it out; "" for none
	Topic         string
	Partition     int32
	Offset        int64
	DeliveryCount int32 // 0 for a record read by no share group
	Key           []byte
	// Timestamp is the record's Kafka timestamp, in milliseconds since
	// the epoch, where the reader tells it (a log read of a changelog);
	// 0 where it does not.
	Timestamp int64
}

// RowOrigins is what a batch's Acker implements when it can tell which
// record gave each row of the batch; a reader finds it by type assertion.
// ok is false for a row out of range.
type RowOrigins interface {
	RowOrigin(row int) (o Origin, ok bool)
}
