package kafka

// This file makes a changelog read from Kafka a table that a lookup join
// reads by key (FROM s JOIN t FOR SYSTEM_TIME AS OF s.proc_time ON ...):
// an 'upsert-kafka' table, or a 'kafka' table of changes (debezium-json)
// with a PRIMARY KEY. A follower reads the topic from its start and keeps
// going, keeping the latest row of each key in memory, or in the job's
// state directory (LookupOptions.Keep) with where it read up to, from
// which a follower started again goes on; a lookup first waits
// until the follower has read everything the topic held when the lookup
// began (its end offsets then), so that a row read after a change of its
// key was produced meets the changed row. Flink's processing-time temporal
// join against a compacted topic does the same from its state.

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// catchUpLimit bounds how long a lookup waits for the follower to reach the
// topic's end: a partition whose last offsets hold no record to read (a
// transaction's marker) is never reached, and a lookup then goes on with
// what was read. A variable for tests.
var catchUpLimit = 2 * time.Second

var (
	_ flow.VersionedSource  = (*upsertSource)(nil)
	_ flow.VersionedSource  = (*source)(nil)
	_ flow.LookupSource     = (*upsertSource)(nil)
	_ flow.LookupConfigurer = (*upsertSource)(nil)
	_ flow.LookupSource     = (*source)(nil)
	_ flow.LookupConfigurer = (*source)(nil)
)

// OpenLookup follows the upsert-kafka table's topic for a lookup join.
func (u *upsertSource) OpenLookup(ctx context.Context, o flow.LookupOptions) (flow.Lookuper, error) {
	return u.follow(ctx, o, func(alloc memory.Allocator) (*upsertRows, error) { return newUpsertRows(u.bound, u.key, alloc) })
}

// OpenLookup follows a kafka table of changes (a ChangelogFormat) with a
// PRIMARY KEY for a lookup join; other kafka tables are a log, not a table
// of rows by key, and are refused.
func (s *source) OpenLookup(ctx context.Context, o flow.LookupOptions) (flow.Lookuper, error) {
	if _, ok := s.bound.Format.(table.ChangelogFormat); !ok || s.bound.Def.PrimaryKey == nil {
		return nil, table.Errorf(s.bound.Def.Name, "a lookup join reads a table of rows by key: a 'kafka' table qualifies with a changelog format "+
			"('debezium-json') and a PRIMARY KEY; use an 'upsert-kafka' table for a compacted topic of rows")
	}
	return s.follow(ctx, o, nil)
}

// Versioned: a table with a WATERMARK orders its rows' versions by its
// column, for an event-time temporal join.
func (s *source) Versioned() bool { return s.bound.Def.Watermark != nil }

// KeepsRows: the follower keeps the table's rows itself (flow.RowKeeper),
// in LookupOptions.Keep when the job has a state directory.
func (s *source) KeepsRows() {}

// LookupConfig: the follower answers from memory, so nothing is cached in
// front of it; a lookup that fails (the follower's read failed) is not
// tried again, since the follower has stopped.
func (s *source) LookupConfig() flow.LookupConfig { return flow.LookupConfig{} }

