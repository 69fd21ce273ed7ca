package lookup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Source is a stream's table joined with a looked-up table.
type Source struct {
	// Table and Lookup are the names of the stream's table and of the
	// looked-up one, for messages.
	Table, Lookup string
	// Input is the stream's source; Right the looked-up table's.
	Input flow.Source
	Right flow.LookupSource
	// RightColumns are the looked-up table's physical columns, which follow
	// the input's columns in each batch.
	RightColumns []types.Column
	// Keys are the positions, among the columns of the input's batches, of
	// the join's key columns; RightKeys those of the columns they equal,
	// among RightColumns, in the same order.
	Keys, RightKeys []int
	// Outer keeps a row without a match, with NULLs for the looked-up
	// columns (LEFT JOIN); without it the row is left out.
	Outer bool
	// AsOf makes the join an event-time temporal join: each row meets the
	// version of the looked-up row valid at its time, the input's column
	// at AsOfColumn (a TIMESTAMP), which Right (a flow.VersionedSource)
	// is given after the keys.
	AsOf       bool
	AsOfColumn int
	// Residual, for an outer join, says which joined rows (the input's
	// columns, then RightColumns) meet the ON's conditions other than
	// the keys: a looked-up row matches only if it does. A row none of
	// whose matches does keeps its NULLs. nil: every key match matches.
	Residual func(mem memory.Allocator, rec arrow.RecordBatch) ([]bool, error)
}

var _ flow.Source = (*Source)(nil)

// DefaultRetries is how often a failed lookup is tried again when the
// looked-up table does not say (Flink's 'lookup.max-retries' default).
const DefaultRetries = 3

// Open connects the lookups first, so that a looked-up table that cannot
// be read fails the query before a record is taken, then opens the input.
func (s *Source) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if len(s.Keys) == 0 || len(s.Keys) != len(s.RightKeys) {
		return nil, fmt.Errorf("lookup join of table '%s' with '%s': %d key columns against %d", options.Cut(s.Table), options.Cut(s.Lookup), len(s.Keys), len(s.RightKeys))
	}
	cfg := flow.LookupConfig{MaxRetries: DefaultRetries}
	if c, ok := s.Right.(flow.LookupConfigurer); ok {
		cfg = c.LookupConfig()
	}
	lk, err := s.Right.OpenLookup(ctx, flow.LookupOptions{Keys: s.RightKeys, AsOf: s.AsOf, Keep: o.Keep, Alloc: o.Alloc, Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	// The input is read in its own batches, a LIMIT too: a row may find no
	// match, so the rows the reader needs say nothing of the records.
	o.Limit, o.Keep = 0, nil
	in, err := s.Input.Open(ctx, o)
	if err != nil {
		lk.Close()
		return nil, err
	}
	st := &stream{src: s, in: in, lk: lk, cfg: cfg, mem: o.Alloc, stats: flow.LookupStats{Table: s.Lookup}}
	if cfg.Cache {
		st.cache = newCache(max(cfg.MaxRows, 1), cfg.ExpireAfterWrite, cfg.ExpireAfterAccess)
	}
	fs := slices.Clone(in.Schema().Fields())
	var keyFields []arrow.Field
	for _, c := range s.RightColumns {
		fs = append(fs, arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable() || s.Outer})
	}
	for i, k := range s.Keys {
		if k < 0 || k >= len(in.Schema().Fields()) || s.RightKeys[i] < 0 || s.RightKeys[i] >= len(s.RightColumns) {
			in.Close()
			lk.Close()
			return nil, fmt.Errorf("lookup join of table '%s' with '%s': key column %d is out of range", options.Cut(s.Table), options.Cut(s.Lookup), i+1)
		}
		rc := s.RightColumns[s.RightKeys[i]]
		keyFields = append(keyFields, arrow.Field{Name: rc.Name, Type: rc.Type.ArrowType(), Nullable: true})
		st.casts = append(st.casts, !arrow.TypeEqual(in.Schema().Field(k).Type, rc.Type.ArrowType()))
	}
	if s.AsOf {
		if s.AsOfColumn < 0 || s.AsOfColumn >= len(in.Schema().Fields()) {
			in.Close()
			lk.Close()
			return nil, fmt.Errorf("lookup join of table '%s' with '%s': the time column is out of range", options.Cut(s.Table), options.Cut(s.Lookup))
		}
		f := in.Schema().Field(s.AsOfColumn)
		keyFields = append(keyFields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: true})
		st.casts = append(st.casts, false)
	}
	st.schema = arrow.NewSchema(fs, nil)
	st.keySchema = arrow.NewSchema(keyFields, nil)
	return st, nil
}

