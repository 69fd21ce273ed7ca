package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	// The table's connector and format register themselves.
	_ "github.com/kshare/kshare/connector"
	_ "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/table"
)

// rowReader is how the latency and slow-worker parts read a kshare table
// from Go: a batch at a time, the previous batch counting as delivered when
// the next is asked for (at least once), as kshare's Go API promises. It
// runs CREATE TABLE through a table catalog and reads the table's stream;
// no SQL query layer sits between, which is what a SELECT * costs nothing
// for.
type rowReader struct {
	st  table.Stream
	cur table.Batch
	has bool
}

// openTable runs the CREATE TABLE statement ddl and opens a stream of the
// table it creates.
func openTable(ctx context.Context, ddl string) (*rowReader, error) {
	stmts, err := table.Parse(ddl)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", ddl, err)
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("want one CREATE TABLE statement, got %d", len(stmts))
	}
	ct, ok := stmts[0].(*table.CreateTable)
	if !ok {
		return nil, fmt.Errorf("want a CREATE TABLE statement, got %s", stmts[0])
	}
	cat := table.NewCatalog()
	if _, err := cat.Exec(ct); err != nil {
		return nil, err
	}
	t, err := cat.Lookup(ct.Def.Name)
	if err != nil {
		return nil, err
	}
	st, err := t.Source.Open(ctx, table.OpenOptions{Alloc: memory.NewGoAllocator()})
	if err != nil {
		return nil, fmt.Errorf("opening table %s: %w", ct.Def.Name, err)
	}
	return &rowReader{st: st}, nil
}

// Next settles the previous batch as delivered and waits for the next one,
// which is valid until the next call to Next or Close.
func (r *rowReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	r.settle()
	b, err := r.st.Next(ctx)
	if err != nil {
		return nil, err
	}
	r.cur, r.has = b, true
	return b.Record, nil
}

func (r *rowReader) settle() {
	if r.has {
		r.cur.Record.Release()
		r.cur.Ack.Done()
		r.has = false
	}
}

// Redelivered counts records that came with a delivery count above 1.
func (r *rowReader) Redelivered() int64 { return r.st.Stats().Redelivered }

// Close settles the last batch as delivered and leaves the group.
func (r *rowReader) Close() error {
	r.settle()
	return r.st.Close()
}

// timestamps returns a function that reads row i of col, a TIMESTAMP_LTZ
// column, as a time.
func timestamps(col arrow.Array) (func(i int) time.Time, error) {
	ts, ok := col.(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("timestamp column is %s, not a timestamp", col.DataType())
	}
	unit := ts.DataType().(*arrow.TimestampType).Unit
	return func(i int) time.Time { return ts.Value(i).ToTime(unit) }, nil
}
