package jdbc

// This file writes an aggregate exactly once (flow.MergeWriter): each
// batch of changes is written as what it adds to the table's rows (COUNT
// and SUM the value after less the value before, MIN and MAX the new
// value, kept if smaller or larger), merged by INSERT ... ON CONFLICT DO
// UPDATE into whatever the row holds, in one transaction with the
// identities of the records the batch folded. So replicas of the query in
// one share group, each folding part of the records, add up to the totals
// of all of them, and so does a query restarted with empty groups; a
// record the share group delivers again after its transaction committed is
// found by Applied and not folded again.

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kshare/kshare/flow"
)

var _ flow.MergeWriter = onceWriter{}

// WriteMerged queues rec's changes as the increments they make (see the
// file's comment) with the records they folded.
func (w onceWriter) WriteMerged(_ context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, ops []flow.MergeOp, origins []flow.Origin, done func(error)) error {
	if len(ops) != len(w.t.cols) || len(kinds) != int(rec.NumRows()) {
		return w.s.errorf("%d merge operations and %d kinds for %d columns and %d rows", len(ops), len(kinds), len(w.t.cols), rec.NumRows())
	}
	if err := w.mergeSQLFor(ops); err != nil {
		return err
	}
	n := int(rec.NumRows())
	readers := make([]reader, len(w.t.cols))
	for k := range w.t.cols {
		readers[k] = newReader(rec.Column(k), w.s.cols[k].Type, w.t.asJSON[k])
	}
	read := func(i int) []any {
		row := make([]any, len(readers))
		for k, r := range readers {
			row[k] = r(i)
		}
		return row
	}
	keyVals := make([]any, len(w.s.key))
	keyOf := func(row []any) string {
		for i, k := range w.s.key {
			keyVals[i] = row[k]
		}
		return keyString(keyVals)
	}
	before := map[string][]any{}
	b := &batch{n: n, done: done, origins: origins, merged: true}
	for i := 0; i < n; i++ {
		row := read(i)
		switch kinds[i] {
		case flow.KindUpdateBefore:
			before[keyOf(row)] = row
			continue
		case flow.KindDelete:
			return w.s.errorf("an aggregate's change deletes a row, which cannot be merged")
		}
		if old, ok := before[keyOf(row)]; ok {
			for k, op := range ops {
				if op != flow.MergeAdd {
					continue
				}
				d, err := minus(row[k], old[k])
				if err != nil {
					return w.s.errorf("column %s: %w", w.t.cols[k], err)
				}
				row[k] = d
			}
		}
		b.rows = append(b.rows, row)
		b.index = append(b.index, i)
	}
	return w.enqueue(b)
}

// minus is after less before, of one column's values (nil: NULL). A sum
// over inserts never goes from a value back to NULL.
func minus(after, before any) (any, error) {
	if before == nil || after == nil {
		return after, nil
	}
	switch a := after.(type) {
	case int64:
		return a - before.(int64), nil
	case float64:
		return a - before.(float64), nil
	case pgtype.Numeric:
		b := before.(pgtype.Numeric)
		if a.Exp != b.Exp {
			return nil, fmt.Errorf("two scales (%d, %d) in one column", -a.Exp, -b.Exp)
		}
		return pgtype.Numeric{Int: new(big.Int).Sub(a.Int, b.Int), Exp: a.Exp, Valid: true}, nil
	}
	return nil, fmt.Errorf("values of Go type %T cannot be added up", after)
}

// mergeSQLFor makes the statement that merges a row by ops, once.
func (w onceWriter) mergeSQLFor(ops []flow.MergeOp) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mergeSQL != "" {
		return nil
	}
	if w.s.key == nil {
		return w.s.errorf("merges an aggregate's rows by the table's PRIMARY KEY, and it has none")
	}
	const cur = "kshare_cur"
	var set []string
	for k, op := range ops {
		q := pgx.Identifier{w.t.cols[k]}.Sanitize()
		old, now := cur+"."+q, "EXCLUDED."+q
		switch op {
		case flow.MergeKey:
			continue
		case flow.MergeAdd:
			set = append(set, fmt.Sprintf("%s = COALESCE(%s + %s, %s, %s)", q, old, now, old, now))
		case flow.MergeMin:
			set = append(set, fmt.Sprintf("%s = LEAST(%s, %s)", q, old, now))
		case flow.MergeMax:
			set = append(set, fmt.Sprintf("%s = GREATEST(%s, %s)", q, old, now))
		}
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	keys := make([]string, len(w.s.key))
	for i, k := range w.s.key {
		keys[i] = pgx.Identifier{w.t.cols[k]}.Sanitize()
	}
	into, _, _ := strings.Cut(w.insertSQL, " (")
	w.mergeSQL = fmt.Sprintf("%s AS %s (%s ON CONFLICT (%s) %s", into, cur, strings.TrimPrefix(w.insertSQL, into+" ("), strings.Join(keys, ", "), action)
	return nil
}