// stream is an open lookup join: Next reads a batch of the input, looks
// its keys up and hands out the joined rows.
type stream struct {
	src       *Source
	in        flow.Stream
	lk        flow.Lookuper
	cfg       flow.LookupConfig
	cache     *cache // nil: 'lookup.cache' = 'NONE'
	mem       memory.Allocator
	schema    *arrow.Schema
	keySchema *arrow.Schema
	casts     []bool // whether the input's key column i is cast to the looked-up column's type

	// mu guards stats, which Stats reads from other goroutines.
	mu    sync.Mutex
	stats flow.LookupStats
}

var (
	_ flow.FetchStopper = (*stream)(nil)
	_ flow.ReaderWaiter = (*stream)(nil)
	_ flow.Partitioned  = (*stream)(nil)
)

func (st *stream) Schema() *arrow.Schema { return st.schema }

func (st *stream) Stats() flow.Stats {
	s := st.in.Stats()
	st.mu.Lock()
	l := st.stats
	st.mu.Unlock()
	s.Lookup = &l
	return s
}

func (st *stream) StopFetching() {
	if fs, ok := st.in.(flow.FetchStopper); ok {
		fs.StopFetching()
	}
}

func (st *stream) WaitsForReader() bool {
	rw, ok := st.in.(flow.ReaderWaiter)
	return ok && rw.WaitsForReader()
}

func (st *stream) Partitions() []flow.PartitionID {
	if p, ok := st.in.(flow.Partitioned); ok {
		return p.Partitions()
	}
	return nil
}

func (st *stream) Close() error {
	err := st.in.Close()
	if st.cache != nil {
		st.cache.clear()
	}
	if lerr := st.lk.Close(); err == nil && lerr != nil {
		err = lerr
	}
	return err
}

// Next joins the input's next batch. A lookup that fails after its retries
// releases the batch's records and ends the read.
func (st *stream) Next(ctx context.Context) (flow.Batch, error) {
	b, err := st.in.Next(ctx)
	if err != nil {
		return flow.Batch{}, err
	}
	out, from, err := st.join(ctx, b.Record)
	if err != nil {
		b.Ack.Abandon()
		b.Record.Release()
		return flow.Batch{}, err
	}
	var kinds []flow.RowKind
	if b.Kinds != nil {
		kinds = make([]flow.RowKind, len(from))
		for i, r := range from {
			kinds[i] = b.Kinds[r]
		}
	}
	b.Record.Release()
	return flow.Batch{Record: out, Ack: flow.MapAck(b.Ack, from), Kinds: kinds}, nil
}

// join is rec's rows joined with their matches; from[i] is the row of rec
// that the result's row i came from.
func (st *stream) join(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	n := int(rec.NumRows())
	keyCols, err := st.keyColumns(ctx, rec)
	if err != nil {
		return nil, nil, err
	}
	defer releaseAll(keyCols)
	// Each row's key (flow.AppendKey); rows with a NULL in a key column
	// match nothing (= is never true for NULL).
	distinct := map[string]int{}
	var firsts []int     // the first row of each distinct key
	var keys []string    // each distinct key
	of := make([]int, n) // each row's distinct key, -1 for a NULL key
	var buf []byte
	for i := range n {
		var ok bool
		if buf, ok = flow.AppendKey(buf[:0], keyCols, i); !ok {
			of[i] = -1
			continue
		}
		d, seen := distinct[string(buf)] // no copy: a lookup by bytes
		if !seen {
			k := string(buf)
			d = len(firsts)
			distinct[k] = d
			firsts = append(firsts, i)
			keys = append(keys, k)
		}
		of[i] = d
	}
	found := make([]arrow.RecordBatch, len(firsts)) // each key's rows; nil for none
	defer releaseAll(found)
	now := time.Now()
	var miss []int
	hits := 0
	for d := range firsts {
		if st.cache != nil {
			if rows, ok := st.cache.get(keys[d], now); ok {
				hits++
				if rows != nil {
					rows.Retain()
					found[d] = rows
				}
				continue
			}
		}
		miss = append(miss, d)
	}
	st.mu.Lock()
	st.stats.Hits += int64(hits)
	if st.cache != nil {
		st.stats.Misses += int64(len(miss))
	}
	st.mu.Unlock()
	if len(miss) > 0 {
		if err := st.lookup(ctx, keyCols, firsts, keys, miss, found, now); err != nil {
			return nil, nil, err
		}
	}
	return st.build(rec, of, found)
}

