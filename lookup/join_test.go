package lookup

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

var (
	orderSchema = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "cust", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	custColumns = []types.Column{
		{Name: "id", Type: types.BigIntType().WithNotNull(true)},
		{Name: "name", Type: types.StringType()},
	}
)

// fixture is a join of orders (batches of the given rows) with customers
// 10 (ann), 11 (bob) and 12 (cy).
func fixture(t *testing.T, cfg *flow.LookupConfig, outer bool, batches ...[]string) (*Source, *tabletest.Source, *tabletest.Source) {
	t.Helper()
	mem := tabletest.CheckedAlloc(t)
	in := &tabletest.Source{Schema: orderSchema, EOF: true, FailAt: -1}
	for _, b := range batches {
		in.Batches = append(in.Batches, tabletest.FromJSON(t, mem, orderSchema, 0, b...)...)
	}
	right := &tabletest.Source{Schema: (&types.Schema{Columns: custColumns}).Arrow(), FailAt: -1, LookupCfg: cfg}
	right.Batches = tabletest.FromJSON(t, mem, right.Schema, 0, `{"id": 10, "name": "ann"}`, `{"id": 11, "name": "bob"}`, `{"id": 12, "name": "cy"}`)
	t.Cleanup(func() { in.Release(); right.Release() })
	return &Source{Table: "orders", Lookup: "customers", Input: in, Right: right, RightColumns: custColumns,
		Keys: []int{1}, RightKeys: []int{0}, Outer: outer}, in, right
}

