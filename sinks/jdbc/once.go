package jdbc

// This file makes a jdbc table's effect exactly once: each transaction
// stores, beside the rows it writes, the identity of every source record
// they came from, in a table of kshare's own; a record that the share group
// delivers again and whose identity is there is accepted without writing.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kshare/kshare/table"
)

// recordsColumns are the columns of the records table that kshare writes
// and reads; written_at (a default) tells an operator how old a row is.
var recordsColumns = []string{"target", "share_group", "topic", "kafka_partition", "kafka_offset"}

// recordsDDL creates the records table; %s is its name, sanitized. The key
// is what makes a record's rows go in once: a second transaction that
// stores the same identity waits for the first and fails once it commits.
const recordsDDL = `CREATE TABLE IF NOT EXISTS %s (
	target          text        NOT NULL,
	share_group     text        NOT NULL,
	topic           text        NOT NULL,
	kafka_partition integer     NOT NULL,
	kafka_offset    bigint      NOT NULL,
	written_at      timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (target, share_group, topic, kafka_partition, kafka_offset)
)`

// once is what a writer that writes exactly once knows of its records
// table.
type once struct {
	ident  pgx.Identifier // the records table
	target string         // the table written, schema.name: its rows' 'target'
	// findSQL finds which of the identities given as arrays are stored;
	// forgetSQL deletes those of one partition before an offset.
	findSQL, forgetSQL string
}

// prepareOnce makes sure the records table is there, creating it when
// missing, and that it has the columns kshare writes: before any record is
// read, as the target's own checks.
func (s *sink) prepareOnce(ctx context.Context, conn *pgx.Conn, t *target) (*once, error) {
	// Folded to lower case, as PostgreSQL folds an unquoted name.
	ident := pgx.Identifier(strings.Split(strings.ToLower(s.onceTable), "."))
	_, err := conn.Exec(ctx, fmt.Sprintf(recordsDDL, ident.Sanitize()))
	var pe *pgconn.PgError
	switch {
	case err == nil:
	case errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07" || pe.Code == "42710"):
		// Another job created it at the same moment (IF NOT EXISTS does
		// not guard against that: the catalog's unique index, or the
		// table's row type, is then there already): it is there, which
		// the probe below checks.
	case errors.As(err, &pe) && pe.Code == "42501":
		return nil, s.errorf("writing exactly once keeps the records written in PostgreSQL table %s, which is missing, and user '%s' may not create it (%s); "+
			"create it as docs/connectors.md shows, or grant the user CREATE on the schema, or name an existing table in '%s'",
			s.onceTable, s.cfg.User, pe.Message, "sink.exactly-once.table")
	default:
		return nil, s.errorf("creating PostgreSQL table %s, where writing exactly once keeps the records written: %w", s.onceTable, err)
	}
	o := &once{ident: ident, target: strings.Join(t.ident, ".")}
	// One primary-key lookup per identity, whatever PostgreSQL believes
	// of the table's size: a LATERAL subquery with a LIMIT is never
	// flattened into a join. Written as a join or as IN (SELECT * FROM
	// unnest(...)), a table not analyzed yet (a new one grows faster than
	// autovacuum looks) was read whole into a hash for every flush: 59 ms
	// for 500 identities against 100,000 stored, 1.7 ms this way
	// (EXPLAIN ANALYZE of the prepared statement; BenchmarkAppend/once-again
	// went from 21,000 rows/s to the figure in its comment).
	o.findSQL = fmt.Sprintf(`SELECT u.g, u.t, u.p, u.o
		FROM unnest($2::text[], $3::text[], $4::integer[], $5::bigint[]) AS u(g, t, p, o)
		CROSS JOIN LATERAL (SELECT 1 FROM %s r WHERE r.target = $1 AND r.share_group = u.g AND r.topic = u.t
			AND r.kafka_partition = u.p AND r.kafka_offset = u.o LIMIT 1) AS hit`, ident.Sanitize())
	o.forgetSQL = fmt.Sprintf(`DELETE FROM %s WHERE target = $1 AND share_group = $2 AND topic = $3 AND kafka_partition = $4 AND kafka_offset < $5`, ident.Sanitize())
	probe := fmt.Sprintf("SELECT %s FROM %s LIMIT 0", strings.Join(recordsColumns, ", "), ident.Sanitize())
	if _, err := conn.Exec(ctx, probe); err != nil {
		if errors.As(err, &pe) && pe.Code == "42703" {
			return nil, s.errorf("PostgreSQL table %s ('sink.exactly-once.table') is not a table of written records: %s; name another table, or drop it so that kshare creates it (see docs/connectors.md)",
				s.onceTable, pe.Message)
		}
		return nil, s.errorf("reading PostgreSQL table %s, where writing exactly once keeps the records written: %w", s.onceTable, err)
	}
	return o, nil
}

// recordID is a record's identity across deliveries.
type recordID struct {
	group, topic string
	partition    int32
	offset       int64
}

func idOf(o table.Origin) recordID {
	return recordID{group: o.Group, topic: o.Topic, partition: o.Partition, offset: o.Offset}
}

// onceWriter is a writer that writes exactly once: the job calls WriteFrom.
type onceWriter struct{ *writer }

var (
	_ table.OriginWriter = onceWriter{}
	_ table.Pruner       = onceWriter{}
)

func (w onceWriter) Write(context.Context, arrow.RecordBatch, func(error)) error {
	return w.s.errorf("writes exactly once, and needs each row's source record (WriteFrom)")
}

// WriteFrom queues rec's rows with their records' identities.
func (w onceWriter) WriteFrom(ctx context.Context, rec arrow.RecordBatch, origins []table.Origin, done func(error)) error {
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
	var groups, topics []string
	var parts []int32
	var offs []int64
	seen := map[recordID]bool{}
	for _, b := range bs {
		for _, o := range b.origins {
			id := idOf(o)
			if (o.DeliveryCount <= 1 && !all) || seen[id] {
				continue
			}
			seen[id] = true
			groups, topics = append(groups, id.group), append(topics, id.topic)
			parts, offs = append(parts, id.partition), append(offs, id.offset)
		}
	}
	keep = make([][]int, len(bs))
	if len(groups) == 0 {
		return keep, 0, nil
	}
	rows, err := tx.Query(ctx, w.once.findSQL, w.once.target, groups, topics, parts, offs)
	if err != nil {
		return nil, 0, err
	}
	stored := map[recordID]bool{}
	for rows.Next() {
		var id recordID
		if err := rows.Scan(&id.group, &id.topic, &id.partition, &id.offset); err != nil {
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
			if stored[idOf(o)] {
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
	seen := map[recordID]bool{}
	var rows [][]any
	for _, b := range bs {
		for _, o := range b.origins {
			id := idOf(o)
			if seen[id] {
				continue
			}
			seen[id] = true
			rows = append(rows, []any{w.once.target, id.group, id.topic, id.partition, id.offset})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, w.once.ident, recordsColumns, pgx.CopyFromRows(rows))
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
	starts []table.PartitionStart
}

// Prune takes note of where group stands; the writer's goroutine deletes
// the identities before it between two flushes (forget).
func (w onceWriter) Prune(group string, starts []table.PartitionStart) {
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
	for _, st := range pr.starts {
		pb.Queue(w.once.forgetSQL, w.once.target, pr.group, st.Topic, st.Partition, st.Offset)
	}
	br := w.conn.SendBatch(ctx, &pb)
	var n int64
	var err error
	for range pr.starts {
		tag, e := br.Exec()
		if e != nil {
			err = e
			break
		}
		n += tag.RowsAffected()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
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
