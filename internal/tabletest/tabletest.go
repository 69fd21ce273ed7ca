package tabletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// CheckedAlloc is Arrow memory for one test: when the test and every
// cleanup it registers after this call are done, all of it must have been
// released, or the test fails with the stacks of the allocations still held.
func CheckedAlloc(t testing.TB) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// Connector is a table connector whose tables are Sources in memory. A new
// table's source has the table's schema, no batches, and ends at once;
// Fill, or the test through Sources, gives it what it needs.
type Connector struct {
	Kind string                      // the name a table's 'connector' option gives
	With []options.Option            // the options its tables may set
	Keys []table.MetadataKey         // its metadata
	Fill func(*table.Bound, *Source) // if set, sets up each new source

	mu      sync.Mutex
	sources []*Source
}

func (c *Connector) Name() string { return c.Kind }
func (c *Connector) Options() *options.Set {
	return &options.Set{Owner: "connector '" + c.Kind + "'", Options: c.With}
}
func (c *Connector) Metadata() []table.MetadataKey { return c.Keys }

func (c *Connector) NewSource(b *table.Bound) (flow.Source, error) {
	s := &Source{Schema: b.Def.Schema.Arrow(), EOF: true, FailAt: -1}
	if c.Fill != nil {
		c.Fill(b, s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sources = append(c.sources, s)
	return s, nil
}

// Sources are the sources made so far, oldest first.
func (c *Connector) Sources() []*Source {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sources)
}

// Settled counts the rows of all its sources by disposition ("accept",
// "release", "reject"), as the consumers settled them (not those a stream's
// Close gave back).
func (c *Connector) Settled() map[string]int {
	out := map[string]int{}
	for _, s := range c.Sources() {
		for _, v := range s.Verdicts() {
			if !v.ByClose {
				out[v.Disposition.String()]++
			}
		}
	}
	return out
}

// Format is a format that decodes nothing: a Source's batches are built by
// the test itself.
type Format struct{ Kind string }

func (f Format) Name() string          { return f.Kind }
func (f Format) Options() *options.Set { return &options.Set{Owner: "format '" + f.Kind + "'"} }
func (Format) NewDecoder([]types.Column, options.Values) (table.Decoder, error) {
	return nil, nil
}

// Registry is a registry that holds c and the format named format.
func Registry(c *Connector, format string) *table.Registry {
	r := table.NewRegistry()
	r.RegisterConnector(c)
	r.RegisterFormat(Format{Kind: format})
	return r
}

// Source is an in-memory source: each stream hands out Batches in order,
// then ends (EOF) or waits for its context (an unbounded topic). Every
// settling call of every stream is written to its log, and every row's
// final disposition to its verdicts.
type Source struct {
	Schema  *arrow.Schema
	Batches []arrow.RecordBatch // held by the source (Release); each stream hands out references
	EOF     bool
	// FailAt, if >= 0, makes Next fail ("fake stream: broker gone") when
	// that batch would be handed out.
	FailAt  int
	OpenErr error
	// Handing, if set, runs in Next just before batch i is handed out.
	Handing func(i int)
	// Stats, if set, is what every stream's Stats says instead of its own
	// counts.
	Stats func() flow.Stats
	// Quiet skips the log and the verdicts, for benchmarks of the consumer
	// and not of the fake.
	Quiet bool
	// SaysWaiting makes a stream say that it waits for its reader
	// (flow.ReaderWaiter) once it handed out every batch, as a
	// kafka-sharegroup stream does once each member handed out its poll.
	SaysWaiting bool
	// OnEvalError, if set, makes every batch's Acker a flow.RowFailer
	// with that policy ('reject', 'release', 'dead-letter'; 'fail', whose
	// FailsRows is false). FailRow logs "b1: fail rows 2-3 (dead-letter):
	// <err>" and settles those rows at once, a dead letter as accepted
	// (as if its produce were acknowledged); Done and Abandon leave them.
	OnEvalError string
	// RecordRows, if above 1, is how many consecutive rows each record
	// gave: FailRow settles them together.
	RecordRows int
	// WrapAck, if set, wraps the Acker of batch i as the stream hands it
	// out, for a test of a reader that asks an Acker for an optional
	// capability (flow.RowOrigins, say). The wrapper must pass
	// Mark, Done and Abandon on, for the log and the verdicts.
	WrapAck func(i int, a flow.Acker) flow.Acker
	// Topic, if set, makes every batch's Acker tell the record behind
	// each row (flow.RowOrigins): of that topic, partition 0, its
	// offset the record's place among the records the stream handed out
	// (RecordRows rows each), delivery count 1. Unset, RowOrigin says it
	// cannot tell, as a source that knows no records would.
	Topic string
	// FirstOffset is the offset of the first record each stream hands out
	// (with Topic): a test that opens the source again with other batches
	// sets it past the records of the last stream, as a topic's offsets
	// go on.
	FirstOffset int64
	// BatchPartition, if set (with Topic), is the partition of the records
	// of each batch, by batch (partition 0 past its end).
	BatchPartition []int32
	// Named, if set (with Topic), are the partitions every stream names
	// before any record arrives (flow.Partitioned), as a
	// kafka-sharegroup stream names its topics'.
	Named []int32
	// LookupCfg, if set, is how a lookup join caches and retries this
	// source's lookups (see OpenLookup); nil: no cache, no retries.
	LookupCfg *flow.LookupConfig
	// LookupFailures is how many lookups fail from now on (see OpenLookup).
	LookupFailures int

	mu       sync.Mutex
	log      []string
	verdicts []Verdict
	streams  int
}

// Verdict is what became of one row: row Row of the stream's batch Batch
// (counted from 0 in each stream).
type Verdict struct {
	Batch, Row  int
	Disposition flow.Disposition
	// ByClose: the consumer never settled the batch; the stream's Close
	// gave it back.
	ByClose bool
}

func (s *Source) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

// Log is every settling call so far, in order.
func (s *Source) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// Verdicts are the fates of the rows settled so far, in the order they
// were settled.
func (s *Source) Verdicts() []Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.verdicts)
}

