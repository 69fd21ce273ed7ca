package flow

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A Keep is where a query keeps rows on disk rather than in memory: a
// job's state directory. A temporal join's follower keeps each key's
// latest row of the table it follows there (LookupOptions.Keep). Keys and
// values are the caller's; the Keep copies them.
type Keep interface {
	// Get is key's value; nil for none.
	Get(key []byte) ([]byte, error)
	// Put stores keys[i] = values[i] (a nil value deletes keys[i]) in one
	// write: after a crash, all of them or none.
	Put(keys, values [][]byte) error
}

// AppendRows appends rec to b as an Arrow IPC stream (its schema, then
// the batch), the form a row is kept in on disk.
func AppendRows(b []byte, rec arrow.RecordBatch) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	w := ipc.NewWriter(buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadRows reads the batch AppendRows wrote; the caller releases it.
func ReadRows(b []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	rd, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	if !rd.Next() {
		if err := rd.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("kept rows: no batch")
	}
	rec := rd.RecordBatch()
	rec.Retain()
	if rd.Next() {
		rec.Release()
		return nil, fmt.Errorf("kept rows: more than one batch")
	}
	return rec, nil
}

// A RowEncoder writes batches of one schema as AppendRows does, the same
// bytes, without making a writer and a schema message for each: the
// schema message is made once, and one writer makes each batch's. Not safe
// for concurrent use.
type RowEncoder struct {
	schema *arrow.Schema
	head   []byte // the schema message
	w      *ipc.Writer
	buf    bytes.Buffer
}

// eos is the end of an IPC stream: a continuation marker and a length of 0.
var eos = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// Append appends rec to b as AppendRows does.
func (e *RowEncoder) Append(b []byte, rec arrow.RecordBatch) ([]byte, error) {
	if e.schema == nil {
		// The head: what a writer writes before its first batch.
		var head bytes.Buffer
		if err := ipc.NewWriter(&head, ipc.WithSchema(rec.Schema())).Close(); err != nil {
			return nil, err
		}
		if !bytes.HasSuffix(head.Bytes(), eos) {
			return AppendRows(b, rec)
		}
		e.schema, e.head = rec.Schema(), bytes.Clone(head.Bytes()[:head.Len()-len(eos)])
		e.w = ipc.NewWriter(&e.buf, ipc.WithSchema(e.schema))
		// The writer's first batch comes after its schema message, which
		// the head has: it is written once here and dropped.
		e.buf.Reset()
		none := rec.NewSlice(0, 0)
		err := e.w.Write(none)
		none.Release()
		if err != nil {
			return nil, err
		}
	}
	if !rec.Schema().Equal(e.schema) {
		return AppendRows(b, rec)
	}
	e.buf.Reset()
	if err := e.w.Write(rec); err != nil {
		return nil, err
	}
	b = append(b, e.head...)
	b = append(b, e.buf.Bytes()...)
	return append(b, eos...), nil
}
