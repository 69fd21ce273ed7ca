package jdbc

// This file makes a jdbc table's effect exactly once: each transaction
// stores, beside the rows it writes, the identity of every source record
// they came from, in a table of kshare's own; a record that the share group
// delivers again and whose identity is there is accepted without writing.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kshare/kshare/flow"
)

// recordsColumns are the columns of the records table that kshare writes;
// written_at (a default) tells an operator how old a row is.
var recordsColumns = []string{"stream", "kafka_partition", "kafka_offset"}

// The records table and its streams. A record is (stream, partition,
// offset); a stream is one share group's topic written into one table,
// numbered in the streams table, '<records table>_streams'. The key of
// three numbers, rather than of the table's, group's and topic's names,
// halves what storing an identity costs the server (300,000 identities:
// 0.50 s against 0.98 s, INSERT ... SELECT on the test server). The key is
// what makes a record's rows go in once: a second transaction that stores
// the same identity waits for the first and fails once it commits.
const (
	recordsDDL = `CREATE TABLE IF NOT EXISTS %s (
	stream          integer     NOT NULL,
	kafka_partition integer     NOT NULL,
	kafka_offset    bigint      NOT NULL,
	written_at      timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (stream, kafka_partition, kafka_offset)
)`
	streamsDDL = `CREATE TABLE IF NOT EXISTS %s (
	stream      integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	target      text NOT NULL,
	share_group text NOT NULL,
	topic       text NOT NULL,
	UNIQUE (target, share_group, topic)
)`
)

// once is what a writer that writes exactly once knows of its records
// table.
type once struct {
	ident, streamsIdent pgx.Identifier
	target              string // the table written, schema.name: its streams' 'target'
	// findSQL finds which of the identities given as arrays are stored;
	// forgetSQL deletes those of one partition before an offset;
	// storeSQL stores identities given as arrays; newStreamSQL and
	// streamSQL number a stream.
	findSQL, forgetSQL, storeSQL, newStreamSQL, streamSQL string
	// streams are the numbers of the streams met so far, the last one
	// asked for apart (idOf); only the writer's goroutine uses them.
	streams    map[streamKey]int32
	lastStream streamKey
	lastID     int32
}

// streamKey is a stream of the target: a group's topic.
type streamKey struct{ group, topic string }

// createTable runs ddl for the table named ident, which another job may be
// creating at the same moment.
func (s *sink) createTable(ctx context.Context, conn *pgx.Conn, ddl string, ident pgx.Identifier) error {
	_, err := conn.Exec(ctx, fmt.Sprintf(ddl, ident.Sanitize()))
	var pe *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07" || pe.Code == "42710"):
		// Another job created it at the same moment (IF NOT EXISTS does
		// not guard against that: the catalog's unique index, or the
		// table's row type, is then there already): it is there, which
		// the probe in prepareOnce checks.
	case errors.As(err, &pe) && pe.Code == "42501":
		return s.errorf("writing exactly once keeps the records written in PostgreSQL table %s, which is missing, and user '%s' may not create it (%s); "+
			"create it as docs/connectors.md shows, or grant the user CREATE on the schema, or name an existing table in '%s'",
			ident.Sanitize(), s.cfg.User, pe.Message, "sink.exactly-once.table")
	default:
		return s.errorf("creating PostgreSQL table %s, where writing exactly once keeps the records written: %w", ident.Sanitize(), err)
	}
	return nil
}