// Opened counts the streams opened so far.
func (s *Source) Opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams
}

// Release releases the source's own references to its batches.
func (s *Source) Release() {
	for _, b := range s.Batches {
		b.Release()
	}
	s.Batches = nil
}

func (s *Source) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	if s.OpenErr != nil {
		return nil, s.OpenErr
	}
	s.mu.Lock()
	s.streams++
	s.mu.Unlock()
	return &stream{src: s, acks: map[int]*acker{}, offset: s.FirstOffset}, nil
}

type stream struct {
	src    *Source
	next   int
	offset int64 // the first record of the next batch (Source.Topic)
	closed bool
	acks   map[int]*acker
	stats  flow.Stats
	mu     sync.Mutex
}

func (st *stream) Schema() *arrow.Schema { return st.src.Schema }

func (st *stream) Next(ctx context.Context) (flow.Batch, error) {
	if st.closed {
		return flow.Batch{}, errors.New("fake stream: Next after Close")
	}
	if st.next < len(st.src.Batches) {
		if st.next == st.src.FailAt {
			return flow.Batch{}, errors.New("fake stream: broker gone")
		}
		if st.src.Handing != nil {
			st.src.Handing(st.next)
		}
		b := st.src.Batches[st.next]
		b.Retain()
		a := &acker{id: st.next, st: st, rows: int(b.NumRows()), offset: st.offset, marks: map[int]flow.Disposition{}}
		per := max(st.src.RecordRows, 1)
		st.offset += int64((a.rows + per - 1) / per)
		st.acks[st.next] = a
		st.next++
		st.mu.Lock()
		st.stats.Records += b.NumRows()
		st.stats.Rows += b.NumRows()
		st.mu.Unlock()
		var ack flow.Acker = a
		if st.src.OnEvalError != "" {
			ack = &rowFailer{a}
		}
		if st.src.WrapAck != nil {
			ack = st.src.WrapAck(a.id, ack)
		}
		return flow.Batch{Record: b, Ack: ack}, nil
	}
	if st.src.EOF {
		return flow.Batch{}, io.EOF
	}
	<-ctx.Done()
	return flow.Batch{}, ctx.Err()
}

var _ flow.Partitioned = (*stream)(nil)

func (st *stream) Partitions() []flow.PartitionID {
	var ids []flow.PartitionID
	for _, p := range st.src.Named {
		ids = append(ids, flow.PartitionID{Topic: st.src.Topic, Partition: p})
	}
	return ids
}

func (st *stream) WaitsForReader() bool {
	return st.src.SaysWaiting && st.next == len(st.src.Batches)
}

