package query

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

const ordersDDL = `CREATE TABLE orders (
  id INT NOT NULL,
  qty INT,
  ` + "`offset`" + ` BIGINT METADATA VIRTUAL
) WITH ('connector' = 'test', 'format' = 'test')`

// fixture is a catalog with one table, orders, whose source hands out rows
// (JSON lines) in batches of size.
type fixture struct {
	t   *testing.T
	mem *memory.CheckedAllocator
	cat *table.Catalog
	src *tabletest.Source
}

func newFixture(t *testing.T, size int, rows ...string) *fixture {
	t.Helper()
	f := &fixture{t: t, mem: tabletest.CheckedAlloc(t)}
	f.cat = newCatalog(t, ordersDDL)
	f.src = sourceOf(t, f.cat, "orders")
	f.src.Batches = tabletest.FromJSON(t, f.mem, f.src.Schema, size, rows...)
	t.Cleanup(f.src.Release)
	return f
}

func (f *fixture) run(ctx context.Context, sql string, o Options) *Rows {
	f.t.Helper()
	p, err := Prepare(sql, f.cat)
	if err != nil {
		f.t.Fatalf("prepare %q: %v", sql, err)
	}
	o.Alloc = f.mem
	r, err := Run(ctx, p, o)
	if err != nil {
		f.t.Fatalf("run %q: %v", sql, err)
	}
	return r
}

func (f *fixture) wantLog(want ...string) {
	f.t.Helper()
	if got := f.src.Log(); !slices.Equal(got, want) {
		f.t.Errorf("source was told:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func ids(t *testing.T, r *Rows) []int32 {
	t.Helper()
	var out []int32
	col := r.RecordBatch().Column(0).(*array.Int32)
	for i := 0; i < col.Len(); i++ {
		out = append(out, col.Value(i))
	}
	return out
}

// allIDs reads r to its end and returns the first column of every batch.
func allIDs(t *testing.T, r *Rows) []int32 {
	t.Helper()
	var got []int32
	for r.Next() {
		got = append(got, ids(t, r)...)
	}
	return got
}

func rowsN(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, `{"id": `+strconv.Itoa(i)+`, "qty": `+strconv.Itoa(i%3)+`, "offset": `+strconv.Itoa(100+i)+`}`)
	}
	return out
}