// follow checks that the lookup's keys are the table's PRIMARY KEY, starts
// the follower from the topic's start and waits until it has read up to
// the end offsets of now.
func (s *source) follow(ctx context.Context, o flow.LookupOptions, upsert func(memory.Allocator) (*upsertRows, error)) (flow.Lookuper, error) {
	def := s.bound.Def
	phys, at := def.Schema.Physical()
	key := def.KeyIndexes()
	keyNames := func(idx []int) string {
		var ns []string
		for _, k := range idx {
			ns = append(ns, phys[k].Name)
		}
		return strings.Join(ns, ", ")
	}
	if !sameSet(o.Keys, key) {
		return nil, table.Errorf(def.Name, "a temporal join reads this table by its PRIMARY KEY (%s), and the join's ON gives %s; "+
			"join on the key's columns", keyNames(key), keyNames(o.Keys))
	}
	tsCol := -1
	if o.AsOf {
		if def.Watermark == nil {
			return nil, table.Errorf(def.Name, "an event-time temporal join reads the version of a row valid at a time, ordered by the table's WATERMARK column, and this table has none; declare WATERMARK FOR <its time column> AS ...")
		}
		k := slices.IndexFunc(phys, func(c types.Column) bool { return strings.EqualFold(c.Name, def.Watermark.Column) })
		if k < 0 {
			return nil, table.Errorf(def.Name, "an event-time temporal join orders the versions by the WATERMARK column '%s', which must be a column the topic's records give, not a computed one", options.Cut(def.Watermark.Column))
		}
		tsCol = at[k]
	}
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	follow := *s
	follow.startup, follow.bounded = ModeEarliest, ModeUnbounded
	var kept *keptRows
	if o.Keep != nil && tsCol < 0 {
		// The latest rows are kept on disk, with where the follower read
		// up to: it goes on from there.
		kept = &keptRows{keep: o.Keep, table: def.Name}
		var err error
		if follow.resume, err = kept.positions(); err != nil {
			return nil, table.Errorf(def.Name, "reading the rows kept for lookups back: %w", err)
		}
	}
	st, err := follow.open(ctx, flow.OpenOptions{Alloc: o.Alloc, Logger: o.Logger}, upsert)
	if err != nil {
		return nil, err
	}
	log, ok := st.(*LogStream)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("kafka: the follower of table '%s' is not a log stream", options.Cut(def.Name))
	}
	cl, err := kgo.NewClient(s.opts...)
	if err != nil {
		log.Close()
		return nil, table.Errorf(def.Name, "kafka client: %w", err)
	}
	f := &follower{src: s, log: log, adm: kadm.NewClient(cl), cl: cl, keys: o.Keys, phys: at, mem: o.Alloc, tsCol: tsCol, kept: kept,
		rows: map[string]slot{}, versions: map[string][]version{}, pos: map[flow.PartitionID]int64{}, done: make(chan struct{})}
	for p, off := range follow.resume {
		f.pos[p] = off
	}
	f.cond = sync.NewCond(&f.mu)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	go f.run()
	if err := f.catchUp(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sameSet reports whether a and b hold the same positions.
func sameSet(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// follower keeps the latest row of each key of a changelog topic. Its
// goroutine (run) applies the changes; Lookup reads them.
type follower struct {
	src  *source
	log  *LogStream
	adm  *kadm.Client
	cl   *kgo.Client
	keys []int // positions among the physical columns of the lookup's key, in its order
	phys []int // positions of the physical columns among the stream's columns
	mem  memory.Allocator
	// tsCol, for an event-time temporal join (LookupOptions.AsOf), is the
	// position among the stream's columns of the WATERMARK column, which
	// orders the versions; -1 otherwise.
	tsCol int
	// kept, if set, holds the latest rows on disk (LookupOptions.Keep)
	// instead of rows.
	kept *keptRows

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	mu   sync.Mutex
	cond *sync.Cond // signals progress of pos, or the end of run
	rows map[string]slot
	// versions are each key's rows in time (tsCol >= 0 only), oldest
	// first; a delete is a version without a row.
	versions map[string][]version
	pos      map[flow.PartitionID]int64 // the next offset to read of each partition
	err      error                      // why run ended
}

// version is a key's row from a time on (microseconds since the epoch);
// b is nil for a delete.
type version struct {
	at int64
	slot
}

// slot is where a key's row is: a row of a block.
type slot struct {
	b   *block
	row int
}

// block is a record of the rows the follower keeps, released when none of
// its rows is any key's row any more.
type block struct {
	rec  arrow.RecordBatch
	live int
}

func (b *block) drop() {
	if b.live--; b.live == 0 {
		b.rec.Release()
	}
}

// run applies the stream's changes until Close or an error.
func (f *follower) run() {
	defer close(f.done)
	for {
		b, err := f.log.Next(f.ctx)
		if err == nil {
			// The offsets the batch covers: every record up to the last
			// of each partition (those that gave no row too). They count
			// as read once the batch's rows are in, not before.
			pos := f.log.Positions()
			if err = f.apply(b, pos); err == nil {
				f.advance(pos)
			}
			b.Record.Release()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the topic's read ended")
			}
			f.mu.Lock()
			f.err = err
			f.cond.Broadcast()
			f.mu.Unlock()
			return
		}
	}
}

// advance notes that the partitions are read up to pos, for catchUp.
func (f *follower) advance(pos map[flow.PartitionID]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p, o := range pos {
		f.pos[p] = max(f.pos[p], o)
	}
	f.cond.Broadcast()
}

// apply keeps the rows of b's inserts and updates (+I, +U) by key, and
// forgets the keys b deletes (-D); a -U says nothing the +U after it does
// not.
func (f *follower) apply(b flow.Batch, pos map[flow.PartitionID]int64) error {
	if f.tsCol >= 0 {
		return f.applyVersions(b)
	}
	rec := b.Record
	last := map[string]int{} // key -> its last row of b, -1 for a delete
	var order []string
	f.changes(b, func(i int, k string, del bool) {
		if _, seen := last[k]; !seen {
			order = append(order, k)
		}
		last[k] = i
		if del {
			last[k] = -1
		}
	})
	var keep []int
	for _, k := range order {
		if r := last[k]; r >= 0 {
			keep = append(keep, r)
		}
	}
	slices.Sort(keep)
	blk, err := f.block(rec, keep)
	if err != nil {
		return err
	}
	if f.kept != nil {
		// Every partition's position, not only those of this batch.
		f.mu.Lock()
		all := maps.Clone(f.pos)
		f.mu.Unlock()
		for p, o := range pos {
			all[p] = max(all[p], o)
		}
		return f.kept.put(order, last, keep, blk, all)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range order {
		if old, ok := f.rows[k]; ok {
			old.b.drop()
			delete(f.rows, k)
		}
		if r := last[k]; r >= 0 {
			i, _ := slices.BinarySearch(keep, r)
			f.rows[k] = slot{b: blk, row: i}
			blk.live++
		}
	}
	return nil
}

// applyVersions adds b's changes to the keys' versions: an insert or an
// update is a version from its WATERMARK column's time, a delete one from
// its record's timestamp (a tombstone has no row to tell a time).
func (f *follower) applyVersions(b flow.Batch) error {
	rec := b.Record
	ro, _ := b.Ack.(flow.RowOrigins)
	type change struct {
		key string
		at  int64
		row int // -1 for a delete
	}
	var changes []change
	var keep []int
	f.changes(b, func(i int, k string, del bool) {
		if del {
			if ro == nil {
				return
			}
			if o, ok := ro.RowOrigin(i); ok {
				changes = append(changes, change{k, o.Timestamp * 1000, -1})
			}
			return
		}
		at, ok := micros(rec.Column(f.tsCol), i)
		if !ok {
			return // a version without a time is valid at no time
		}
		changes = append(changes, change{k, at, i})
		keep = append(keep, i)
	})
	blk, err := f.block(rec, keep)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range changes {
		v := version{at: c.at}
		if c.row >= 0 {
			i, _ := slices.BinarySearch(keep, c.row)
			v.slot = slot{b: blk, row: i}
			blk.live++
		}
		vs := f.versions[c.key]
		// After every version of the same time or earlier: the later
		// change of one time wins.
		at := sort.Search(len(vs), func(j int) bool { return vs[j].at > v.at })
		f.versions[c.key] = slices.Insert(vs, at, v)
	}
	return nil
}

// changes calls fn with each insert, update (+U) and delete of b, in
// order, and its row's key; a -U says nothing the +U after it does not,
// and a row without a key is no key's row.
func (f *follower) changes(b flow.Batch, fn func(row int, key string, del bool)) {
	keyCols := make([]arrow.Array, len(f.keys))
	for i, k := range f.keys {
		keyCols[i] = b.Record.Column(f.phys[k])
	}
	var buf []byte
	for i := range int(b.Record.NumRows()) {
		kind := flow.KindInsert
		if b.Kinds != nil {
			kind = b.Kinds[i]
		}
		if kind == flow.KindUpdateBefore {
			continue
		}
		var ok bool
		if buf, ok = flow.AppendKey(buf[:0], keyCols, i); ok {
			fn(i, string(buf), kind == flow.KindDelete)
		}
	}
}

// block is rec's physical columns at rows keep, as a block; nil for none.
func (f *follower) block(rec arrow.RecordBatch, keep []int) (*block, error) {
	if len(keep) == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, len(f.phys))
	fs := make([]arrow.Field, len(f.phys))
	for i, p := range f.phys {
		cols[i] = rec.Column(p)
		fs[i] = rec.Schema().Field(p)
	}
	taken, err := flow.Take(f.mem, cols, keep)
	if err != nil {
		return nil, err
	}
	blk := &block{rec: array.NewRecordBatch(arrow.NewSchema(fs, nil), taken, int64(len(keep)))}
	for _, c := range taken {
		c.Release()
	}
	return blk, nil
}

// micros is the TIMESTAMP at row i of a in microseconds since the epoch;
// ok is false for a NULL or a column of another type.
func micros(a arrow.Array, i int) (int64, bool) {
	ts, ok := a.(*array.Timestamp)
	if !ok || ts.IsNull(i) {
		return 0, false
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	v := int64(ts.Value(i))
	switch unit {
	case arrow.Second:
		return v * 1_000_000, true
	case arrow.Millisecond:
		return v * 1000, true
	case arrow.Microsecond:
		return v, true
	}
	return v / 1000, true
}

// catchUp waits until the follower has read up to the end offsets of now
// (catchUpLimit at most), or failed.
func (f *follower) catchUp(ctx context.Context) error {
	topics := f.src.topics
	ends, err := f.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return f.src.connectError(err)
	}
	want := map[flow.PartitionID]int64{}
	var lerr error
	ends.Each(func(e kadm.ListedOffset) {
		if e.Err != nil {
			lerr = errors.Join(lerr, fmt.Errorf("%s/%d: %w", e.Topic, e.Partition, e.Err))
			return
		}
		if e.Offset > 0 {
			want[flow.PartitionID{Topic: e.Topic, Partition: e.Partition}] = e.Offset
		}
	})
	if lerr != nil {
		return table.Errorf(f.src.bound.Def.Name, "listing the end offsets to look up: %w", lerr)
	}
	deadline := time.Now().Add(catchUpLimit)
	timer := time.AfterFunc(catchUpLimit, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() {
		f.mu.Lock()
		f.cond.Broadcast()
		f.mu.Unlock()
	})
	defer stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		if f.err != nil {
			return table.Errorf(f.src.bound.Def.Name, "following the topic for lookups: %w", f.err)
		}
		behind := false
		for p, end := range want {
			if f.pos[p] < end {
				behind = true
				break
			}
		}
		if !behind || time.Now().After(deadline) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		f.cond.Wait()
	}
}

