package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// testConnector makes fakeSources; a test registry holds it, so that tables
// are defined with real DDL and bound by the real table layer.
type testConnector struct{}

func (testConnector) Name() string          { return "test" }
func (testConnector) Options() *options.Set { return &options.Set{Owner: "connector 'test'"} }
func (testConnector) Metadata() []table.MetadataKey {
	return []table.MetadataKey{
		{Key: "topic", Type: table.StringType().WithNotNull(true)},
		{Key: "partition", Type: table.IntType().WithNotNull(true)},
		{Key: "offset", Type: table.BigIntType().WithNotNull(true)},
		{Key: "timestamp", Type: table.TimestampLTZType(3).WithNotNull(true)},
		{Key: "key", Type: table.BytesType()},
		{Key: "headers", Type: table.MapType(table.StringType().WithNotNull(true), table.BytesType())},
	}
}
func (testConnector) NewSource(b *table.Bound) (table.Source, error) {
	return &fakeSource{schema: b.Def.Schema.Arrow(), eof: true, failAt: -1}, nil
}

// testFormat decodes nothing: fakeSource's batches are built from JSON by
// the test itself.
type testFormat struct{}

func (testFormat) Name() string          { return "test" }
func (testFormat) Options() *options.Set { return &options.Set{Owner: "format 'test'"} }
func (testFormat) NewDecoder([]table.Column, options.Values) (table.Decoder, error) {
	return nil, nil
}

func testRegistry() *table.Registry {
	r := table.NewRegistry()
	r.RegisterConnector(testConnector{})
	r.RegisterFormat(testFormat{})
	return r
}

// fakeSource is an in-memory source: each stream hands out the given batches
// in order, then ends (eof) or waits for its context (an unbounded topic).
// Every settling call of every stream is written to log.
type fakeSource struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch // retained by the source; each stream hands out references
	eof     bool
	// failAt, if >= 0, makes Next fail when that batch would be handed out.
	failAt  int
	openErr error
	// handing, if set, runs in Next just before batch i is handed out.
	handing func(i int)
	// quiet skips the log, for benchmarks of the query and not of the fake.
	quiet bool

	mu      sync.Mutex
	log     []string
	streams []*fakeStream
}

func (s *fakeSource) logf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

// Log is every settling call so far, in order.
func (s *fakeSource) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *fakeSource) release() {
	for _, b := range s.batches {
		b.Release()
	}
	s.batches = nil
}

func (s *fakeSource) Open(ctx context.Context, o table.OpenOptions) (table.Stream, error) {
	if s.openErr != nil {
		return nil, s.openErr
	}
	st := &fakeStream{src: s, acks: map[int]*fakeAcker{}}
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.mu.Unlock()
	return st, nil
}

type fakeStream struct {
	src    *fakeSource
	next   int
	closed bool
	acks   map[int]*fakeAcker
	stats  table.Stats
	mu     sync.Mutex
}

func (st *fakeStream) Schema() *arrow.Schema { return st.src.schema }

func (st *fakeStream) Next(ctx context.Context) (table.Batch, error) {
	if st.closed {
		return table.Batch{}, errors.New("fake stream: Next after Close")
	}
	if st.next < len(st.src.batches) {
		if st.next == st.src.failAt {
			return table.Batch{}, errors.New("fake stream: broker gone")
		}
		if st.src.handing != nil {
			st.src.handing(st.next)
		}
		b := st.src.batches[st.next]
		b.Retain()
		a := &fakeAcker{id: st.next, st: st, rows: int(b.NumRows()), marks: map[int]table.Disposition{}}
		st.acks[st.next] = a
		st.next++
		st.mu.Lock()
		st.stats.Records += b.NumRows()
		st.stats.Rows += b.NumRows()
		st.mu.Unlock()
		return table.Batch{Record: b, Ack: a}, nil
	}
	if st.src.eof {
		return table.Batch{}, io.EOF
	}
	<-ctx.Done()
	return table.Batch{}, ctx.Err()
}

func (st *fakeStream) Stats() table.Stats {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stats
}

func (st *fakeStream) Close() error {
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
		st.acks[id].settle(false)
	}
	st.src.logf("close (%d unread)", len(st.src.batches)-st.next)
	return nil
}

// fakeAcker records what is done to one batch and counts the outcome per
// row as the table.Acker contract says.
type fakeAcker struct {
	id      int
	st      *fakeStream
	rows    int
	marks   map[int]table.Disposition
	settled bool
}

func (a *fakeAcker) Mark(row int, d table.Disposition) {
	if a.settled {
		a.st.src.logf("b%d: Mark after settling", a.id)
	}
	if row < 0 || row >= a.rows {
		a.st.src.logf("b%d: Mark of row %d out of range", a.id, row)
	}
	a.marks[row] = d
}

func (a *fakeAcker) Done()    { a.settle(true) }
func (a *fakeAcker) Abandon() { a.settle(false) }

// settle logs the final disposition of every row: "b0: done accept 0-2,
// release 3".
func (a *fakeAcker) settle(done bool) {
	if a.settled {
		a.st.src.logf("b%d: settled twice", a.id)
		return
	}
	a.settled = true
	if a.st.src.quiet {
		return
	}
	by := map[table.Disposition][]int{}
	for i := 0; i < a.rows; i++ {
		d, marked := a.marks[i]
		switch {
		case !marked && done:
			d = table.Accept
		case !done && d != table.Reject:
			d = table.Release
		}
		by[d] = append(by[d], i)
		a.st.mu.Lock()
		switch d {
		case table.Accept:
			a.st.stats.Accepted++
		case table.Release:
			a.st.stats.Released++
		case table.Reject:
			a.st.stats.Rejected++
		}
		a.st.mu.Unlock()
	}
	verb := "done"
	if !done {
		verb = "abandon"
	}
	var parts []string
	for _, d := range []table.Disposition{table.Accept, table.Release, table.Reject} {
		if rows := by[d]; len(rows) > 0 {
			parts = append(parts, d.String()+" "+ranges(rows))
		}
	}
	a.st.src.logf("b%d: %s: %s", a.id, verb, strings.Join(parts, ", "))
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

// batchesFromJSON builds batches of at most size rows (0: one batch) from
// JSON lines, one object per row.
func batchesFromJSON(t testing.TB, mem memory.Allocator, schema *arrow.Schema, lines []string, size int) []arrow.RecordBatch {
	t.Helper()
	if len(lines) == 0 {
		return nil
	}
	if size <= 0 {
		size = len(lines)
	}
	var out []arrow.RecordBatch
	for i := 0; i < len(lines); i += size {
		chunk := lines[i:min(i+size, len(lines))]
		rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader("["+strings.Join(chunk, ",")+"]"))
		if err != nil {
			t.Fatalf("rows %v: %v", chunk, err)
		}
		out = append(out, rec)
	}
	return out
}

// newCatalog defines tables from DDL against the test registry.
func newCatalog(t testing.TB, ddl string) *table.Catalog {
	t.Helper()
	cat := table.NewCatalogWith(testRegistry())
	sts, err := parse.Parse(ddl)
	if err != nil {
		t.Fatalf("ddl: %v", err)
	}
	for _, st := range sts {
		if _, err := cat.Exec(st); err != nil {
			t.Fatalf("ddl: %v", err)
		}
	}
	return cat
}

// sourceOf is the fakeSource behind a catalog table.
func sourceOf(t testing.TB, cat *table.Catalog, name string) *fakeSource {
	t.Helper()
	tbl, err := cat.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Source.(*fakeSource)
}
