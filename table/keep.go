package table

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
