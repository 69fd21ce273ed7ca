package kafka

// This file is the sink's writer: rows to records, acknowledgements to the
// callers' done.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/table"
)

// check says whether the sink topic exists, and returns its
// max.message.bytes (0: unknown).
func (s *sink) check(ctx context.Context, adm *kadm.Client) (int32, error) {
	limit, err := kafkaclient.TopicLimit(ctx, adm, s.topic)
	switch {
	case errors.Is(err, kafkaclient.ErrNoTopic):
		return 0, table.Errorf(s.table, "sink topic '%s' does not exist; create it (kshare produce or kafka-topics.sh) before INSERT INTO", s.topic)
	case err != nil:
		return 0, table.Errorf(s.table, "%w", err)
	}
	return limit, nil
}

type writer struct {
	*sink
	cl      *kgo.Client
	dead    *kafkaclient.DeadLetters // 'sink.on-refused-record' = 'dead-letter'; nil otherwise
	limit   int32
	buf     []byte
	scratch []arrow.Array
	stats   struct{ written, acked, failed, deadLettered atomic.Int64 }

	// health follows whether the sink's brokers answer; watch says so on
	// log (slog.Default until SetLogger) until stop closes.
	health    *kafkaclient.Health
	log       atomic.Pointer[slog.Logger]
	stop      chan struct{}
	watching  sync.WaitGroup
	closeOnce sync.Once

	// flushes asks flush to send what is buffered now: a Write's records
	// go out together once all are buffered (see flush).
	flushes     chan struct{}
	flushCtx    context.Context
	flushCancel context.CancelFunc

	// Writes not finished yet, which an outage past
	// 'sink.broker-unavailable-timeout' fails; broken is that outage's
	// error, which fails every later Write.
	mu     sync.Mutex
	flying map[*pending]struct{}
	broken error

	// txn is the transaction of an exactly-once sink (txn.go).
	txn txnState
}

var _ flow.LoggingWriter = (*writer)(nil)

func (w *writer) Stats() flow.SinkStats {
	return flow.SinkStats{Written: w.stats.written.Load(), Acked: w.stats.acked.Load(), Failed: w.stats.failed.Load(),
		DeadLettered: w.stats.deadLettered.Load(), Unreachable: w.health.Outage(), Brokers: w.health.Seeds()}
}

// logger is where the writer logs: SetLogger's, else slog.Default().
func (w *writer) logger() *slog.Logger {
	if l := w.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// SetLogger sets where the writer says that its brokers do not answer, and
// that they answer again.
func (w *writer) SetLogger(l *slog.Logger) { w.log.Store(l) }

// watch says when the sink's brokers stop answering and when they answer
// again, as a share-group stream does of its own: a produce retries all
// the while (up to 'sink.broker-unavailable-timeout'), and the job would
// otherwise just look stuck.
func (w *writer) watch() {
	t := time.NewTicker(sinkWatchEvery)
	defer t.Stop()
	for broken := false; !broken; {
		select {
		case <-w.stop:
			return
		case <-t.C:
			broken = w.check()
		}
	}
}

// flush sends a Write's records as soon as all of them are buffered, in
// as few produce requests as the partitions allow, instead of letting the
// first of them leave alone while the rest are still being buffered: the
// client keeps franz-go's linger (10 ms), which a Flush ends at once. A
// job's source polls again only once the batch it handed over is
// acknowledged, so neither a linger nor extra requests may stand between a
// Write and its acknowledgement. Measured on a real broker, 500,000 orders
// INSERTed at parallelism 1 (polls of 500): 1,050 produce requests with no
// linger, 799 this way (some polls bring more than 500 records). Flush
// also waits for the records to be answered; Writes that come meanwhile go
// out at once (franz-go skips the linger while flushing) and are flushed
// again after it. Close ends a Flush under way through flushCtx.
func (w *writer) flush() {
	for {
		select {
		case <-w.stop:
			return
		case <-w.flushes:
			if err := w.cl.Flush(w.flushCtx); err != nil {
				return
			}
		}
	}
}

// check says whether the brokers answer, as watch does, and fails the
// writer once they have not for 'sink.broker-unavailable-timeout'. It
// reports whether it did.
func (w *writer) check() bool {
	since, err := w.health.Announce(w.logger().With("table", w.table, "sink_topic", w.topic))
	if limit := w.unavailable; limit > 0 && !since.IsZero() && time.Since(since) >= limit {
		w.breakDown(w.health.Unavailable(w.table, since, limit, OptSinkUnavailable, err))
		return true
	}
	return false
}

// sinkWatchEvery is how often a writer looks at whether its brokers answer.
const sinkWatchEvery = 250 * time.Millisecond

func (w *writer) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		w.flushCancel()
		w.watching.Wait()
		// The sink's client first: a record it refused just now may still
		// go to the dead-letter client, which then fails it as it closes.
		w.cl.Close()
		if w.dead != nil {
			w.dead.Close()
		}
	})
	return nil
}

