package tabletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// TestSourceRecordsWhatBecameOfEachRow: the log and the verdicts say what
// the consumer did with each batch, as the tests that read them rely on: a
// mark kept on Done, unmarked rows accepted, a Reject kept on Abandon, what
// the consumer never settled given back by Close, and contract breaches
// logged.
func TestSourceRecordsWhatBecameOfEachRow(t *testing.T) {
	mem := CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	src := &Source{Schema: schema, EOF: true, FailAt: -1}
	src.Batches = FromJSON(t, mem, schema, 2, `{"id": 1}`, `{"id": 2}`, `{"id": 3}`, `{"id": 4}`, `{"id": 5}`)
	t.Cleanup(src.Release)
	if len(src.Batches) != 3 {
		t.Fatalf("%d batches of 5 rows by 2, want 3", len(src.Batches))
	}
	ctx := context.Background()
	st, err := src.Open(ctx, flow.OpenOptions{Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	next := func() flow.Batch {
		t.Helper()
		b, err := st.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b.Record.Release()
		return b
	}
	b0, b1, b2 := next(), next(), next()
	b0.Ack.Mark(1, flow.Release)
	b0.Ack.Done()
	b0.Ack.Done()
	b1.Ack.Mark(0, flow.Reject)
	b1.Ack.Mark(2, flow.Accept)
	b1.Ack.Abandon()
	if _, err := st.Next(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the last batch: %v, want io.EOF", err)
	}
	_ = b2 // never settled: Close gives it back
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"b0: done: accept 0, release 1",
		"b0: settled twice",
		"b1: Mark of row 2 out of range",
		"b1: abandon: release 1, reject 0",
		"b2: abandoned by close",
		"b2: abandon: release 0",
		"close (0 unread)",
	}
	if got := src.Log(); !slices.Equal(got, want) {
		t.Errorf("log\n  %q\nwant\n  %q", got, want)
	}
	if got, want := fmt.Sprint(src.Verdicts()), "[{0 0 accept false} {0 1 release false} {1 0 reject false} {1 1 release false} {2 0 release true}]"; got != want {
		t.Errorf("verdicts %s, want %s", got, want)
	}
	if s := st.Stats(); s.Rows != 5 || s.Accepted != 1 || s.Released != 3 || s.Rejected != 1 {
		t.Errorf("stats %+v, want 5 rows: 1 accepted, 3 released, 1 rejected", s)
	}
	if src.Opened() != 1 {
		t.Errorf("opened %d streams, want 1", src.Opened())
	}
}

// TestConnectorCountsWhatConsumersSettled: Settled leaves out what a
// stream's Close gave back, and a source that fails says so.
func TestConnectorCountsWhatConsumersSettled(t *testing.T) {
	mem := CheckedAlloc(t)
	c := &Connector{Kind: "mem", Fill: func(b *table.Bound, s *Source) {
		s.Batches = FromJSON(t, mem, s.Schema, 1, `{"id": 1}`, `{"id": 2}`)
		s.FailAt = 1
		t.Cleanup(s.Release)
	}}
	def := &table.Definition{Name: "t", Schema: types.Schema{Columns: []types.Column{{Name: "id", Type: types.BigIntType()}}}}
	if _, err := c.NewSource(&table.Bound{Def: def}); err != nil {
		t.Fatal(err)
	}
	src := c.Sources()[0]
	st, err := src.Open(context.Background(), flow.OpenOptions{Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b.Record.Release()
	if _, err := st.Next(context.Background()); err == nil || err.Error() != "fake stream: broker gone" {
		t.Errorf("Next at FailAt: %v, want the broker gone", err)
	}
	st.Close()
	if got := fmt.Sprint(c.Settled()); got != "map[]" {
		t.Errorf("settled %s, want nothing: only Close settled", got)
	}
}
