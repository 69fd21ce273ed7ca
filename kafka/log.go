package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// This file is the reading loop of a plain reader over offset ranges: the
// 'kafka' connector's source and the engine's TABLE(PEEK(...)) both read
// through it.

// NoEnd is the To of a Range read without end.
const NoEnd int64 = -1

// Range is what a LogStream reads of one partition: offsets From
// (inclusive) up to To (exclusive), or on without end when To is NoEnd.
type Range struct {
	Topic     string
	Partition int32
	From, To  int64
	// Present says every offset before To existed when the stream opened
	// (To was at or below the partition's end offset), so that a partition
	// that stays quiet short of To has no record left to read there (a
	// transaction marker, records compacted away). A bound beyond the end
	// is waited for.
	Present bool
}

// quietEnd is how long a LogStream waits for a record of a range whose
// offsets were all present before it takes the range to be done: its last
// offsets may hold no record to read, and a broker that has the records
// answers a fetch within 'properties.fetch.max.wait.ms'. Before it does,
// it checks that a broker answers at all, since a broker gone away is
// quiet too. A variable for tests.
var quietEnd = 10 * time.Second

// LogConfig is what OpenLog reads.
type LogConfig struct {
	// Table gives the format and the columns, metadata columns too
	// (kafkarecord.NewBuilder).
	Table *table.Bound
	// Client are the options of a plain client of the table's cluster
	// (kafkaclient.ClientOpts).
	Client []kgo.Opt
	Ranges []Range
	// SkipDecodeErrors counts the values the format cannot decode instead
	// of ending the stream with the first.
	SkipDecodeErrors bool
	// DecodeHint, when set, follows the message of a decode error that
	// ends the stream: what the user can do about it.
	DecodeHint string
	// Unavailable ends the stream with an error once no broker has
	// answered for that long ('scan.broker-unavailable-timeout'); 0 waits
	// for them forever.
	Unavailable time.Duration
	// upsert, when set, makes the stream's upsertRows: an upsert-kafka
	// table's records are changes of its rows (see upsertsource.go).
	upsert func(memory.Allocator) (*upsertRows, error)
}

// watchEvery is how often a stream that waits for records looks at whether
// its brokers answer.
const watchEvery = time.Second

// LogStream reads each range and ends (io.EOF) when every one with an end
// is read; with a range without end it reads until closed. Its batches need
// no settling: nothing is acknowledged, so their Acker settles nothing.
type LogStream struct {
	schema *arrow.Schema
	cfg    LogConfig
	cl     *kgo.Client // nil when nothing is to be read
	rb     *kafkarecord.Builder
	upsert *upsertRows // nil: a record's rows are as its value gives them
	health *kafkaclient.Health
	log    *slog.Logger

	mu   sync.Mutex // Next against Close: the builder
	left map[string]map[int32]Range
	// named are the partitions with records to read when it opened; the
	// rows of the batch being built come from named[rowPart[i]] at
	// rowOff[i] (RowOrigins).
	named   []flow.PartitionID
	slot    map[flow.PartitionID]int32
	rowPart []int32
	rowOff  []int64
	rowTs   []int64 // each row's record's timestamp, in milliseconds
	// pos is the next offset to read of each partition: past every record
	// appended so far, those that gave no row too (Positions).
	pos map[flow.PartitionID]int64
	// Counts for Stats, which may be called while Next waits.
	records, rows, decodeErrors atomic.Int64

	closeOnce sync.Once
}

var (
	_ flow.Stream      = (*LogStream)(nil)
	_ flow.Partitioned = (*LogStream)(nil)
)