// breakDown fails every Write not finished with err, and every later one.
// Their rows may still reach the topic if the brokers come back before the
// writer closes: their source records were released, so they are written
// again then (at least once, never lost).
func (w *writer) breakDown(err error) {
	w.mu.Lock()
	w.broken = err
	flying := make([]*pending, 0, len(w.flying))
	for p := range w.flying {
		flying = append(flying, p)
	}
	w.mu.Unlock()
	for _, p := range flying {
		p.fail(err)
		p.finish()
	}
}

// pending is one Write's rows in flight.
type pending struct {
	left  atomic.Int64
	once  sync.Once
	mu    sync.Mutex
	err   error
	done  func(error)
	track bool // done waits for the acks (at-least-once)
	w     *writer
	ctx   context.Context // the Write's
	recs  []kgo.Record    // the Write's records, by row
	// rows are the batch's row of each record, when some rows have none
	// (an upsert's -U); nil: record i is row i.
	rows []int
}

// produced is the promise of each of p's records.
func (p *pending) produced(r *kgo.Record, err error) {
	w := p.w
	switch {
	case err == nil:
		w.stats.acked.Add(1)
	case w.dead != nil && refused(err):
		// Settled when the dead letter is answered.
		w.deadLetter(p.ctx, p, p.rowOf(r), r, w.produceError(r, err))
		return
	default:
		w.stats.failed.Add(1)
		p.fail(&flow.RowError{Row: p.rowOf(r), Err: w.produceError(r, err)})
	}
	p.rowDone()
}

// rowOf is the row of p's record r. Only failures ask, so a search will do.
func (p *pending) rowOf(r *kgo.Record) int {
	for i := range p.recs {
		if &p.recs[i] == r {
			if p.rows != nil {
				return p.rows[i]
			}
			return i
		}
	}
	return -1
}

func (p *pending) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// rowDone counts one row settled, and finishes p after the last (under
// at-least-once: 'none' finished it when its rows were handed on).
func (p *pending) rowDone() {
	if p.left.Add(-1) == 0 && p.track {
		p.finish()
	}
}

func (p *pending) finish() {
	p.mu.Lock()
	err := p.err
	p.mu.Unlock()
	p.once.Do(func() {
		p.w.mu.Lock()
		delete(p.w.flying, p)
		p.w.mu.Unlock()
		p.done(err)
	})
}

// Write encodes every row first, so that a row the format cannot write
// fails the batch before any of it is sent.
func (w *writer) Write(ctx context.Context, rec arrow.RecordBatch, done func(error)) error {
	return w.write(ctx, rec, nil, done)
}

