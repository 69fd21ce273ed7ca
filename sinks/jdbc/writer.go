package jdbc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kshare/kshare/flow"
)

// FlushTimeout bounds one attempt at a flush (its transaction), so that a
// server that stopped answering is treated as a broken connection and
// retried instead of holding the job forever.
const FlushTimeout = 60 * time.Second

// Backoff between retries of a flush: doubling from the first to the last.
const (
	firstBackoff = 100 * time.Millisecond
	lastBackoff  = 2 * time.Second
)

// batch is the rows of one Write, converted, waiting for their flush.
type batch struct {
	rows  [][]any
	kinds []flow.RowKind // of rows; nil: all insertions
	index []int          // the row of the written batch each row is
	n     int            // the written batch's rows (-U rows are not kept)
	done  func(error)
	// origins are the records of rows, for a writer that writes exactly
	// once; nil otherwise. Of a merged batch, the records its changes
	// folded, not one a row.
	origins []flow.Origin
	// merged: the rows are increments to merge (merge.go).
	merged bool
}

// writer buffers batches and flushes them from its own goroutine, one
// transaction at a time, in order: a key's changes are written in the
// order they came. A flush starts as soon as rows wait and the previous
// flush has committed, and takes up to maxRows rows (whole batches; a
// larger batch goes alone), so that rows wait for a commit, not for a
// timer: their source records are locked until then, and a share-group
// member hands out no more records until its last ones are settled.
type writer struct {
	s    *sink
	t    *target
	conn *pgx.Conn // the flusher's; nil while a broken one awaits a retry
	log  atomic.Pointer[slog.Logger]

	// SQL of the statements, built once.
	insertSQL, upsertSQL, deleteSQL string
	// mergeSQL merges a row of increments (merge.go), made at the first
	// WriteMerged under mu; lookup is Applied's.
	mergeSQL string
	lookup   *lookup
	// byCopy: appends go in with COPY (see appendRows), else as pipelined
	// INSERTs; the benchmark compares the two.
	byCopy bool

	mu     sync.Mutex
	cond   *sync.Cond // queue changed, or closed
	queue  []*batch
	queued int // rows in queue
	// prune is the latest Prune not yet carried out (see once.go).
	prune  *pruneRequest
	closed bool
	exited chan struct{}

	// once is set when the writer writes exactly once (see once.go);
	// dups is what the flush that just succeeded found written already.
	once *once
	dups int

	written, acked, failed, duplicates atomic.Int64
	// forgotten counts the identities forget deleted.
	forgotten atomic.Int64
}

var (
	_ flow.ChangelogWriter = (*writer)(nil)
	_ flow.LoggingWriter   = (*writer)(nil)
)

func newWriter(s *sink, t *target, conn *pgx.Conn, o *once) *writer {
	w := &writer{s: s, t: t, conn: conn, once: o, byCopy: true, exited: make(chan struct{}), lookup: &lookup{streams: map[streamKey]int32{}}}
	w.cond = sync.NewCond(&w.mu)
	quoted := make([]string, len(t.cols))
	params := make([]string, len(t.cols))
	for i, c := range t.cols {
		quoted[i] = pgx.Identifier{c}.Sanitize()
		params[i] = "$" + strconv.Itoa(i+1)
	}
	into := t.ident.Sanitize()
	w.insertSQL = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", into, strings.Join(quoted, ", "), strings.Join(params, ", "))
	if s.key != nil {
		keys := make([]string, len(s.key))
		where := make([]string, len(s.key))
		for i, k := range s.key {
			keys[i] = quoted[k]
			where[i] = fmt.Sprintf("%s = $%d", quoted[k], i+1)
		}
		var set []string
		for i, q := range quoted {
			if !slices.Contains(s.key, i) {
				set = append(set, q+" = EXCLUDED."+q)
			}
		}
		action := "DO NOTHING" // every column is the key: the row is there
		if len(set) > 0 {
			action = "DO UPDATE SET " + strings.Join(set, ", ")
		}
		w.upsertSQL = fmt.Sprintf("%s ON CONFLICT (%s) %s", w.insertSQL, strings.Join(keys, ", "), action)
		w.deleteSQL = fmt.Sprintf("DELETE FROM %s WHERE %s", into, strings.Join(where, " AND "))
	}
	go w.run()
	return w
}