// readAll reads every batch, settles it, and renders its rows as
// "id:name" ("-" for NULL).
func readAll(t *testing.T, s *Source) ([]string, flow.Stats, error) {
	t.Helper()
	st, err := s.Open(context.Background(), flow.OpenOptions{Alloc: tabletest.CheckedAlloc(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows []string
	for {
		b, err := st.Next(context.Background())
		if err != nil {
			stats := st.Stats()
			if err.Error() == "EOF" {
				err = nil
			}
			return rows, stats, err
		}
		id := render.Formatter(b.Record.Column(0), types.IntType())
		name := render.Formatter(b.Record.Column(3), types.StringType())
		for i := range int(b.Record.NumRows()) {
			rows = append(rows, render.OrNull(id(i))+":"+render.OrNull(name(i)))
		}
		b.Ack.Done()
		b.Record.Release()
	}
}

func TestJoinRows(t *testing.T) {
	s, in, right := fixture(t, nil, false, []string{`{"id": 1, "cust": 10}`, `{"id": 2, "cust": 99}`, `{"id": 3, "cust": null}`, `{"id": 4, "cust": 10}`, `{"id": 5, "cust": 11}`})
	rows, stats, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rows, " "), "1:ann 4:ann 5:bob"; got != want {
		t.Errorf("inner join: %s, want %s", got, want)
	}
	// One lookup of the batch's three distinct keys (99 among them; the
	// NULL key is never asked for); every record accepted.
	if got, want := strings.Join(right.Log(), "; "), "lookup: 3 keys, 2 rows"; got != want {
		t.Errorf("lookups: %s, want %s", got, want)
	}
	if got, want := strings.Join(in.Log(), "; "), "b0: done: accept 0-4; close (0 unread)"; got != want {
		t.Errorf("settled: %s, want %s", got, want)
	}
	if l := stats.Lookup; l == nil || l.Queries != 1 || l.Keys != 3 || l.Rows != 2 || l.Hits != 0 {
		t.Errorf("stats: %+v", l)
	}

	s, _, _ = fixture(t, nil, true, []string{`{"id": 1, "cust": 10}`, `{"id": 2, "cust": 99}`, `{"id": 3, "cust": null}`})
	rows, _, err = readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rows, " "), "1:ann 2:NULL 3:NULL"; got != want {
		t.Errorf("left join: %s, want %s", got, want)
	}
}

func TestJoinCache(t *testing.T) {
	cfg := &flow.LookupConfig{Cache: true, MaxRows: 2, CacheMissingKey: true}
	s, _, right := fixture(t, cfg, false,
		[]string{`{"id": 1, "cust": 10}`, `{"id": 2, "cust": 99}`},
		[]string{`{"id": 3, "cust": 10}`, `{"id": 4, "cust": 99}`},
		[]string{`{"id": 5, "cust": 11}`},
		[]string{`{"id": 6, "cust": 10}`, `{"id": 7, "cust": 11}`})
	rows, stats, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(rows, " "), "1:ann 3:ann 5:bob 6:ann 7:bob"; got != want {
		t.Errorf("rows: %s, want %s", got, want)
	}
	// Batch 2 finds 10 and the missing 99 in the cache; batch 3 asks for
	// 11, which pushes out 10 (the least recently used of two); batch 4
	// asks for 10 again and finds 11.
	if got, want := strings.Join(right.Log(), "; "), "lookup: 2 keys, 1 rows; lookup: 1 keys, 1 rows; lookup: 1 keys, 1 rows"; got != want {
		t.Errorf("lookups: %s, want %s", got, want)
	}
	if l := stats.Lookup; l.Hits != 3 || l.Misses != 4 || l.Queries != 3 {
		t.Errorf("stats: %+v", l)
	}

	// Without cache-missing-key, a key without a row is asked again.
	cfg = &flow.LookupConfig{Cache: true, MaxRows: 10}
	s, _, right = fixture(t, cfg, false, []string{`{"id": 1, "cust": 99}`}, []string{`{"id": 2, "cust": 99}`})
	if _, _, err := readAll(t, s); err != nil {
		t.Fatal(err)
	}
	if got, want := len(right.Log()), 2; got != want {
		t.Errorf("lookups of a missing key: %d, want %d (%v)", got, want, right.Log())
	}
}

func TestCacheExpiry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newCache(10, time.Minute, 0)
	c.put("a", nil, t0)
	if _, ok := c.get("a", t0.Add(59*time.Second)); !ok {
		t.Error("expired before expire-after-write")
	}
	if _, ok := c.get("a", t0.Add(time.Minute)); ok {
		t.Error("kept after expire-after-write")
	}
	c = newCache(10, 0, time.Minute)
	c.put("a", nil, t0)
	for i := 1; i <= 3; i++ {
		if _, ok := c.get("a", t0.Add(time.Duration(i)*50*time.Second)); !ok {
			t.Fatalf("access %d: expired though used within expire-after-access", i)
		}
	}
	if _, ok := c.get("a", t0.Add(150*time.Second+time.Minute)); ok {
		t.Error("kept after expire-after-access")
	}
	if c.len() != 0 {
		t.Errorf("%d keys kept after expiring", c.len())
	}
}

func TestJoinRetries(t *testing.T) {
	// A lookup that fails once is tried again.
	cfg := &flow.LookupConfig{MaxRetries: 2}
	s, in, right := fixture(t, cfg, false, []string{`{"id": 1, "cust": 10}`})
	right.LookupFailures = 1
	rows, stats, err := readAll(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || stats.Lookup.Retries != 1 {
		t.Errorf("rows %v, retries %d", rows, stats.Lookup.Retries)
	}
	if got, want := strings.Join(in.Log(), "; "), "b0: done: accept 0; close (0 unread)"; got != want {
		t.Errorf("settled: %s, want %s", got, want)
	}

	// One that keeps failing releases the batch's records and ends the
	// read with the error.
	s, in, right = fixture(t, cfg, false, []string{`{"id": 1, "cust": 10}`, `{"id": 2, "cust": 11}`})
	right.LookupFailures = 5
	_, stats, err = readAll(t, s)
	if err == nil || !strings.Contains(err.Error(), "database gone") || !strings.Contains(err.Error(), "tried 3 times") {
		t.Errorf("err = %v, want the lookup's error after 3 tries", err)
	}
	if got, want := strings.Join(in.Log(), "; "), "b0: abandon: release 0-1; close (0 unread)"; got != want {
		t.Errorf("settled: %s, want %s", got, want)
	}
	if stats.Lookup.Retries != 2 {
		t.Errorf("retries %d, want 2", stats.Lookup.Retries)
	}
}