func TestLimitInTheMiddleOfABatchReleasesTheRest(t *testing.T) {
	f := newFixture(t, 4, rowsN(8)...)
	r := f.run(context.Background(), "SELECT id FROM orders LIMIT 6", Options{})
	got := allIDs(t, r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int32{0, 1, 2, 3, 4, 5}) || r.EndReason() != EndLimit {
		t.Fatalf("got %v, end %s; want 0-5, limit", got, r.EndReason())
	}
	r.Close()
	f.wantLog("b0: done: accept 0-3", "b1: done: accept 0-1, release 2-3", "close (0 unread)")
	s := r.Stats()
	if s.Rows != 6 || s.Delivered != 6 || s.Batches != 2 || s.Source.Accepted != 6 || s.Source.Released != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestWhereFilteredRowsAreAccepted(t *testing.T) {
	f := newFixture(t, 3, rowsN(6)...)
	r := f.run(context.Background(), "SELECT id FROM orders WHERE qty = 2", Options{})
	got := allIDs(t, r)
	if !slices.Equal(got, []int32{2, 5}) || r.Err() != nil || r.EndReason() != EndEOF {
		t.Fatalf("got %v, %v, %s", got, r.Err(), r.EndReason())
	}
	r.Close()
	f.wantLog("b0: done: accept 0-2", "b1: done: accept 0-2", "close (0 unread)")
	// Filtered rows are counted apart from the delivered ones.
	if s := r.Stats(); s.Delivered != 2 || s.Filtered != 4 {
		t.Errorf("delivered %d, filtered %d; want 2 and 4", s.Delivered, s.Filtered)
	}
	if !r.Plan().Filters() {
		t.Error("Plan.Filters is false for a query with WHERE")
	}
}

// Under LIMIT, only WHERE's drops before the last delivered row count as
// filtered: the rows after it are released, not accepted.
func TestFilteredCountStopsAtLimit(t *testing.T) {
	f := newFixture(t, 6, rowsN(6)...)
	r := f.run(context.Background(), "SELECT id FROM orders WHERE qty = 2 LIMIT 1", Options{})
	for r.Next() {
	}
	r.Close()
	f.wantLog("b0: done: accept 0-2, release 3-5", "close (0 unread)")
	if s := r.Stats(); s.Delivered != 1 || s.Filtered != 2 {
		t.Errorf("delivered %d, filtered %d; want 1 and 2", s.Delivered, s.Filtered)
	}
	r = f.run(context.Background(), "SELECT id FROM orders LIMIT 1", Options{})
	r.Close()
	if r.Plan().Filters() {
		t.Error("Plan.Filters is true for a query without WHERE")
	}
}

func TestBatchWithoutMatchIsSettledAtOnce(t *testing.T) {
	f := newFixture(t, 2, rowsN(6)...)
	r := f.run(context.Background(), "SELECT id FROM orders WHERE id = 5", Options{})
	if !r.Next() {
		t.Fatal(r.Err())
	}
	// b0 and b1 matched nothing: settled before b2 was handed out.
	f.wantLog("b0: done: accept 0-1", "b1: done: accept 0-1")
	r.Close()
}

func TestReleaseAndRejectRowsReachTheSource(t *testing.T) {
	f := newFixture(t, 4, rowsN(8)...)
	r := f.run(context.Background(), "SELECT id FROM orders WHERE id <> 1", Options{})
	if err := r.ReleaseRow(0); !errors.Is(err, ErrNoBatch) {
		t.Errorf("ReleaseRow before Next: %v, want ErrNoBatch", err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	// Result rows 0 1 2 are source rows 0 2 3.
	if err := r.ReleaseRow(1); err != nil {
		t.Fatal(err)
	}
	if err := r.RejectRow(2); err != nil {
		t.Fatal(err)
	}
	if err := r.RejectRow(3); err == nil {
		t.Error("RejectRow(3) of a 3-row batch: no error")
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	f.wantLog("b0: done: accept 0-1, release 2, reject 3")
	if err := r.ReleaseRow(3); err != nil {
		t.Fatal(err)
	}
	r.Close()
	f.wantLog("b0: done: accept 0-1, release 2, reject 3", "b1: done: accept 0-2, release 3", "close (0 unread)")
	s := r.Stats()
	if s.Rows != 7 || s.Delivered != 4 || s.Released != 2 || s.Rejected != 1 {
		t.Errorf("stats %+v", s)
	}
	if err := r.ReleaseRow(0); !errors.Is(err, ErrNoBatch) {
		t.Errorf("ReleaseRow after Close: %v, want ErrNoBatch", err)
	}
}

func TestReleaseBatch(t *testing.T) {
	f := newFixture(t, 3, rowsN(6)...)
	r := f.run(context.Background(), "SELECT id FROM orders WHERE id <> 1", Options{})
	if err := r.ReleaseBatch(); !errors.Is(err, ErrNoBatch) {
		t.Errorf("ReleaseBatch before Next: %v", err)
	}
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if err := r.ReleaseBatch(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	// The filtered row 1 is accepted: only handed-out rows were not written.
	f.wantLog("b0: done: accept 1, release 0,2", "close (1 unread)")
	if s := r.Stats(); s.Released != 2 || s.Delivered != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestCloseSettlesTheCurrentBatchAsDelivered(t *testing.T) {
	f := newFixture(t, 2, rowsN(6)...)
	f.src.EOF = false
	r := f.run(context.Background(), "SELECT * FROM orders", Options{})
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f.wantLog("b0: done: accept 0-1", "close (2 unread)")
	if r.EndReason() != EndClosed || r.Err() != nil || r.Next() {
		t.Errorf("after Close: %s, %v", r.EndReason(), r.Err())
	}
}

func TestReleaseClosesWithTheLastReference(t *testing.T) {
	f := newFixture(t, 2, rowsN(4)...)
	r := f.run(context.Background(), "SELECT id FROM orders", Options{})
	r.Retain()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	r.Release()
	f.wantLog()
	r.Release()
	f.wantLog("b0: done: accept 0-1", "close (1 unread)")
}

func TestCancelEndsTheQueryAndAbandonsWhatWasNotHandedOut(t *testing.T) {
	f := newFixture(t, 2, rowsN(6)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The context ends while the stream hands out b1: b1 must not reach the
	// caller and goes back whole.
	f.src.Handing = func(i int) {
		if i == 1 {
			cancel()
		}
	}
	r := f.run(ctx, "SELECT id FROM orders", Options{})
	if !r.Next() {
		t.Fatal(r.Err())
	}
	if r.Next() {
		t.Fatal("Next after cancel returned a batch")
	}
	if !errors.Is(r.Err(), context.Canceled) || r.EndReason() != EndCancelled {
		t.Errorf("after cancel: %v, %s", r.Err(), r.EndReason())
	}
	f.wantLog("b0: done: accept 0-1", "b1: abandon: release 0-1", "close (1 unread)")
	r.Close()
}

func TestCancelWhileWaiting(t *testing.T) {
	f := newFixture(t, 2, rowsN(2)...)
	f.src.EOF = false
	ctx, cancel := context.WithCancel(context.Background())
	r := f.run(ctx, "SELECT id FROM orders", Options{})
	if !r.Next() {
		t.Fatal(r.Err())
	}
	done := make(chan bool)
	go func() { done <- r.Next() }()
	cancel()
	if <-done {
		t.Fatal("Next after cancel returned a batch")
	}
	if !errors.Is(r.Err(), context.Canceled) || r.EndReason() != EndCancelled {
		t.Errorf("after cancel: %v, %s", r.Err(), r.EndReason())
	}
	f.wantLog("b0: done: accept 0-1", "close (0 unread)")
	r.Close()
}

func TestIdleTimeoutEndsWithoutError(t *testing.T) {
	f := newFixture(t, 2, rowsN(3)...)
	f.src.EOF = false
	r := f.run(context.Background(), "SELECT id FROM orders", Options{IdleTimeout: 20 * time.Millisecond})
	n := 0
	for r.Next() {
		n += int(r.RecordBatch().NumRows())
	}
	if n != 3 || r.Err() != nil || r.EndReason() != EndIdle {
		t.Fatalf("got %d rows, %v, %s; want 3 rows, no error, idle", n, r.Err(), r.EndReason())
	}
	f.wantLog("b0: done: accept 0-1", "b1: done: accept 0", "close (0 unread)")
	r.Close()
}

func TestIdleTimeoutFromTheStart(t *testing.T) {
	f := newFixture(t, 2)
	f.src.EOF = false
	start := time.Now()
	r := f.run(context.Background(), "SELECT id FROM orders", Options{IdleTimeout: 10 * time.Millisecond})
	if r.Next() || r.Err() != nil || r.EndReason() != EndIdle {
		t.Fatalf("empty topic: %v, %s", r.Err(), r.EndReason())
	}
	if time.Since(start) < 10*time.Millisecond {
		t.Error("ended before the idle timeout")
	}
	r.Close()
}

func TestEvaluationErrorEndsTheQueryAndAbandonsTheBatch(t *testing.T) {
	f := newFixture(t, 2, rowsN(6)...)
	// qty is 0 for ids 0 and 3: the first batch fails at once; start at id 1.
	r := f.run(context.Background(), "SELECT 10 / qty FROM orders WHERE id > 0", Options{})
	var err error
	for r.Next() {
	}
	err = r.Err()
	var qe *Error
	if !errors.Is(err, ErrEval) || !errors.As(err, &qe) || r.EndReason() != EndError {
		t.Fatalf("err %v, end %s; want ErrEval", err, r.EndReason())
	}
	f.wantLog("b0: done: accept 0-1", "b1: abandon: release 0-1", "close (1 unread)")
	r.Close()
}

func TestStreamErrorEndsTheQuery(t *testing.T) {
	f := newFixture(t, 2, rowsN(4)...)
	f.src.FailAt = 1
	r := f.run(context.Background(), "SELECT id FROM orders", Options{})
	for r.Next() {
	}
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "broker gone") || r.EndReason() != EndError {
		t.Fatalf("err %v, end %s", r.Err(), r.EndReason())
	}
	f.wantLog("b0: done: accept 0-1", "close (1 unread)")
	r.Close()
}

func TestLimitZeroOpensNothing(t *testing.T) {
	f := newFixture(t, 2, rowsN(4)...)
	r := f.run(context.Background(), "SELECT id FROM orders LIMIT 0", Options{})
	if r.Next() || r.EndReason() != EndLimit || r.Err() != nil {
		t.Fatalf("%v %s", r.Err(), r.EndReason())
	}
	r.Close()
	if f.src.Opened() != 0 {
		t.Error("LIMIT 0 opened a stream")
	}
}

func TestMaxRowsAndCloseAtTheBound(t *testing.T) {
	f := newFixture(t, 4, rowsN(8)...)
	r := f.run(context.Background(), "SELECT id FROM orders LIMIT 10", Options{MaxRows: 4})
	if !r.Next() {
		t.Fatal(r.Err())
	}
	// The bound is reached; Close (without another Next) ends for that reason.
	r.Close()
	if r.EndReason() != EndMaxRows {
		t.Errorf("end %s, want max-rows", r.EndReason())
	}
	f.wantLog("b0: done: accept 0-3", "close (1 unread)")
}

func TestOpenError(t *testing.T) {
	f := newFixture(t, 2)
	f.src.OpenErr = errors.New("no brokers")
	p, err := Prepare("SELECT id FROM orders", f.cat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), p, Options{Alloc: f.mem}); err == nil || !strings.Contains(err.Error(), "no brokers") {
		t.Fatalf("Run: %v", err)
	}
}

func TestResultIsARecordReader(t *testing.T) {
	f := newFixture(t, 2, rowsN(5)...)
	r := f.run(context.Background(), "SELECT id, qty * 2 AS q FROM orders", Options{})
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(r.Schema()), ipc.WithAllocator(f.mem))
	for r.Next() {
		if err := w.Write(r.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r.Release()
	rd, err := ipc.NewReader(&buf, ipc.WithAllocator(f.mem))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	n := 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	if n != 5 || rd.Schema().Field(1).Name != "q" {
		t.Errorf("read back %d rows, schema %s", n, rd.Schema())
	}
}

func TestRetainedBatchOutlivesNext(t *testing.T) {
	f := newFixture(t, 2, rowsN(4)...)
	r := f.run(context.Background(), "SELECT id + 1 FROM orders", Options{})
	if !r.Next() {
		t.Fatal(r.Err())
	}
	kept := r.RecordBatch()
	kept.Retain()
	for r.Next() {
	}
	r.Close()
	if kept.NumRows() != 2 || kept.Column(0).(*array.Int32).Value(1) != 2 {
		t.Errorf("kept batch %v", kept)
	}
	kept.Release()
}

func TestSettings(t *testing.T) {
	s := DefaultSettings()
	if s.Output != "table" || s.IdleTimeout != 0 || s.MaxRows != 0 {
		t.Fatalf("defaults %+v", s)
	}
	for _, kv := range [][2]string{{"output", "JSON"}, {"idle-timeout", "1500ms"}, {"max-rows", "10"}, {"max-column-width", "30"}} {
		if _, err := s.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if s.Output != "json" || s.IdleTimeout != 1500*time.Millisecond || s.MaxRows != 10 || s.MaxColumnWidth != 30 {
		t.Fatalf("after SET %+v", s)
	}
	for _, kv := range [][2]string{{"output", "xml"}, {"max-rows", "-1"}, {"idle-timeout", "soon"}, {"max-row", "1"},
		{"max-column-width", "-1"}, {"sql-client.execution.result-mode", "paged"}} {
		if _, err := s.Set(kv[0], kv[1]); err == nil {
			t.Errorf("SET %s = %s: no error", kv[0], kv[1])
		}
	}
	// A bare number is no duration: '5' is not taken as 5 ms.
	_, err := s.Set("idle-timeout", "5")
	if !errors.Is(err, options.ErrInvalid) || !strings.Contains(err.Error(), "units: ms, s, min, h, d") {
		t.Errorf("SET idle-timeout = 5: got %v, want a refusal that lists the units", err)
	}
	if _, err := s.Set("idle-timeout", "0"); err != nil || s.IdleTimeout != 0 {
		t.Errorf("SET idle-timeout = 0: %v, %v", err, s.IdleTimeout)
	}
	if err := s.Reset("max-rows"); err != nil || s.MaxRows != 0 || s.Output != "json" {
		t.Fatalf("RESET max-rows: %v %+v", err, s)
	}
	if err := s.Reset("nope"); err == nil {
		t.Error("RESET nope: no error")
	}
	if err := s.Reset(""); err != nil || s != DefaultSettings() {
		t.Fatalf("RESET: %v %+v", err, s)
	}
	var o Options
	s.MaxRows = 3
	s.Apply(&o)
	if o.MaxRows != 3 {
		t.Error("Apply")
	}
	// The setting's '0' holds every group in memory; Options' 0 is the
	// default bound.
	if o.GroupsInMemory != DefaultGroupsInMemory {
		t.Errorf("state-groups-in-memory at its default: GroupsInMemory %d, want %d", o.GroupsInMemory, DefaultGroupsInMemory)
	}
	if _, err := s.Set(SettingGroupsInMemory, "0"); err != nil {
		t.Fatal(err)
	}
	s.Apply(&o)
	if o.GroupsInMemory >= 0 {
		t.Errorf("state-groups-in-memory = 0: GroupsInMemory %d, want every group (negative)", o.GroupsInMemory)
	}
	if _, err := s.Set(SettingGroupsInMemory, "-5"); err == nil {
		t.Error("state-groups-in-memory = -5: no error")
	}
}

// TestIdleWaitIsNotWork: the idle timeout's wait that ends a query counts in
// Elapsed but not in Working, over which rates are measured.
func TestIdleWaitIsNotWork(t *testing.T) {
	f := newFixture(t, 2, rowsN(3)...)
	f.src.EOF = false
	const idle = 300 * time.Millisecond
	r := f.run(context.Background(), "SELECT id FROM orders", Options{IdleTimeout: idle})
	for r.Next() {
	}
	if r.EndReason() != EndIdle {
		t.Fatalf("ended by %s, want idle", r.EndReason())
	}
	r.Close()
	s := r.Stats()
	if s.Elapsed < idle {
		t.Errorf("Elapsed %s, want at least the idle timeout %s", s.Elapsed, idle)
	}
	if s.Working > s.Elapsed-idle+50*time.Millisecond {
		t.Errorf("Working %s of Elapsed %s counts the idle wait of %s", s.Working, s.Elapsed, idle)
	}
}
