package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// An Output receives the output of each row a worker finished, and returns
// once it is kept: the row's record is accepted only after that. OutFile
// appends it to a file; TableOut writes it into a table.
type Output interface {
	Write(r Row, output json.RawMessage) error
}

var (
	_ Output = (*OutFile)(nil)
	_ Output = (*TableOut)(nil)
)

// TableOut writes each finished row's output into a table (kshare work
// --into): the output, a JSON object, is decoded into the table's columns
// (its fields by name, as the 'json' format reads a record; a missing
// field is NULL) and written by the table's sink. Write returns once the
// sink acknowledged the row (a Kafka produce with acks=all), so the row's
// record is accepted only when its result is safe. Rows that finish while
// a write is on its way go together in the next one, as OutFile syncs
// them: one write per batch of rows, not per row.
type TableOut struct {
	name   string
	w      flow.Writer
	dec    table.Decoder
	schema *arrow.Schema

	mu       sync.Mutex
	bs       []array.Builder
	waiting  []chan error // the Writes whose rows are in bs
	pending  int64        // rows in bs
	writing  bool         // a Write is writing batches
	rows     int64        // rows written and acknowledged
	released bool
}

// NewTableOut writes into the table name through w, whose rows are cols
// (flow.Sink.Columns), decoding outputs with dec (a 'json' decoder of
// cols). The caller closes w after the last Write.
func NewTableOut(name string, cols []types.Column, dec table.Decoder, w flow.Writer, alloc memory.Allocator) *TableOut {
	fields := make([]arrow.Field, len(cols))
	bs := make([]array.Builder, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: true}
		bs[i] = array.NewBuilder(alloc, fields[i].Type)
	}
	return &TableOut{name: name, w: w, dec: dec, schema: arrow.NewSchema(fields, nil), bs: bs}
}

// Write decodes the row's output into the table's columns and waits until
// the sink acknowledged it. An output that is not a row of the table (not
// JSON, a field of the wrong type) is an error, so the row is released:
// the program may be fixed and the record done again.
func (o *TableOut) Write(r Row, output json.RawMessage) error {
	o.mu.Lock()
	if o.released {
		o.mu.Unlock()
		return fmt.Errorf("--into %s: the output table is closed", options.Cut(o.name))
	}
	n, err := o.dec.Decode(output, o.bs)
	if err != nil {
		o.mu.Unlock()
		return fmt.Errorf("--into %s: the program's output is not a row of the table: %w", options.Cut(o.name), err)
	}
	if n == 0 {
		// An empty JSON array: no row to keep.
		o.mu.Unlock()
		return nil
	}
	o.pending += int64(n)
	mine := make(chan error, 1)
	o.waiting = append(o.waiting, mine)
	if o.writing {
		// The writing Write takes this row in its next batch.
		o.mu.Unlock()
		return <-mine
	}
	o.writing = true
	for len(o.waiting) > 0 {
		rec := o.batch()
		ws := o.waiting
		o.waiting = nil
		o.mu.Unlock()
		err := o.write(rec)
		rec.Release()
		o.mu.Lock()
		if err == nil {
			o.rows += rec.NumRows()
		}
		for _, w := range ws {
			w <- err
		}
	}
	o.writing = false
	o.mu.Unlock()
	return <-mine
}

// batch takes what the builders hold as a record. Called with o.mu held.
func (o *TableOut) batch() arrow.RecordBatch {
	cols := make([]arrow.Array, len(o.bs))
	for i, b := range o.bs {
		cols[i] = b.NewArray()
	}
	rec := array.NewRecordBatch(o.schema, cols, o.pending)
	o.pending = 0
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// write hands rec to the sink and waits for its acknowledgement. The
// writer's own timeouts (a Kafka sink's delivery timeout) bound the wait.
func (o *TableOut) write(rec arrow.RecordBatch) error {
	done := make(chan error, 1)
	if err := o.w.Write(context.Background(), rec, func(err error) { done <- err }); err != nil {
		return fmt.Errorf("--into %s: %w", options.Cut(o.name), err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("--into %s: %w", options.Cut(o.name), err)
	}
	return nil
}

// Rows counts the rows written and acknowledged.
func (o *TableOut) Rows() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.rows
}

// Release frees the builders; a Write after it fails. Call it once no
// Write runs.
func (o *TableOut) Release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.released {
		return
	}
	o.released = true
	for _, b := range o.bs {
		b.Release()
	}
}
