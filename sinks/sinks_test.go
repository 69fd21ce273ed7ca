package sinks_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/sinks"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// bind parses one CREATE TABLE and binds it against the default registry,
// where package sinks registered its connectors.
func bind(t *testing.T, ddl string) (*table.Bound, error) {
	t.Helper()
	stmts, err := parse.Parse(ddl)
	if err != nil {
		t.Fatal(err)
	}
	return table.Bind(stmts[0].(*table.CreateTable).Def)
}

// write sends one batch, given as JSON rows, through a writer of the table
// and returns the writer's stats and what done said.
func write(t *testing.T, b *table.Bound, rows string) (flow.SinkStats, error) {
	t.Helper()
	s, err := table.NewSink(b)
	if err != nil {
		t.Fatal(err)
	}
	alloc := tabletest.CheckedAlloc(t)
	schema := (&types.Schema{Columns: s.Columns()}).Arrow()
	rec, _, err := array.RecordFromJSON(alloc, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	w, err := s.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var doneErr error
	called := 0
	if err := w.Write(context.Background(), rec, func(err error) { doneErr = err; called++ }); err != nil {
		t.Fatal(err)
	}
	if called != 1 {
		t.Fatalf("done called %d times before Write returned, want once", called)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Stats(), doneErr
}

const allKinds = `(
  id BIGINT, name STRING, price DECIMAL(10, 2), ok BOOLEAN, ts TIMESTAMP(3),
  tags ARRAY<INT>, attrs MAP<STRING, INT>, addr ROW<city STRING, zip INT>
)`

const allKindsRows = `[
 {"id": 1, "name": "ann", "price": "24.00", "ok": true, "ts": "2024-01-02 03:04:05.678",
  "tags": [1, 2], "attrs": [{"key": "k", "value": 7}], "addr": {"city": "Oslo", "zip": 150}},
 {"id": 2, "name": null, "price": null, "ok": null, "ts": null, "tags": null, "attrs": null, "addr": null}
]`

// TestPrint: every kind of column in Flink's text form, a line per row,
// with and without 'print-identifier'; the batch is acknowledged once
// written.
func TestPrint(t *testing.T) {
	for _, tc := range []struct{ with, prefix string }{
		{"'connector' = 'print'", ""},
		{"'connector' = 'print', 'print-identifier' = 'orders'", "orders> "},
		{"'connector' = 'print', 'standard-error' = 'false'", ""},
	} {
		b, err := bind(t, "CREATE TABLE p "+allKinds+" WITH ("+tc.with+")")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		restore := sinks.SetStreams(&out, nil)
		stats, doneErr := write(t, b, allKindsRows)
		restore()
		want := tc.prefix + "+I[1, ann, 24.00, TRUE, 2024-01-02 03:04:05.678, [1, 2], {k=7}, (Oslo, 150)]\n" +
			tc.prefix + "+I[2, NULL, NULL, NULL, NULL, NULL, NULL, NULL]\n"
		if out.String() != want || doneErr != nil {
			t.Errorf("%s: printed\n%s(done %v), want\n%s", tc.with, out.String(), doneErr, want)
		}
		if stats != (flow.SinkStats{Written: 2, Acked: 2}) {
			t.Errorf("%s: stats %+v, want 2 written and acked", tc.with, stats)
		}
	}
}

func TestPrintStandardError(t *testing.T) {
	b, err := bind(t, "CREATE TABLE p (id INT) WITH ('connector' = 'print', 'standard-error' = 'true')")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	restore := sinks.SetStreams(&out, &errOut)
	defer restore()
	if _, err := write(t, b, `[{"id": 7}]`); err != nil {
		t.Fatal(err)
	}
	if out.String() != "" || errOut.String() != "+I[7]\n" {
		t.Errorf("stdout %q, stderr %q; want the row on stderr alone", out.String(), errOut.String())
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A stream that refuses the lines fails the batch through done: its
// records are not accepted.
func TestPrintWriteFails(t *testing.T) {
	b, err := bind(t, "CREATE TABLE p (id INT) WITH ('connector' = 'print')")
	if err != nil {
		t.Fatal(err)
	}
	restore := sinks.SetStreams(failing{}, nil)
	defer restore()
	stats, doneErr := write(t, b, `[{"id": 1}, {"id": 2}]`)
	var re *flow.RowError
	if !errors.As(doneErr, &re) || !strings.Contains(doneErr.Error(), "disk full") {
		t.Errorf("done(%v), want a RowError saying disk full", doneErr)
	}
	if stats != (flow.SinkStats{Written: 2, Failed: 2}) {
		t.Errorf("stats %+v, want 2 written and failed", stats)
	}
}

func TestBlackhole(t *testing.T) {
	b, err := bind(t, "CREATE TABLE h "+allKinds+" WITH ('connector' = 'blackhole')")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	restore := sinks.SetStreams(&out, &out)
	stats, doneErr := write(t, b, allKindsRows)
	restore()
	if doneErr != nil || out.Len() != 0 || stats != (flow.SinkStats{Written: 2, Acked: 2}) {
		t.Errorf("done(%v), printed %q, stats %+v; want nothing printed, 2 acked", doneErr, out.String(), stats)
	}
}

// What the sinks refuse, each naming what to fix.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ ddl, want string }{
		{"CREATE TABLE p (id INT) WITH ('connector' = 'print', 'format' = 'json')", "takes no 'format'"},
		{"CREATE TABLE p (id INT) WITH ('connector' = 'blackhole', 'topic' = 'x')", "'topic'"},
		{"CREATE TABLE p (id INT) WITH ('connector' = 'print', 'standard-error' = 'yes')", "standard-error"},
	} {
		if _, err := bind(t, tc.ddl); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %s", tc.ddl, err, tc.want)
		}
	}
	b, err := bind(t, "CREATE TABLE p (id INT) WITH ('connector' = 'print')")
	if err != nil {
		t.Fatal(err)
	}
	src, err := b.Connector.NewSource(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Open(context.Background(), flow.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "INSERT INTO") {
		t.Errorf("reading a print table: %v, want an error saying it is INSERT INTO's target", err)
	}
}

// Both sinks take an updating query's changes; print writes each row's
// kind where an append has +I.
func TestPrintChanges(t *testing.T) {
	var out bytes.Buffer
	defer sinks.SetStreams(&out, nil)()
	for _, connector := range []string{"print", "blackhole"} {
		b, err := bind(t, "CREATE TABLE c (customer STRING, n BIGINT) WITH ('connector' = '"+connector+"')")
		if err != nil {
			t.Fatal(err)
		}
		s, err := table.NewSink(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(flow.ChangelogSink); !ok {
			t.Fatalf("%s is not a flow.ChangelogSink", connector)
		}
		w, err := s.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		schema := (&types.Schema{Columns: s.Columns()}).Arrow()
		rec, _, err := array.RecordFromJSON(tabletest.CheckedAlloc(t), schema,
			strings.NewReader(`[{"customer": "ann", "n": 1}, {"customer": "bo", "n": 2}, {"customer": "ann", "n": 1}, {"customer": "ann", "n": 2}, {"customer": "bo", "n": 2}]`))
		if err != nil {
			t.Fatal(err)
		}
		kinds := []flow.RowKind{flow.KindInsert, flow.KindUpdateBefore, flow.KindUpdateBefore, flow.KindUpdateAfter, flow.KindDelete}
		var doneErr error
		if err := w.(flow.ChangelogWriter).WriteChanges(context.Background(), rec, kinds, func(err error) { doneErr = err }); err != nil || doneErr != nil {
			t.Fatalf("%s: WriteChanges: %v, done: %v", connector, err, doneErr)
		}
		rec.Release()
		if st := w.Stats(); st.Written != 5 || st.Acked != 5 {
			t.Errorf("%s: stats %+v, want 5 written and acknowledged", connector, st)
		}
		w.Close()
	}
	if want := "+I[ann, 1]\n-U[bo, 2]\n-U[ann, 1]\n+U[ann, 2]\n-D[bo, 2]\n"; out.String() != want {
		t.Errorf("print wrote\n%s\nwant\n%s(and blackhole nothing)", out.String(), want)
	}
}
