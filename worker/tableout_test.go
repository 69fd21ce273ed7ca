package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	kjson "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// fakeWriter keeps the ids it was given and answers each Write, from a
// goroutine of its own, with fail(batch number).
type fakeWriter struct {
	mu      sync.Mutex
	ids     []int64
	batches int
	fail    func(batch int) error
	wg      sync.WaitGroup
}

func (w *fakeWriter) Write(_ context.Context, rec arrow.RecordBatch, done func(error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batches++
	err := w.fail(w.batches)
	if err == nil {
		ids := rec.Column(0).(*array.Int64)
		for i := 0; i < ids.Len(); i++ {
			w.ids = append(w.ids, ids.Value(i))
		}
	}
	w.wg.Go(func() { done(err) })
	return nil
}

func (w *fakeWriter) Close() error          { w.wg.Wait(); return nil }
func (w *fakeWriter) Stats() flow.SinkStats { return flow.SinkStats{} }

func newTestTableOut(t *testing.T, w flow.Writer) *TableOut {
	t.Helper()
	alloc := memory.NewCheckedAllocator(memory.DefaultAllocator)
	t.Cleanup(func() { alloc.AssertSize(t, 0) })
	cols := []types.Column{{Name: "id", Type: types.BigIntType()}, {Name: "label", Type: types.StringType()}}
	opts, err := options.Parse(nil, nil, kjson.Options)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := kjson.Format{}.NewDecoder(cols, opts)
	if err != nil {
		t.Fatal(err)
	}
	o := NewTableOut("answers", cols, dec, w, alloc)
	t.Cleanup(o.Release)
	return o
}

// Rows that finish at once are written together, each exactly once, and
// each Write returns only after the write that held its row was answered.
func TestTableOutWritesEveryRowOnce(t *testing.T) {
	w := &fakeWriter{fail: func(int) error { return nil }}
	o := newTestTableOut(t, w)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := o.Write(Row{}, json.RawMessage(fmt.Sprintf(`{"id": %d, "label": "x"}`, i))); err != nil {
				t.Errorf("row %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	w.Close()
	seen := map[int64]int{}
	for _, id := range w.ids {
		seen[id]++
	}
	for i := range int64(n) {
		if seen[i] != 1 {
			t.Errorf("id %d written %d times", i, seen[i])
		}
	}
	if o.Rows() != n || len(w.ids) != n {
		t.Errorf("Rows() = %d, the writer got %d ids; want %d", o.Rows(), len(w.ids), n)
	}
	t.Logf("%d rows in %d writes", n, w.batches)
}

// An output that is not a row of the table fails its own Write and writes
// nothing; a failed write fails the Writes of its rows, and the next goes
// on.
func TestTableOutErrors(t *testing.T) {
	refused := errors.New("refused")
	w := &fakeWriter{fail: func(b int) error {
		if b == 1 {
			return refused
		}
		return nil
	}}
	o := newTestTableOut(t, w)
	for _, bad := range []string{`"not json"`, `{"id": "x"}`, `[1]`} {
		if err := o.Write(Row{}, json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), "--into answers: the program's output is not a row of the table") {
			t.Errorf("output %s: %v, want it refused as not a row", bad, err)
		}
	}
	if w.batches != 0 {
		t.Fatalf("%d writes for outputs that are no rows", w.batches)
	}
	if err := o.Write(Row{}, json.RawMessage(`{"id": 1}`)); !errors.Is(err, refused) {
		t.Errorf("first write: %v, want the writer's refusal", err)
	}
	if err := o.Write(Row{}, json.RawMessage(`{"id": 2, "label": null}`)); err != nil {
		t.Errorf("second write: %v", err)
	}
	if err := o.Write(Row{}, json.RawMessage(`[]`)); err != nil || w.batches != 2 {
		t.Errorf("an empty array: %v after %d writes; want nothing written", err, w.batches)
	}
	w.Close()
	if fmt.Sprint(w.ids) != "[2]" || o.Rows() != 1 {
		t.Errorf("written %v, Rows() %d; want [2], 1", w.ids, o.Rows())
	}
	o.Release()
	if err := o.Write(Row{}, json.RawMessage(`{"id": 3}`)); err == nil {
		t.Error("a Write after Release succeeded")
	}
}
