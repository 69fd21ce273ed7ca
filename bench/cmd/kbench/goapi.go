package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/query"
)

// rowReader is how the Go-side parts (latency, slow workers, the Go API
// contestant) read a kshare table: through kshare's Go API, an Engine that
// runs the CREATE TABLE and a SELECT. Each Next settles the batch before as
// delivered (at least once), as a Go program using kshare would.
type rowReader struct {
	rows *query.Rows
}

// openQuery creates the table with ddl in a new engine and starts sql on
// it. ctx bounds the whole query: when it ends, Next returns its error.
func openQuery(ctx context.Context, ddl, sql string) (*rowReader, error) {
	eng := kshare.New()
	if _, err := eng.Exec(ctx, ddl); err != nil {
		return nil, fmt.Errorf("creating the table: %w", err)
	}
	rows, err := eng.Query(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("starting %q: %w", sql, err)
	}
	return &rowReader{rows: rows}, nil
}

// Next settles the previous batch as delivered and waits for the next one,
// which is valid until the next call to Next or Close. At the end of the
// query it returns the query's error, or io.EOF for a normal end.
func (r *rowReader) Next() (arrow.RecordBatch, error) {
	if r.rows.Next() {
		return r.rows.RecordBatch(), nil
	}
	if err := r.rows.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// Redelivered counts records that came with a delivery count above 1.
func (r *rowReader) Redelivered() int64 { return r.rows.Stats().Source.Redelivered }

// Close settles the last batch as delivered and leaves the group.
func (r *rowReader) Close() error { return r.rows.Close() }

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