// Lookup catches up with the topic, then finds each key's row.
func (f *follower) Lookup(ctx context.Context, keys arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	if err := f.catchUp(ctx); err != nil {
		return nil, nil, err
	}
	cols := make([]arrow.Array, keys.NumCols())
	for i := range cols {
		cols[i] = keys.Column(i)
	}
	var asOf arrow.Array
	if f.tsCol >= 0 {
		// The last column is the time each key's version is read at.
		asOf, cols = cols[len(cols)-1], cols[:len(cols)-1]
	}
	var of []int
	var parts []arrow.RecordBatch
	var buf []byte
	f.mu.Lock()
	for i := range int(keys.NumRows()) {
		var ok bool
		if buf, ok = flow.AppendKey(buf[:0], cols, i); !ok {
			continue
		}
		if f.kept != nil {
			row, err := f.kept.row(buf, f.mem)
			if err != nil {
				f.mu.Unlock()
				releaseAll(parts)
				return nil, nil, table.Errorf(f.src.bound.Def.Name, "reading a row kept for lookups: %w", err)
			}
			if row != nil {
				parts, of = append(parts, row), append(of, i)
			}
			continue
		}
		s, ok := f.rows[string(buf)]
		if asOf != nil {
			s, ok = f.versionAt(string(buf), asOf, i)
		}
		if ok {
			parts = append(parts, s.b.rec.NewSlice(int64(s.row), int64(s.row+1)))
			of = append(of, i)
		}
	}
	f.mu.Unlock()
	defer releaseAll(parts)
	def := f.src.bound.Def
	phys, _ := def.Schema.Physical()
	schema := (&types.Schema{Columns: phys}).Arrow()
	for _, p := range parts {
		if !schemaFits(p.Schema(), schema) {
			return nil, nil, table.Errorf(def.Name, "the state directory keeps rows of this table with other columns (%s) than it has now (%s): "+
				"use another state directory, or remove this one to read the topic again from its start", p.Schema(), schema)
		}
	}
	out := make([]arrow.Array, len(phys))
	for c := range out {
		if len(parts) == 0 {
			out[c] = array.MakeArrayOfNull(f.mem, schema.Field(c).Type, 0)
			continue
		}
		pieces := make([]arrow.Array, len(parts))
		for p, r := range parts {
			pieces[p] = r.Column(c)
		}
		var err error
		if out[c], err = array.Concatenate(pieces, f.mem); err != nil {
			for _, o := range out[:c] {
				o.Release()
			}
			return nil, nil, err
		}
	}
	rec := array.NewRecordBatch(schema, out, int64(len(of)))
	for _, c := range out {
		c.Release()
	}
	return rec, of, nil
}