// OpenLog starts reading c.Ranges with a client of its own, allocating
// batches as o says. Empty ranges are skipped; with none left the stream
// ends at once. It does no I/O itself: the client connects as it fetches.
func OpenLog(c LogConfig, o flow.OpenOptions) (*LogStream, error) {
	st := &LogStream{schema: c.Table.Def.Schema.Arrow(), cfg: c, left: map[string]map[int32]Range{}, log: o.Logger,
		health: kafkaclient.NewHealth(splitList(c.Table.Options.String(kafkaclient.OptBootstrapServers), ","))}
	if st.log == nil {
		st.log = slog.Default()
	}
	at := map[string]map[int32]kgo.Offset{}
	for _, r := range c.Ranges {
		if r.To != NoEnd && r.From >= r.To {
			continue
		}
		if at[r.Topic] == nil {
			at[r.Topic], st.left[r.Topic] = map[int32]kgo.Offset{}, map[int32]Range{}
		}
		at[r.Topic][r.Partition] = kgo.NewOffset().At(r.From)
		st.left[r.Topic][r.Partition] = r
		st.named = append(st.named, flow.PartitionID{Topic: r.Topic, Partition: r.Partition})
	}
	st.slot = make(map[flow.PartitionID]int32, len(st.named))
	for i, id := range st.named {
		st.slot[id] = int32(i)
	}
	if len(at) == 0 {
		return st, nil
	}
	var err error
	if c.upsert != nil {
		if st.upsert, err = c.upsert(o.Alloc); err != nil {
			return nil, err
		}
		st.rb, err = kafkarecord.NewDecoderBuilder(c.Table, st.schema, st.upsert.dec, o.Alloc, o.BatchSize)
	} else {
		st.rb, err = kafkarecord.NewBuilder(c.Table, o.Alloc, o.BatchSize)
	}
	if err != nil {
		st.releaseUpsert()
		return nil, err
	}
	if st.cl, err = kgo.NewClient(append(slices.Clip(c.Client), kgo.ConsumePartitions(at), st.health.Opt())...); err != nil {
		st.rb.Release()
		st.releaseUpsert()
		return nil, table.Errorf(c.Table.Def.Name, "kafka client: %w", err)
	}
	return st, nil
}

func (st *LogStream) Schema() *arrow.Schema { return st.schema }

// Next waits for the next batch; see flow.Stream.
func (st *LogStream) Next(ctx context.Context) (flow.Batch, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.rb != nil && st.rb.Len() == 0 && len(st.left) > 0 {
		// Ranges whose records all exist end after a quiet spell; others
		// wait, looking at the brokers' health every watchEvery.
		wait := watchEvery
		if st.allPresent() {
			wait = quietEnd
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fs := st.cl.PollRecords(pctx, st.rb.Size())
		timedOut := pctx.Err() != nil
		cancel()
		if err := ctx.Err(); err != nil {
			return flow.Batch{}, err
		}
		// Records that came as the wait ended count all the same.
		if err := st.append(fs); err != nil {
			return flow.Batch{}, err
		}
		if err := st.watch(); err != nil {
			return flow.Batch{}, err
		}
		if !timedOut || st.rb.Len() > 0 || !st.allPresent() {
			continue
		}
		if err := st.answering(ctx); err != nil {
			return flow.Batch{}, err
		}
		// What is left of the ranges holds no record to read.
		clear(st.left)
	}
	if st.rb == nil || st.rb.Len() == 0 {
		return flow.Batch{}, io.EOF
	}
	ack := &logAck{named: st.named, part: st.rowPart, off: st.rowOff, ts: st.rowTs}
	st.rowPart, st.rowOff, st.rowTs = nil, nil, nil
	rec := st.rb.NewBatch()
	return flow.Batch{Record: rec, Ack: ack, Kinds: st.rb.Kinds()}, nil
}

// Positions are the next offset to read of each partition that has given
// a record: every record before it is in a batch Next handed out (Next
// puts every record it fetched into the batch it returns). Call it
// between Nexts.
func (st *LogStream) Positions() map[flow.PartitionID]int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return maps.Clone(st.pos)
}

// Partitions are the partitions with records to read when the stream
// opened (flow.Partitioned).
func (st *LogStream) Partitions() []flow.PartitionID { return st.named }

// logAck settles nothing (the stream takes nothing) but tells each row's
// record (flow.RowOrigins), which an event-time window reads its
// partition from.
type logAck struct {
	flow.NoAck
	named []flow.PartitionID
	part  []int32
	off   []int64
	ts    []int64
}

var _ flow.RowOrigins = (*logAck)(nil)

func (a *logAck) RowOrigin(row int) (flow.Origin, bool) {
	if row < 0 || row >= len(a.part) {
		return flow.Origin{}, false
	}
	id := a.named[a.part[row]]
	return flow.Origin{Topic: id.Topic, Partition: id.Partition, Offset: a.off[row], Timestamp: a.ts[row]}, true
}