// write writes rec's rows as records. With kinds, in a changelog format
// (debezium-json) each row is written as a change of its kind; otherwise
// (an upsert-kafka table's changes) a -U row writes nothing and a -D row
// writes its key with no value, a tombstone.
func (w *writer) write(ctx context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error {
	n := int(rec.NumRows())
	changes, _ := w.value.(table.ChangeEncoder)
	if changes == nil || kinds == nil {
		changes = nil // an upsert, or rows that are all inserts
	}
	upsert := kinds != nil && changes == nil
	updates, _ := changes.(table.UpdateEncoder)
	if int(rec.NumCols()) != len(w.sink.cols) {
		return table.Errorf(w.table, "a batch of %d columns for a sink of %d", rec.NumCols(), len(w.sink.cols))
	}
	all := rec.Columns()
	pick := func(idx []int) []arrow.Array {
		w.scratch = w.scratch[:0]
		for _, i := range idx {
			w.scratch = append(w.scratch, all[i])
		}
		return w.scratch
	}
	// rows are the rows that write a record, when not all do: of an
	// upsert, all but the -U rows; of a changelog whose format writes an
	// update as one value, all but the +U right after a -U (the -U's
	// record holds both).
	var rows []int
	paired := func(i int) bool {
		return updates != nil && kinds[i] == flow.KindUpdateBefore && i+1 < n && kinds[i+1] == flow.KindUpdateAfter
	}
	switch {
	case upsert:
		for i := 0; i < n; i++ {
			if kinds[i] != flow.KindUpdateBefore {
				rows = append(rows, i)
			}
		}
	case updates != nil:
		for i := 0; i < n; i++ {
			rows = append(rows, i)
			if paired(i) {
				i++
			}
		}
	}
	count := n
	if rows != nil {
		count = len(rows)
	}
	row := func(j int) int {
		if rows != nil {
			return rows[j]
		}
		return j
	}
	recs := make([]kgo.Record, count)
	w.buf = w.buf[:0]
	type span struct{ ks, ke, vs, ve int }
	spans := make([]span, count)
	keyNull := make([]bool, count)
	valNull := make([]bool, count)
	for j := 0; j < count; j++ {
		var err error
		i := row(j)
		sp := &spans[j]
		if w.key != nil {
			sp.ks = len(w.buf)
			if w.buf, keyNull[j], err = w.key.Encode(w.buf, pick(w.keyIdx), i); err != nil {
				return &flow.RowError{Row: i, Err: table.Errorf(w.table, "key: %w", err)}
			}
			sp.ke = len(w.buf)
		}
		sp.vs = len(w.buf)
		if upsert && kinds[i] == flow.KindDelete {
			valNull[j] = true // a tombstone
			continue
		}
		switch {
		case paired(i):
			w.buf, err = updates.EncodeUpdate(w.buf, pick(w.valueIdx), i, i+1)
		case changes != nil:
			w.buf, valNull[j], err = changes.EncodeChange(w.buf, pick(w.valueIdx), i, kinds[i])
		default:
			w.buf, valNull[j], err = w.value.Encode(w.buf, pick(w.valueIdx), i)
		}
		if err != nil {
			return &flow.RowError{Row: i, Err: table.Errorf(w.table, "value: %w", err)}
		}
		sp.ve = len(w.buf)
	}
	// The records own one copy of the batch's bytes until acknowledged;
	// w.buf is reused by the next Write.
	data := append([]byte(nil), w.buf...)
	for j := range recs {
		r, sp, i := &recs[j], spans[j], row(j)
		r.Topic = w.topic
		if w.key != nil && !keyNull[j] {
			r.Key = data[sp.ks:sp.ke:sp.ke]
		}
		if !valNull[j] {
			r.Value = data[sp.vs:sp.ve:sp.ve]
		}
		if w.ts >= 0 {
			if c, ok := all[w.ts].(*array.Timestamp); ok && c.IsValid(i) {
				r.Timestamp = c.Value(i).ToTime(c.DataType().(*arrow.TimestampType).Unit)
			}
		}
		if w.headers >= 0 {
			r.Headers = headersOf(all[w.headers], i)
		}
	}
	p := &pending{done: done, track: !w.none, w: w, ctx: ctx, recs: recs, rows: rows}
	if w.txn.id != "" {
		// Writes come one at a time (a job's); the transaction's
		// fields are the writing goroutine's.
		if err := w.begin(); err != nil {
			return err
		}
		for i := range recs {
			w.txn.kept = append(w.txn.kept, &recs[i])
		}
	}
	w.mu.Lock()
	w.flying[p] = struct{}{}
	w.mu.Unlock()
	p.left.Store(int64(count) + 1)
	// One promise for the Write's records, not a closure for each.
	promise := p.produced
	for i := range recs {
		w.cl.Produce(ctx, &recs[i], promise)
	}
	select {
	case w.flushes <- struct{}{}:
	default:
		// A flush is asked for already; it sends these records too.
	}
	w.stats.written.Add(int64(n))
	// A row that writes no record of its own (an upsert's -U, an update's +U
	// written with its -U) is done with as soon as it is handed over.
	w.stats.acked.Add(int64(n - count))
	if p.left.Add(-1) == 0 || !p.track {
		// 'none': handed to the producer is delivered enough.
		p.finish()
	}
	return nil
}

// refused tells the errors for which the sink topic will never take the
// record, whatever the retries: those 'sink.on-refused-record' is about.
// An unreachable broker is not one of them.
func refused(err error) bool {
	return isAny(err, kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.InvalidTimestamp)
}

// isAny tells whether err is one of targets, as errors.Is tells it.
func isAny(err error, targets ...error) bool {
	for _, e := range targets {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// deadLetter produces r, which the sink topic refused (why), to the
// dead-letter topic, and settles its row when that produce is answered: as
// written once acknowledged; as failed (the job fails, the batch's source
// records are released) if it fails too.
func (w *writer) deadLetter(ctx context.Context, p *pending, row int, r *kgo.Record, why error) {
	w.dead.ProduceRefused(ctx, r, why, func(err error) {
		if err != nil {
			w.stats.failed.Add(1)
			p.fail(&flow.RowError{Row: row, Err: fmt.Errorf("%w; producing it to the dead-letter topic '%s' failed too: %w", why, w.deadTopic, err)})
		} else {
			w.stats.deadLettered.Add(1)
			w.logger().Warn("dead-lettered a row the sink topic refused", "table", w.table, "sink_topic", w.topic, "dead_letter_topic", w.deadTopic, "err", why)
		}
		p.rowDone()
	})
}

func (w *writer) produceError(r *kgo.Record, err error) error {
	if errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) {
		size := len(r.Key) + len(r.Value)
		if w.limit > 0 {
			return table.Errorf(w.table, "a record of %d bytes is too large for topic '%s', whose max.message.bytes is %d: %w", size, w.topic, w.limit, err)
		}
		return table.Errorf(w.table, "a record of %d bytes is too large for topic '%s': %w", size, w.topic, err)
	}
	return table.Errorf(w.table, "producing to topic '%s': %w", w.topic, err)
}

// headersOf reads row i of a MAP<STRING, BYTES> column as record headers.
func headersOf(a arrow.Array, i int) []kgo.RecordHeader {
	m, ok := a.(*array.Map)
	if !ok || !m.IsValid(i) {
		return nil
	}
	keys, ok1 := m.Keys().(*array.String)
	vals, ok2 := m.Items().(*array.Binary)
	if !ok1 || !ok2 {
		return nil
	}
	start, end := m.ValueOffsets(i)
	out := make([]kgo.RecordHeader, 0, end-start)
	for j := start; j < end; j++ {
		h := kgo.RecordHeader{Key: keys.Value(int(j))}
		if vals.IsValid(int(j)) {
			h.Value = append([]byte(nil), vals.Value(int(j))...)
		}
		out = append(out, h)
	}
	return out
}