// versionAt is key's row valid at the time at row i of asOf: its latest
// version from that time or earlier, unless that is a delete. Call with
// f.mu held.
func (f *follower) versionAt(key string, asOf arrow.Array, i int) (slot, bool) {
	t, ok := micros(asOf, i)
	if !ok {
		return slot{}, false
	}
	vs := f.versions[key]
	n := sort.Search(len(vs), func(j int) bool { return vs[j].at > t })
	if n == 0 || vs[n-1].b == nil {
		return slot{}, false
	}
	return vs[n-1].slot, true
}

// Close stops the follower and frees the rows it kept.
func (f *follower) Close() error {
	f.cancel()
	<-f.done
	err := f.log.Close()
	f.cl.Close()
	f.mu.Lock()
	for k, s := range f.rows {
		s.b.drop()
		delete(f.rows, k)
	}
	for k, vs := range f.versions {
		for _, v := range vs {
			if v.b != nil {
				v.b.drop()
			}
		}
		delete(f.versions, k)
	}
	f.mu.Unlock()
	return err
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// schemaFits reports whether got has want's column types, in order.
func schemaFits(got, want *arrow.Schema) bool {
	if got.NumFields() != want.NumFields() {
		return false
	}
	for i := range want.Fields() {
		if !arrow.TypeEqual(got.Field(i).Type, want.Field(i).Type) {
			return false
		}
	}
	return true
}

// keptRows are a follower's latest rows on disk (flow.Keep): each key's
// row under "row/" + the table + "/" + the key, and where the follower read
// up to under "pos/" + the table, written together.
type keptRows struct {
	keep  flow.Keep
	table string
	kbuf  []byte
	enc   flow.RowEncoder
}

func (k *keptRows) rowKey(key []byte) []byte {
	k.kbuf = append(append(append(k.kbuf[:0], "row/"...), k.table...), '/')
	return append(k.kbuf, key...)
}

func (k *keptRows) posKey() []byte { return []byte("pos/" + k.table) }

// positions are where the follower read up to when it last kept rows;
// nil before it ever did.
func (k *keptRows) positions() (map[flow.PartitionID]int64, error) {
	v, err := k.keep.Get(k.posKey())
	if err != nil || v == nil {
		return nil, err
	}
	out := map[flow.PartitionID]int64{}
	for len(v) > 0 {
		n, w := binary.Uvarint(v)
		if w <= 0 || uint64(len(v)-w) < n+12 {
			return nil, errors.New("kept positions end early")
		}
		topic := string(v[w : w+int(n)])
		v = v[w+int(n):]
		p := int32(binary.BigEndian.Uint32(v))
		out[flow.PartitionID{Topic: topic, Partition: p}] = int64(binary.BigEndian.Uint64(v[4:]))
		v = v[12:]
	}
	return out, nil
}

// put keeps the rows a batch of changes leaves (the row last[k] of keys
// order, -1 for a delete; blk holds rows keep), and the positions read up
// to, in one write.
func (k *keptRows) put(order []string, last map[string]int, keep []int, blk *block, pos map[flow.PartitionID]int64) error {
	if blk != nil {
		defer blk.rec.Release()
	}
	keys := make([][]byte, 0, len(order)+1)
	values := make([][]byte, 0, len(order)+1)
	for _, key := range order {
		keys = append(keys, slices.Clone(k.rowKey([]byte(key))))
		r := last[key]
		if r < 0 {
			values = append(values, nil)
			continue
		}
		i, _ := slices.BinarySearch(keep, r)
		row := blk.rec.NewSlice(int64(i), int64(i)+1)
		v, err := k.enc.Append(nil, row)
		row.Release()
		if err != nil {
			return err
		}
		values = append(values, v)
	}
	var pv []byte
	for _, p := range slices.SortedFunc(maps.Keys(pos), func(a, b flow.PartitionID) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	}) {
		pv = binary.AppendUvarint(pv, uint64(len(p.Topic)))
		pv = append(pv, p.Topic...)
		pv = binary.BigEndian.AppendUint32(pv, uint32(p.Partition))
		pv = binary.BigEndian.AppendUint64(pv, uint64(pos[p]))
	}
	keys, values = append(keys, k.posKey()), append(values, pv)
	return k.keep.Put(keys, values)
}

// row is key's row kept; nil for none.
func (k *keptRows) row(key []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	v, err := k.keep.Get(k.rowKey(key))
	if err != nil || v == nil {
		return nil, err
	}
	return flow.ReadRows(v, mem)
}