// prepareOnce makes sure the records table and its streams table are
// there, creating them when missing, and that they have the columns kshare
// writes: before any record is read, as the target's own checks.
func (s *sink) prepareOnce(ctx context.Context, conn *pgx.Conn, t *target) (*once, error) {
	// Folded to lower case, as PostgreSQL folds an unquoted name.
	ident := pgx.Identifier(strings.Split(strings.ToLower(s.onceTable), "."))
	streams := slices.Clone(ident)
	streams[len(streams)-1] += "_streams"
	o := &once{ident: ident, streamsIdent: streams, target: strings.Join(t.ident, "."), streams: map[streamKey]int32{}}
	// One primary-key lookup per identity, whatever PostgreSQL believes
	// of the table's size: a LATERAL subquery with a LIMIT is never
	// flattened into a join. Written as a join or as IN (SELECT * FROM
	// unnest(...)), a table not analyzed yet (a new one grows faster than
	// autovacuum looks) was read whole into a hash for every flush: 59 ms
	// for 500 identities against 100,000 stored, 1.7 ms this way
	// (EXPLAIN ANALYZE of the prepared statement; see BenchmarkAppend).
	o.findSQL = fmt.Sprintf(`SELECT u.s, u.p, u.o
		FROM unnest($1::integer[], $2::integer[], $3::bigint[]) AS u(s, p, o)
		CROSS JOIN LATERAL (SELECT 1 FROM %s r WHERE r.stream = u.s AND r.kafka_partition = u.p AND r.kafka_offset = u.o LIMIT 1) AS hit`,
		ident.Sanitize())
	o.storeSQL = fmt.Sprintf(`INSERT INTO %s (stream, kafka_partition, kafka_offset) SELECT * FROM unnest($1::integer[], $2::integer[], $3::bigint[])`, ident.Sanitize())
	o.forgetSQL = fmt.Sprintf(`DELETE FROM %s WHERE stream = $1 AND kafka_partition = $2 AND kafka_offset < $3`, ident.Sanitize())
	o.newStreamSQL = fmt.Sprintf(`INSERT INTO %s (target, share_group, topic) VALUES ($1, $2, $3) ON CONFLICT (target, share_group, topic) DO NOTHING`, streams.Sanitize())
	o.streamSQL = fmt.Sprintf(`SELECT stream FROM %s WHERE target = $1 AND share_group = $2 AND topic = $3`, streams.Sanitize())
	var pe *pgconn.PgError
	// The records table first: one of other columns is refused before
	// its streams table is made.
	for _, probe := range []struct {
		ident pgx.Identifier
		ddl   string
		cols  string
	}{{ident, recordsDDL, strings.Join(recordsColumns, ", ")}, {streams, streamsDDL, "stream, target, share_group, topic"}} {
		if err := s.createTable(ctx, conn, probe.ddl, probe.ident); err != nil {
			return nil, err
		}
		_, err := conn.Exec(ctx, fmt.Sprintf("SELECT %s FROM %s LIMIT 0", probe.cols, probe.ident.Sanitize()))
		if err == nil {
			continue
		}
		if errors.As(err, &pe) && pe.Code == "42703" {
			return nil, s.errorf("PostgreSQL table %s is not kshare's table of written records ('sink.exactly-once.table' names it or its streams): %s; name another table, or drop it so that kshare creates it (see docs/connectors.md)",
				probe.ident.Sanitize(), pe.Message)
		}
		return nil, s.errorf("reading PostgreSQL table %s, where writing exactly once keeps the records written: %w", probe.ident.Sanitize(), err)
	}
	return o, nil
}

// stream numbers a group's topic written into the target, making the
// number when there is none: in a statement of its own, before the flush's
// transaction, so that a number once learnt is never rolled back. create
// false only looks (ok false: there is none).
func (w *writer) stream(ctx context.Context, k streamKey, create bool) (id int32, ok bool, err error) {
	if id, ok := w.once.streams[k]; ok {
		return id, true, nil
	}
	if create {
		// Waits for another job inserting the same stream, then does
		// nothing; the lookup after it sees that job's row.
		if _, err := w.conn.Exec(ctx, w.once.newStreamSQL, w.once.target, k.group, k.topic); err != nil {
			return 0, false, err
		}
	}
	if id, ok, err = w.once.lookStream(ctx, w.conn, k); err != nil || !ok {
		if err == nil && create {
			err = fmt.Errorf("the row of share group '%s', topic '%s' in %s is not there after its insert", k.group, k.topic, w.once.streamsIdent.Sanitize())
		}
		return 0, false, err
	}
	w.once.streams[k] = id
	return id, true, nil
}