func (st *stream) Stats() flow.Stats {
	if st.src.Stats != nil {
		return st.src.Stats()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stats
}

func (st *stream) Close() error {
	if st.closed {
		st.src.logf("close again")
		return nil
	}
	st.closed = true
	ids := make([]int, 0, len(st.acks))
	for id, a := range st.acks {
		if !a.settled {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		st.src.logf("b%d: abandoned by close", id)
		st.acks[id].settle(false, true)
	}
	st.src.logf("close (%d unread)", len(st.src.Batches)-st.next)
	return nil
}

// acker records what is done to one batch and counts the outcome per row
// as the flow.Acker contract says.
type acker struct {
	id      int
	st      *stream
	rows    int
	offset  int64 // of the batch's first record
	marks   map[int]flow.Disposition
	failed  map[int]bool // rows settled by FailRow
	settled bool
}

func (a *acker) Mark(row int, d flow.Disposition) {
	if a.settled {
		a.st.src.logf("b%d: Mark after settling", a.id)
	}
	if row < 0 || row >= a.rows {
		a.st.src.logf("b%d: Mark of row %d out of range", a.id, row)
	}
	a.marks[row] = d
}

func (a *acker) Done()    { a.settle(true, false) }
func (a *acker) Abandon() { a.settle(false, false) }

var _ flow.RowOrigins = (*acker)(nil)

// RowOrigin tells the record behind row when the source has a Topic.
func (a *acker) RowOrigin(row int) (flow.Origin, bool) {
	if a.st.src.Topic == "" || row < 0 || row >= a.rows {
		return flow.Origin{}, false
	}
	var part int32
	if a.id < len(a.st.src.BatchPartition) {
		part = a.st.src.BatchPartition[a.id]
	}
	return flow.Origin{Topic: a.st.src.Topic, Partition: part, Offset: a.offset + int64(row/max(a.st.src.RecordRows, 1)), DeliveryCount: 1}, true
}

// settle logs the final disposition of every row: "b0: done accept 0-2,
// release 3".
func (a *acker) settle(done, byClose bool) {
	if a.settled {
		a.st.src.logf("b%d: settled twice", a.id)
		return
	}
	a.settled = true
	src := a.st.src
	if src.Quiet {
		return
	}
	by := map[flow.Disposition][]int{}
	for i := 0; i < a.rows; i++ {
		if a.failed[i] {
			continue // settled by FailRow
		}
		d, marked := a.marks[i]
		switch {
		case !marked && done:
			d = flow.Accept
		case !done && d != flow.Reject:
			d = flow.Release
		}
		by[d] = append(by[d], i)
		src.mu.Lock()
		src.verdicts = append(src.verdicts, Verdict{Batch: a.id, Row: i, Disposition: d, ByClose: byClose})
		src.mu.Unlock()
		a.st.mu.Lock()
		switch d {
		case flow.Accept:
			a.st.stats.Accepted++
		case flow.Release:
			a.st.stats.Released++
		case flow.Reject:
			a.st.stats.Rejected++
		}
		a.st.mu.Unlock()
	}
	verb := "done"
	if !done {
		verb = "abandon"
	}
	var parts []string
	for _, d := range []flow.Disposition{flow.Accept, flow.Release, flow.Reject} {
		if rows := by[d]; len(rows) > 0 {
			parts = append(parts, d.String()+" "+ranges(rows))
		}
	}
	src.logf("b%d: %s: %s", a.id, verb, strings.Join(parts, ", "))
}

// rowFailer is an acker with the table's policy for rows that cannot be
// evaluated (Source.OnEvalError).
type rowFailer struct{ *acker }

var _ flow.RowFailer = (*rowFailer)(nil)

func (a *rowFailer) FailsRows() bool { return a.st.src.OnEvalError != "fail" }

func (a *rowFailer) FailRow(row int, err error) (from, to int) {
	src := a.st.src
	per := max(src.RecordRows, 1)
	from, to = row/per*per, min(row/per*per+per, a.rows)
	if a.settled || a.failed[row] {
		src.logf("b%d: FailRow of row %d after settling", a.id, row)
	}
	if a.failed == nil {
		a.failed = map[int]bool{}
	}
	d := flow.Accept // a dead letter's record is accepted
	switch src.OnEvalError {
	case "reject":
		d = flow.Reject
	case "release", "fail":
		d = flow.Release
	}
	for i := from; i < to; i++ {
		a.failed[i] = true
	}
	a.st.mu.Lock()
	a.st.stats.EvalErrors++
	a.st.mu.Unlock()
	if src.Quiet {
		return from, to
	}
	src.mu.Lock()
	for i := from; i < to; i++ {
		src.verdicts = append(src.verdicts, Verdict{Batch: a.id, Row: i, Disposition: d})
	}
	src.mu.Unlock()
	src.logf("b%d: fail rows %s (%s): %v", a.id, ranges(rangeOf(from, to)), src.OnEvalError, err)
	return from, to
}

func rangeOf(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// ranges writes sorted row numbers compactly: 0-2,5.
func ranges(rows []int) string {
	var b strings.Builder
	for i := 0; i < len(rows); {
		j := i
		for j+1 < len(rows) && rows[j+1] == rows[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", rows[i], rows[j])
		} else {
			fmt.Fprintf(&b, "%d", rows[i])
		}
		i = j + 1
	}
	return b.String()
}

// FromJSON builds batches of at most size rows (0: one batch) from JSON
// objects, one a row; a line may also hold several objects separated by
// commas.
func FromJSON(t testing.TB, mem memory.Allocator, schema *arrow.Schema, size int, rows ...string) []arrow.RecordBatch {
	t.Helper()
	if len(rows) == 0 {
		return nil
	}
	if size <= 0 {
		size = len(rows)
	}
	var out []arrow.RecordBatch
	for i := 0; i < len(rows); i += size {
		chunk := rows[i:min(i+size, len(rows))]
		rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader("["+strings.Join(chunk, ",")+"]"))
		if err != nil {
			for _, b := range out {
				b.Release()
			}
			t.Fatalf("rows %v: %v", chunk, err)
		}
		out = append(out, rec)
	}
	return out
}

// IDBatches builds a batch of each list of ids, in order, for a table whose
// first column (schema's) is a BIGINT: the ids are that column's values.
func IDBatches(t testing.TB, mem memory.Allocator, schema *arrow.Schema, batches ...[]int64) []arrow.RecordBatch {
	t.Helper()
	var out []arrow.RecordBatch
	for _, ids := range batches {
		rows := make([]string, len(ids))
		for i, id := range ids {
			rows[i] = fmt.Sprintf(`{%q: %d}`, schema.Field(0).Name, id)
		}
		out = append(out, FromJSON(t, mem, schema, 0, rows...)...)
	}
	return out
}

// OpenLookup makes every Source a flow.LookupSource, for the planner's
// tests of lookup joins: a lookup finds, for each key, the rows of
// Batches (in order) whose columns at o.Keys have the key's values (by
// their text, ValueStr). The Source's columns are taken to be the table's
// physical ones (a looked-up table in a test has no metadata columns).
// Each lookup is logged ("lookup: 2 keys, 3 rows"); LookupFailures, while
// above 0, makes the next lookup fail ("fake lookup: database gone") and
// counts down.
func (s *Source) OpenLookup(ctx context.Context, o flow.LookupOptions) (flow.Lookuper, error) {
	if s.OpenErr != nil {
		return nil, s.OpenErr
	}
	mem := o.Alloc
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &lookuper{src: s, keys: o.Keys, mem: mem}, nil
}

// LookupConfig is the source's LookupCfg, or no cache and no retries.
func (s *Source) LookupConfig() flow.LookupConfig {
	if s.LookupCfg != nil {
		return *s.LookupCfg
	}
	return flow.LookupConfig{}
}

type lookuper struct {
	src  *Source
	keys []int
	mem  memory.Allocator
}

func (l *lookuper) Lookup(ctx context.Context, keys arrow.RecordBatch) (arrow.RecordBatch, []int, error) {
	s := l.src
	s.mu.Lock()
	if s.LookupFailures > 0 {
		s.LookupFailures--
		s.log = append(s.log, fmt.Sprintf("lookup: %d keys, failed", keys.NumRows()))
		s.mu.Unlock()
		return nil, nil, errors.New("fake lookup: database gone")
	}
	s.mu.Unlock()
	var parts []arrow.RecordBatch
	var of []int
	for i := range int(keys.NumRows()) {
		for _, b := range s.Batches {
			for r := range int(b.NumRows()) {
				match := true
				for k, c := range l.keys {
					col := b.Column(c)
					if col.IsNull(r) || col.ValueStr(r) != keys.Column(k).ValueStr(i) {
						match = false
						break
					}
				}
				if match {
					parts = append(parts, b.NewSlice(int64(r), int64(r+1)))
					of = append(of, i)
				}
			}
		}
	}
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	cols := make([]arrow.Array, len(s.Schema.Fields()))
	for c := range cols {
		var err error
		if len(parts) == 0 {
			cols[c] = array.MakeArrayOfNull(l.mem, s.Schema.Field(c).Type, 0)
			continue
		}
		pieces := make([]arrow.Array, len(parts))
		for p, r := range parts {
			pieces[p] = r.Column(c)
		}
		if cols[c], err = array.Concatenate(pieces, l.mem); err != nil {
			return nil, nil, err
		}
	}
	out := array.NewRecordBatch(s.Schema, cols, int64(len(of)))
	for _, c := range cols {
		c.Release()
	}
	s.logf("lookup: %d keys, %d rows", keys.NumRows(), len(of))
	return out, of, nil
}

func (l *lookuper) Close() error { return nil }