// allPresent tells whether every range left has an end below which every
// offset existed at open.
func (st *LogStream) allPresent() bool {
	for _, ps := range st.left {
		for _, r := range ps {
			if r.To == NoEnd || !r.Present {
				return false
			}
		}
	}
	return true
}

// answering checks that a broker answers, so that a quiet stream is taken
// to be done only when it is not cut off: ending it then would pass a part
// of the records for all of them.
func (st *LogStream) answering(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, quietEnd)
	defer cancel()
	var topics []string
	for t := range st.left {
		topics = append(topics, t)
	}
	ends, err := kadm.NewClient(st.cl).ListEndOffsets(ctx, topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return table.Errorf(st.cfg.Table.Def.Name, "no record came for %s and Kafka does not answer, so the end of every partition cannot be known to be reached: %w", quietEnd, err)
	}
	return nil
}

// append decodes the records of fs that lie in their ranges.
func (st *LogStream) append(fs kgo.Fetches) error {
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return // the poll's own wait ended
		}
		ferr = errors.Join(ferr, fmt.Errorf("reading %s/%d: %w", options.Cut(t), p, err))
	})
	if ferr != nil {
		return ferr
	}
	var derr error
	fs.EachRecord(func(r *kgo.Record) {
		rg, ok := st.left[r.Topic][r.Partition]
		if !ok || (rg.To != NoEnd && r.Offset >= rg.To) || derr != nil {
			return
		}
		st.records.Add(1)
		if st.pos == nil {
			st.pos = map[flow.PartitionID]int64{}
		}
		st.pos[flow.PartitionID{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
		var n int
		var err error
		if st.upsert != nil {
			n, err = st.upsert.append(st.rb, r)
		} else {
			n, err = st.rb.Append(r.Value, r)
		}
		switch {
		case err == nil:
			st.rows.Add(int64(n))
			slot := st.slot[flow.PartitionID{Topic: r.Topic, Partition: r.Partition}]
			for range n {
				st.rowPart = append(st.rowPart, slot)
				st.rowOff = append(st.rowOff, r.Offset)
				st.rowTs = append(st.rowTs, r.Timestamp.UnixMilli())
			}
		case !st.cfg.SkipDecodeErrors:
			derr = fmt.Errorf("record %s/%d@%d: %w", options.Cut(r.Topic), r.Partition, r.Offset, err)
			if st.cfg.DecodeHint != "" {
				derr = fmt.Errorf("%w (%s)", derr, st.cfg.DecodeHint)
			}
		default:
			st.decodeErrors.Add(1)
		}
		if rg.To != NoEnd && r.Offset >= rg.To-1 {
			st.done(r.Topic, r.Partition)
		}
	})
	return derr
}

// watch says when no broker has answered for a while and when one answers
// again, and ends the stream once that lasts cfg.Unavailable.
func (st *LogStream) watch() error {
	since, err := st.health.Announce(st.log)
	if limit := st.cfg.Unavailable; limit > 0 && !since.IsZero() && time.Since(since) >= limit {
		return st.health.Unavailable(st.cfg.Table.Def.Name, since, limit, kafkaclient.OptBrokerUnavailableTimeout, err)
	}
	return nil
}

// done marks a partition's range read.
func (st *LogStream) done(topic string, p int32) {
	delete(st.left[topic], p)
	if len(st.left[topic]) == 0 {
		delete(st.left, topic)
	}
}

// Stats counts the records read and the rows they gave.
func (st *LogStream) Stats() flow.Stats {
	return flow.Stats{Records: st.records.Load(), Rows: st.rows.Load(), DecodeErrors: st.decodeErrors.Load(),
		Brokers: st.health.Seeds(), Unreachable: st.health.Outage()}
}

// Close stops reading; there is nothing to release.
func (st *LogStream) Close() error {
	st.closeOnce.Do(func() {
		if st.cl != nil {
			st.cl.Close() // ends a poll in Next
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.rb != nil {
			st.rb.Release()
			st.rb = nil
		}
		st.releaseUpsert()
	})
	return nil
}

func (st *LogStream) releaseUpsert() {
	if st.upsert != nil {
		st.upsert.release()
		st.upsert = nil
	}
}