// keyColumns are rec's key columns, each of the looked-up column's type.
func (st *stream) keyColumns(ctx context.Context, rec arrow.RecordBatch) ([]arrow.Array, error) {
	cols := make([]arrow.Array, 0, len(st.src.Keys)+1)
	keys := st.src.Keys
	if st.src.AsOf {
		// The time travels with the keys: a key at two times is two
		// lookups.
		keys = append(slices.Clone(keys), st.src.AsOfColumn)
	}
	for i, k := range keys {
		c := rec.Column(k)
		if !st.casts[i] {
			c.Retain()
			cols = append(cols, c)
			continue
		}
		cast, err := compute.CastArray(compute.WithAllocator(ctx, st.mem), c, compute.SafeCastOptions(st.keySchema.Field(i).Type))
		if err != nil {
			releaseAll(cols)
			return nil, fmt.Errorf("lookup join of table '%s' with '%s': key column '%s' as %s: %w",
				options.Cut(st.src.Table), options.Cut(st.src.Lookup), st.in.Schema().Field(k).Name, st.keySchema.Field(i).Type, err)
		}
		cols = append(cols, cast)
	}
	return cols, nil
}

// lookup looks the keys miss up (distinct keys, by index into firsts and
// keys) in one call, tried again on error, and puts each one's rows into
// found and the cache.
func (st *stream) lookup(ctx context.Context, keyCols []arrow.Array, firsts []int, keys []string, miss []int, found []arrow.RecordBatch, now time.Time) error {
	ib := array.NewInt32Builder(st.mem)
	for _, d := range miss {
		ib.Append(int32(firsts[d]))
	}
	idx := ib.NewArray()
	ib.Release()
	defer idx.Release()
	cols := make([]arrow.Array, len(keyCols))
	for i, c := range keyCols {
		t, err := compute.TakeArray(compute.WithAllocator(ctx, st.mem), c, idx)
		if err != nil {
			releaseAll(cols[:i])
			return err
		}
		cols[i] = t
	}
	kr := array.NewRecordBatch(st.keySchema, cols, int64(len(miss)))
	releaseAll(cols)
	defer kr.Release()
	rows, at, err := st.call(ctx, kr)
	if err != nil {
		return err
	}
	defer rows.Release()
	st.mu.Lock()
	st.stats.Queries++
	st.stats.Keys += int64(len(miss))
	st.stats.Rows += rows.NumRows()
	st.mu.Unlock()
	for j := 0; j < len(at); {
		k := j
		for k < len(at) && at[k] == at[j] {
			k++
		}
		if at[j] < 0 || at[j] >= len(miss) || (j > 0 && at[j] < at[j-1]) {
			return fmt.Errorf("lookup of table '%s': the rows found are not in the order of the keys asked", options.Cut(st.src.Lookup))
		}
		d := miss[at[j]]
		found[d] = rows.NewSlice(int64(j), int64(k))
		j = k
	}
	if st.cache != nil {
		for _, d := range miss {
			if found[d] != nil || st.cfg.CacheMissingKey {
				st.cache.put(keys[d], found[d], now)
			}
		}
	}
	return nil
}