// lookStream finds the number of stream k on conn (ok false: there is
// none).
func (o *once) lookStream(ctx context.Context, conn *pgx.Conn, k streamKey) (id int32, ok bool, err error) {
	err = conn.QueryRow(ctx, o.streamSQL, o.target, k.group, k.topic).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// numberStreams makes sure every stream of bs's records is numbered.
func (w *writer) numberStreams(ctx context.Context, bs []*batch) error {
	var last streamKey
	for _, b := range bs {
		for _, o := range b.origins {
			if k := (streamKey{o.Group, o.Topic}); k != last {
				if _, _, err := w.stream(ctx, k, true); err != nil {
					return err
				}
				last = k
			}
		}
	}
	return nil
}

// recordID is a record's identity across deliveries.
type recordID struct {
	stream, partition int32
	offset            int64
}

// idOf is o's identity; its stream is numbered (numberStreams). A
// batch's records are of one stream or few: the last one's number is kept
// so that a row costs no map lookup of two strings.
func (w *writer) idOf(o flow.Origin) recordID {
	k := streamKey{o.Group, o.Topic}
	if k != w.once.lastStream || w.once.lastID == 0 {
		// Numbers start at 1: 0 is no stream, never kept.
		w.once.lastStream, w.once.lastID = k, w.once.streams[k]
	}
	return recordID{stream: w.once.lastID, partition: o.Partition, offset: o.Offset}
}

// onceWriter is a writer that writes exactly once: the job calls WriteFrom.
type onceWriter struct{ *writer }

var (
	_ flow.OriginWriter = onceWriter{}
	_ flow.Pruner       = onceWriter{}
)

func (w onceWriter) Write(context.Context, arrow.RecordBatch, func(error)) error {
	return w.s.errorf("writes exactly once, and needs each row's source record (WriteFrom)")
}

// WriteFrom queues rec's rows with their records' identities.
func (w onceWriter) WriteFrom(ctx context.Context, rec arrow.RecordBatch, origins []flow.Origin, done func(error)) error {
	if len(origins) != int(rec.NumRows()) {
		return w.s.errorf("%d origins for %d rows", len(origins), rec.NumRows())
	}
	return w.queueBatch(rec, nil, origins, done)
}

// errStoredMeanwhile is a flush that found one of its identities stored by
// a transaction that committed while it ran (another job of the share
// group, or this one's earlier attempt whose commit's answer was lost).
var errStoredMeanwhile = errors.New("a record's identity was stored meanwhile")

// dedupe finds which of bs's rows to write: all but those of records whose
// identity is stored already. Only records delivered more than once are
// looked up, unless all is set: a record's first delivery cannot have been
// written by anyone, save by this job's own attempt whose commit's answer
// was lost, which the identities' key catches (errStoredMeanwhile) and
// the retry looks up with all set. keep[b] lists the rows of bs[b] to
// write, nil when all are.
func (w *writer) dedupe(ctx context.Context, tx pgx.Tx, bs []*batch, all bool) (keep [][]int, dups int, err error) {
	var streams, parts []int32
	var offs []int64
	seen := map[recordID]bool{}
	for _, b := range bs {
		for _, o := range b.origins {
			id := w.idOf(o)
			if (o.DeliveryCount <= 1 && !all) || seen[id] {
				continue
			}
			seen[id] = true
			streams, parts, offs = append(streams, id.stream), append(parts, id.partition), append(offs, id.offset)
		}
	}
	keep = make([][]int, len(bs))
	if len(streams) == 0 {
		return keep, 0, nil
	}
	rows, err := tx.Query(ctx, w.once.findSQL, streams, parts, offs)
	if err != nil {
		return nil, 0, err
	}
	stored := map[recordID]bool{}
	for rows.Next() {
		var id recordID
		if err := rows.Scan(&id.stream, &id.partition, &id.offset); err != nil {
			rows.Close()
			return nil, 0, err
		}
		stored[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(stored) == 0 {
		return keep, 0, nil
	}
	for bi, b := range bs {
		k := make([]int, 0, len(b.rows))
		for ri, o := range b.origins {
			if stored[w.idOf(o)] {
				dups++
				continue
			}
			k = append(k, ri)
		}
		keep[bi] = k
	}
	return keep, dups, nil
}

// storeIDs stores the identities of the records of the rows written, each
// once; a key conflict with a committed transaction is errStoredMeanwhile.
func (w *writer) storeIDs(ctx context.Context, tx pgx.Tx, bs []*batch) error {
	var ids []recordID
	seen := map[recordID]bool{}
	for _, b := range bs {
		for _, o := range b.origins {
			// A record's rows are next to each other in its batch; the
			// map is for a record in two batches of one flush.
			if id := w.idOf(o); (len(ids) == 0 || ids[len(ids)-1] != id) && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	streams, parts, offs := make([]int32, len(ids)), make([]int32, len(ids)), make([]int64, len(ids))
	for i, id := range ids {
		streams[i], parts[i], offs[i] = id.stream, id.partition, id.offset
	}
	// One statement of three arrays, prepared once: COPY would cost a
	// round trip more per flush (pgx describes the table first).
	_, err := tx.Exec(ctx, w.once.storeSQL, streams, parts, offs)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return errStoredMeanwhile
	}
	return err
}

// kept is bs with only the rows keep says, as batches of their own that
// share bs's done: what the flush writes.
func kept(bs []*batch, keep [][]int) []*batch {
	out := make([]*batch, len(bs))
	for bi, b := range bs {
		if keep[bi] == nil {
			out[bi] = b
			continue
		}
		nb := &batch{n: b.n, done: b.done}
		for _, ri := range keep[bi] {
			nb.rows = append(nb.rows, b.rows[ri])
			nb.index = append(nb.index, b.index[ri])
			nb.origins = append(nb.origins, b.origins[ri])
			if b.kinds != nil {
				nb.kinds = append(nb.kinds, b.kinds[ri])
			}
		}
		out[bi] = nb
	}
	return out
}

// pruneRequest is a Prune: where the share group stands.
type pruneRequest struct {
	group  string
	starts []flow.PartitionStart
}

// Prune takes note of where group stands; the writer's goroutine deletes
// the identities before it between two flushes (forget).
func (w onceWriter) Prune(group string, starts []flow.PartitionStart) {
	if len(starts) == 0 {
		return
	}
	w.mu.Lock()
	w.prune = &pruneRequest{group: group, starts: starts}
	w.cond.Broadcast()
	w.mu.Unlock()
}

// PruneInterval is 'sink.exactly-once.prune-interval'.
func (w onceWriter) PruneInterval() time.Duration { return w.s.pruneEvery }

// forget deletes the identities of the records of this table's target
// that pr's group settled for good: those before each partition's start
// offset. They can never be delivered again, so nothing needs them. A
// failure is logged and left to the next request.
func (w *writer) forget(pr *pruneRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
	defer cancel()
	if w.conn == nil {
		conn, err := w.s.connect(ctx)
		if err != nil {
			w.logger().Warn("jdbc sink: could not forget the records settled for good; trying again later", "table", w.s.table, "err", w.s.scrub(err).Error())
			return
		}
		w.conn = conn
	}
	var pb pgx.Batch
	var err error
	for _, st := range pr.starts {
		id, ok, serr := w.stream(ctx, streamKey{pr.group, st.Topic}, false)
		if serr != nil {
			err = serr
			break
		}
		if ok {
			pb.Queue(w.once.forgetSQL, id, st.Partition, st.Offset)
		}
	}
	var n int64
	if err == nil && pb.Len() > 0 {
		err = w.sendForget(ctx, &pb, &n)
	}
	if err != nil {
		if w.conn.IsClosed() {
			w.conn = nil
		}
		w.logger().Warn("jdbc sink: could not forget the records settled for good; trying again later", "table", w.s.table,
			"records_table", w.s.onceTable, "err", w.s.scrub(err).Error())
		return
	}
	w.forgotten.Add(n)
}

// sendForget sends forget's deletes and adds the rows they deleted to n.
func (w *writer) sendForget(ctx context.Context, pb *pgx.Batch, n *int64) error {
	br := w.conn.SendBatch(ctx, pb)
	var err error
	for range pb.Len() {
		tag, e := br.Exec()
		if e != nil {
			err = e
			break
		}
		*n += tag.RowsAffected()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}