// SetLogger sets where the writer says that it retries a flush.
func (w *writer) SetLogger(l *slog.Logger) { w.log.Store(l) }

func (w *writer) logger() *slog.Logger {
	if l := w.log.Load(); l != nil {
		return l
	}
	return slog.Default()
}

func (w *writer) Write(ctx context.Context, rec arrow.RecordBatch, done func(error)) error {
	return w.WriteChanges(ctx, rec, nil, done)
}

// WriteChanges converts rec's rows and queues them for a flush; done is
// called once the transaction holding them committed. An update before
// (-U) is dropped: the update after that follows it replaces the row. A
// Write waits while twice 'sink.buffer-flush.max-rows' rows are queued,
// so that a slow server slows the job instead of filling memory.
func (w *writer) WriteChanges(_ context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error {
	if w.once != nil {
		return w.s.errorf("writes exactly once, which an updating query's changes cannot be")
	}
	return w.queueBatch(rec, kinds, nil, done)
}

// queueBatch converts rec's rows and queues them, with their kinds and
// their records when given.
func (w *writer) queueBatch(rec arrow.RecordBatch, kinds []flow.RowKind, origins []flow.Origin, done func(error)) error {
	n := int(rec.NumRows())
	readers := make([]reader, len(w.t.cols))
	for k := range w.t.cols {
		readers[k] = newReader(rec.Column(k), w.s.cols[k].Type, w.t.asJSON[k])
	}
	b := &batch{n: n, done: done}
	for i := 0; i < n; i++ {
		kind := flow.KindInsert
		if kinds != nil {
			kind = kinds[i]
		}
		if kind == flow.KindUpdateBefore {
			continue
		}
		row := make([]any, len(readers))
		for k, r := range readers {
			row[k] = r(i)
		}
		b.rows = append(b.rows, row)
		b.index = append(b.index, i)
		if origins != nil {
			b.origins = append(b.origins, origins[i])
		}
		if kinds != nil {
			b.kinds = append(b.kinds, kind)
		}
	}
	return w.enqueue(b)
}

// enqueue queues b for the flushes, waiting while twice
// 'sink.buffer-flush.max-rows' rows are queued.
func (w *writer) enqueue(b *batch) error {
	w.mu.Lock()
	for w.queued >= 2*w.s.maxRows && !w.closed {
		w.cond.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return w.s.errorf("write after close")
	}
	w.queue = append(w.queue, b)
	w.queued += len(b.rows)
	w.written.Add(int64(b.n))
	w.cond.Broadcast()
	w.mu.Unlock()
	return nil
}

// run flushes the queue until Close, and what is queued then.
func (w *writer) run() {
	defer close(w.exited)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed && w.prune == nil {
			w.cond.Wait()
		}
		if pr := w.prune; pr != nil {
			// Between two flushes, however busy the queue: it comes
			// once a minute and takes one round trip.
			w.prune = nil
			w.mu.Unlock()
			w.forget(pr)
			continue
		}
		if len(w.queue) == 0 {
			w.mu.Unlock()
			return
		}
		take, rows := 1, len(w.queue[0].rows)
		for take < len(w.queue) && rows+len(w.queue[take].rows) <= w.s.maxRows {
			rows += len(w.queue[take].rows)
			take++
		}
		bs := slices.Clone(w.queue[:take])
		w.queue = slices.Delete(w.queue, 0, take)
		w.queued -= rows
		w.cond.Broadcast()
		w.mu.Unlock()
		w.flush(bs)
	}
}

// rowFailure is a row the server refused: row index of bs[batch].
type rowFailure struct {
	batch, row int
	err        error
}

func (e *rowFailure) Error() string { return e.err.Error() }

// flush writes bs in one transaction and calls their done. A batch with a
// row the server refuses gets a *flow.RowError; the others are written
// again without it.
func (w *writer) flush(bs []*batch) {
	for len(bs) > 0 {
		err := w.s.scrub(w.flushRetrying(bs))
		if err == nil {
			w.duplicates.Add(int64(w.dups))
			for _, b := range bs {
				w.acked.Add(int64(b.n))
				b.done(nil)
			}
			return
		}
		var rf *rowFailure
		if errors.As(err, &rf) {
			b := bs[rf.batch]
			w.failed.Add(int64(b.n))
			b.done(&flow.RowError{Row: b.index[rf.row], Err: w.s.scrub(rf.err)})
			bs = slices.Delete(bs, rf.batch, rf.batch+1)
			continue
		}
		for _, b := range bs {
			w.failed.Add(int64(b.n))
			b.done(err)
		}
		return
	}
}