// errMergedElsewhere is a merged batch some of whose records a transaction
// of another replica committed meanwhile (their locks ran out, and the
// share group handed them to it too): what the batch adds counts them
// again, and it cannot be taken apart after the fold.
var errMergedElsewhere = errors.New("another replica of the query wrote some of this batch's records meanwhile (their locks ran out while this one held them), " +
	"and an aggregate's batch cannot be written without them; the job stops, and its records come back to be folded by whoever gets them")

// flushMerged writes merged batches: their records' identities, then their
// increments. A batch's records were not applied when the query folded
// them (Applied); one stored since is either this writer's earlier attempt,
// whose commit's answer was lost (every record of the flush is stored: it
// is done), or another replica's (errMergedElsewhere).
func (w *writer) flushMerged(ctx context.Context, bs []*batch, all bool) error {
	w.dups = 0
	if all {
		stored, total, err := w.storedOf(ctx, bs)
		switch {
		case err != nil:
			return err
		case stored == total:
			return nil
		case stored > 0:
			return w.s.errorf("%w", errMergedElsewhere)
		}
	}
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return err
	}
	err = w.storeIDs(ctx, tx, bs)
	if err == nil {
		var rows [][]any
		var at [][2]int
		for bi, b := range bs {
			for ri, r := range b.rows {
				rows = append(rows, r)
				at = append(at, [2]int{bi, ri})
			}
		}
		if len(rows) > 0 {
			err = w.pipelined(ctx, tx, w.mergeSQL, rows, at)
		}
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// storedOf counts how many of bs's records are stored, of how many.
func (w *writer) storedOf(ctx context.Context, bs []*batch) (stored, total int, err error) {
	var streams, parts []int32
	var offs []int64
	seen := map[recordID]bool{}
	for _, b := range bs {
		for _, o := range b.origins {
			if id := w.idOf(o); !seen[id] {
				seen[id] = true
				streams, parts, offs = append(streams, id.stream), append(parts, id.partition), append(offs, id.offset)
			}
		}
	}
	rows, err := w.conn.Query(ctx, w.once.findSQL, streams, parts, offs)
	if err != nil {
		return 0, 0, err
	}
	for rows.Next() {
		stored++
	}
	return stored, len(seen), rows.Err()
}

// lookup is Applied's connection and stream numbers, apart from the
// flushes': the query asks from its own goroutine.
type lookup struct {
	mu      sync.Mutex
	conn    *pgx.Conn
	streams map[streamKey]int32 // the streams numbered so far
}

// Applied reports which of records a committed transaction stored.
func (w onceWriter) Applied(ctx context.Context, records []flow.Origin) ([]bool, error) {
	l := w.lookup
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil || l.conn.IsClosed() {
		conn, err := w.s.connect(ctx)
		if err != nil {
			return nil, err
		}
		l.conn = conn
	}
	out := make([]bool, len(records))
	var streams, parts []int32
	var offs []int64
	type id = recordID
	at := map[id][]int{}
	for i, o := range records {
		k := streamKey{o.Group, o.Topic}
		s, ok := l.streams[k]
		if !ok {
			var err error
			if s, ok, err = w.once.lookStream(ctx, l.conn, k); err != nil {
				return nil, w.s.errorf("looking up the records written: %w", err)
			}
			if !ok {
				continue // nothing of this stream was written yet
			}
			l.streams[k] = s
		}
		rid := id{stream: s, partition: o.Partition, offset: o.Offset}
		if at[rid] == nil {
			streams, parts, offs = append(streams, rid.stream), append(parts, rid.partition), append(offs, rid.offset)
		}
		at[rid] = append(at[rid], i)
	}
	if len(streams) == 0 {
		return out, nil
	}
	rows, err := l.conn.Query(ctx, w.once.findSQL, streams, parts, offs)
	if err != nil {
		return nil, w.s.errorf("looking up the records written: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var rid id
		if err := rows.Scan(&rid.stream, &rid.partition, &rid.offset); err != nil {
			return nil, err
		}
		for _, i := range at[rid] {
			out[i] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, w.s.errorf("looking up the records written: %w", err)
	}
	return out, nil
}

func (l *lookup) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		l.conn.Close(context.Background())
		l.conn = nil
	}
}