// call is one Lookup, tried again 'lookup.max-retries' times after an
// error, 100 ms after the first and twice as long after each next, up to
// 2 s.
func (st *stream) call(ctx context.Context, keys arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	wait := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		rows, at, err := st.lk.Lookup(ctx, keys)
		if err == nil {
			if rows.NumRows() != int64(len(at)) {
				rows.Release()
				return nil, nil, fmt.Errorf("lookup of table '%s': %d rows found but %d keys said for them", options.Cut(st.src.Lookup), rows.NumRows(), len(at))
			}
			return rows, at, nil
		}
		if attempt >= st.cfg.MaxRetries || ctx.Err() != nil {
			if attempt > 0 {
				err = fmt.Errorf("%w (tried %d times; 'lookup.max-retries' is %d)", err, attempt+1, st.cfg.MaxRetries)
			}
			return nil, nil, err
		}
		st.mu.Lock()
		st.stats.Retries++
		st.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// build is the joined batch: rec's rows, each once per match (or once
// with NULLs, for an outer join), followed by the match's columns.
func (st *stream) build(rec arrow.RecordBatch, of []int, found []arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	// The matches used, one after another, and where each key's start.
	var pieces []arrow.RecordBatch
	start := make([]int, len(found))
	total := 0
	for d, r := range found {
		if r != nil && r.NumRows() > 0 {
			start[d] = total
			total += int(r.NumRows())
			pieces = append(pieces, r)
		}
	}
	// Each result row's input row and match (-1: NULLs).
	from := make([]int, 0, len(of))
	var right []int
	for i, d := range of {
		var r arrow.RecordBatch
		if d >= 0 {
			r = found[d]
		}
		if r == nil || r.NumRows() == 0 {
			if st.src.Outer {
				from = append(from, i)
				right = append(right, -1)
			}
			continue
		}
		for j := range int(r.NumRows()) {
			from = append(from, i)
			right = append(right, start[d]+j)
		}
	}
	out, err := st.assemble(rec, pieces, from, right)
	if err != nil || st.src.Residual == nil {
		return out, from, err
	}
	keep, err := st.src.Residual(st.mem, out)
	out.Release()
	if err != nil {
		return nil, nil, err
	}
	// A row keeps the matches that meet the conditions; one left with
	// none keeps its NULLs (this is an outer join's).
	kf, kr := from[:0:0], right[:0:0]
	for k := 0; k < len(from); {
		e := k
		for e < len(from) && from[e] == from[k] {
			e++
		}
		n := len(kf)
		for q := k; q < e; q++ {
			if right[q] >= 0 && keep[q] {
				kf, kr = append(kf, from[q]), append(kr, right[q])
			}
		}
		if len(kf) == n && st.src.Outer {
			kf, kr = append(kf, from[k]), append(kr, -1)
		}
		k = e
	}
	out, err = st.assemble(rec, pieces, kf, kr)
	return out, kf, err
}

// assemble is the rows from of rec, each followed by the concatenated
// pieces' row at right (NULLs where right is -1).
func (st *stream) assemble(rec arrow.RecordBatch, pieces []arrow.RecordBatch, from, right []int) (arrow.RecordBatch, error) {
	rb := array.NewInt32Builder(st.mem)
	defer rb.Release()
	for _, r := range right {
		if r < 0 {
			rb.AppendNull()
		} else {
			rb.Append(int32(r))
		}
	}
	idx := rb.NewArray()
	defer idx.Release()
	ctx := compute.WithAllocator(context.Background(), st.mem)
	cols, err := flow.Take(st.mem, rec.Columns(), from)
	if err != nil {
		return nil, err
	}
	for k, c := range st.src.RightColumns {
		var all arrow.Array
		switch {
		case len(pieces) == 0:
			all = array.MakeArrayOfNull(st.mem, c.Type.ArrowType(), 1)
		default:
			parts := make([]arrow.Array, len(pieces))
			for p, r := range pieces {
				parts[p] = r.Column(k)
			}
			if all, err = array.Concatenate(parts, st.mem); err != nil {
				releaseAll(cols)
				return nil, err
			}
		}
		t, err := compute.TakeArray(ctx, all, idx)
		all.Release()
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
		cols = append(cols, t)
	}
	out := array.NewRecordBatch(st.schema, cols, int64(len(from)))
	releaseAll(cols)
	return out, nil
}

func releaseAll[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		if any(x) != nil {
			x.Release()
		}
	}
}

// A Joined is the source of a joined table: the lookup join behind it.
type Joined interface {
	flow.Source
	Join() *Source
}

// Join is s itself (Joined).
func (s *Source) Join() *Source { return s }

// Reader is s as the planner's table reads it: with the capabilities of its
// input that say how its records are taken, since the joined rows' records
// are the input's. A share group's progress (flow.ShareProgress) lets a
// job keep its state in a directory and prune it; a reader that takes
// nothing (flow.Looker, a plain kafka table) consumes nothing here either.
func (s *Source) Reader() Joined {
	switch in := s.Input.(type) {
	case flow.ShareProgress:
		return shareJoin{s, in}
	case flow.Looker:
		return lookJoin{s}
	}
	return s
}

type shareJoin struct {
	*Source
	progress flow.ShareProgress
}

func (j shareJoin) ShareStartOffsets(ctx context.Context) (string, []flow.PartitionStart, error) {
	return j.progress.ShareStartOffsets(ctx)
}

type lookJoin struct{ *Source }

func (lookJoin) TakesNothing() {}

var (
	_ flow.ShareProgress = shareJoin{}
	_ flow.Looker        = lookJoin{}
)