// flushRetrying runs flushOnce, on a new connection after one broke, up
// to 'sink.max-retries' more times with a backoff.
func (w *writer) flushRetrying(bs []*batch) error {
	backoff := firstBackoff
	all := false // look up every record's identity, not only redelivered ones
	for attempt := 0; ; attempt++ {
		err := w.flushOnce(bs, all)
		if errors.Is(err, errStoredMeanwhile) && !all {
			// A transaction that committed meanwhile wrote some of
			// these records: look them all up, at once.
			all = true
			attempt--
			continue
		}
		if err == nil || !retryable(err, w.conn) {
			return err
		}
		if w.conn != nil {
			w.conn.Close(context.Background())
			w.conn = nil
		}
		if attempt >= w.s.maxRetries {
			return w.s.errorf("writing to PostgreSQL table %s failed %d times ('sink.max-retries' is %d), the last time: %w",
				w.s.pgTable, attempt+1, w.s.maxRetries, err)
		}
		w.logger().Warn("jdbc sink: flush failed, retrying on a new connection", "table", w.s.table,
			"server", w.s.addr(), "attempt", attempt+1, "retry_in", backoff, "err", w.s.scrub(err).Error())
		time.Sleep(backoff)
		backoff = min(2*backoff, lastBackoff)
	}
}

// RefusedBySource says whether a row the server refuses goes by its
// source table's policy (flow.RefusedBySource).
func (w *writer) RefusedBySource() bool { return w.s.bySource }

// retryable reports whether err lost the connection rather than being
// the server's answer to what was sent: pgx closes a connection whose
// network failed. A deadlock or serialization failure, or a server that
// is shutting down, are worth another try as well.
func retryable(err error, conn *pgx.Conn) bool {
	if errors.As(err, new(*rowFailure)) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "40001" || pe.Code == "40P01" ||
			pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	return conn == nil || conn.IsClosed() || errors.Is(err, errNoConn) || errors.Is(err, errStoredMeanwhile)
}

var errNoConn = errors.New("no connection")

// flushOnce writes bs in one transaction, connecting first if the last
// connection broke. A writer that writes exactly once leaves out the rows
// of records written already (all: look up every record, see dedupe) and
// stores the identities of the others in the same transaction.
func (w *writer) flushOnce(bs []*batch, all bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
	defer cancel()
	if w.conn == nil {
		conn, err := w.s.connect(ctx)
		if err != nil {
			return fmt.Errorf("%w: %w", errNoConn, err)
		}
		w.conn = conn
	}
	if w.once != nil {
		if err := w.numberStreams(ctx, bs); err != nil {
			return err
		}
		if bs[0].merged {
			return w.flushMerged(ctx, bs, all)
		}
	}
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return err
	}
	w.dups = 0
	write, keep := bs, [][]int(nil)
	if w.once != nil {
		var dups int
		keep, dups, err = w.dedupe(ctx, tx, bs, all)
		if err == nil {
			write = kept(bs, keep)
			// The identities first: a job writing the same records
			// waits here for this transaction, not after its rows.
			err = w.storeIDs(ctx, tx, write)
		}
		w.dups = dups
	}
	if err == nil {
		if w.s.key != nil {
			err = w.upsert(ctx, tx, write)
		} else {
			err = w.appendRows(ctx, tx, write)
		}
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		var rf *rowFailure
		if errors.As(err, &rf) && keep != nil && keep[rf.batch] != nil {
			// The row of the batch as written, not as kept.
			rf.row = keep[rf.batch][rf.row]
		}
		return err
	}
	return tx.Commit(ctx)
}

// appendRows writes bs's rows with COPY: BenchmarkAppend measured 278,000
// rows/s against 98,000 for pipelined INSERTs (500-row flushes, the test
// server), so COPY it is. Upserts cannot COPY: ON CONFLICT needs INSERT.
func (w *writer) appendRows(ctx context.Context, tx pgx.Tx, bs []*batch) error {
	var rows [][]any
	var at [][2]int // batch, row of each row
	for bi, b := range bs {
		for ri, r := range b.rows {
			rows = append(rows, r)
			at = append(at, [2]int{bi, ri})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if !w.byCopy {
		return w.pipelined(ctx, tx, w.insertSQL, rows, at)
	}
	_, err := tx.CopyFrom(ctx, w.t.ident, w.t.cols, pgx.CopyFromRows(rows))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && refusesRow(pe) {
		// COPY says where it failed as "COPY t, line 3[, column c: ...]".
		if m := copyLine.FindStringSubmatch(pe.Where); m != nil {
			if line, _ := strconv.Atoi(m[1]); line >= 1 && line <= len(at) {
				return &rowFailure{batch: at[line-1][0], row: at[line-1][1], err: w.refused(pe)}
			}
		}
		return w.refused(pe)
	}
	return err
}

var copyLine = regexp.MustCompile(`\bline (\d+)`)

// refusesRow reports whether the server refused a row for its values: a
// data exception (class 22: out of range, too long) or an integrity
// constraint (class 23: unique, not null, check, foreign key).
func refusesRow(pe *pgconn.PgError) bool {
	return strings.HasPrefix(pe.Code, "22") || strings.HasPrefix(pe.Code, "23")
}

// refused says what the server refused, naming the table and constraint.
func (w *writer) refused(pe *pgconn.PgError) error {
	msg := fmt.Sprintf("PostgreSQL table %s refused the row: %s", w.s.pgTable, pe.Message)
	if pe.ConstraintName != "" {
		msg += fmt.Sprintf(" (constraint %s)", pe.ConstraintName)
	}
	if pe.Detail != "" {
		msg += ": " + strings.TrimSuffix(pe.Detail, ".")
	}
	return w.s.errorf("%s", msg)
}

// pipelined sends one statement per row in one round trip, and says which
// row the server refused.
func (w *writer) pipelined(ctx context.Context, tx pgx.Tx, sql string, rows [][]any, at [][2]int) error {
	var pb pgx.Batch
	for _, r := range rows {
		pb.Queue(sql, r...)
	}
	return w.sendBatch(ctx, tx, &pb, at)
}

func (w *writer) sendBatch(ctx context.Context, tx pgx.Tx, pb *pgx.Batch, at [][2]int) error {
	br := tx.SendBatch(ctx, pb)
	for i := range at {
		if _, err := br.Exec(); err != nil {
			br.Close()
			var pe *pgconn.PgError
			if errors.As(err, &pe) && refusesRow(pe) {
				return &rowFailure{batch: at[i][0], row: at[i][1], err: w.refused(pe)}
			}
			return err
		}
	}
	return br.Close()
}

// upsert writes each key's last change in bs: an upsert for +I and +U, a
// DELETE for -D.
func (w *writer) upsert(ctx context.Context, tx pgx.Tx, bs []*batch) error {
	type change struct {
		row []any
		del bool
		at  [2]int
	}
	var changes []change
	last := map[string]int{}
	keyVals := make([]any, len(w.s.key))
	for bi, b := range bs {
		for ri, r := range b.rows {
			for i, k := range w.s.key {
				keyVals[i] = r[k]
			}
			del := b.kinds != nil && b.kinds[ri] == flow.KindDelete
			c := change{row: r, del: del, at: [2]int{bi, ri}}
			k := keyString(keyVals)
			if j, ok := last[k]; ok {
				changes[j] = c
				continue
			}
			last[k] = len(changes)
			changes = append(changes, c)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	var pb pgx.Batch
	at := make([][2]int, len(changes))
	for i, c := range changes {
		at[i] = c.at
		if c.del {
			args := make([]any, len(w.s.key))
			for j, k := range w.s.key {
				args[j] = c.row[k]
			}
			pb.Queue(w.deleteSQL, args...)
			continue
		}
		pb.Queue(w.upsertSQL, c.row...)
	}
	return w.sendBatch(ctx, tx, &pb, at)
}

// Close flushes what is queued (with retries), waits for it, and
// disconnects; a Write after Close is an error.
func (w *writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.exited
		return nil
	}
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.exited
	w.lookup.close()
	if w.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.conn.Close(ctx)
		w.conn = nil
	}
	return nil
}

func (w *writer) Stats() flow.SinkStats {
	return flow.SinkStats{Written: w.written.Load(), Acked: w.acked.Load(), Failed: w.failed.Load(), Duplicates: w.duplicates.Load(), Brokers: w.s.addr()}
}
