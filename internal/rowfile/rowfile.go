package rowfile

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// CSV encodes rows of cols as CSV: a NULL is an empty field, every other
// value is written as the shell prints it (render.Formatter). It is not
// safe for concurrent use.
type CSV struct {
	cols []types.Column
	buf  bytes.Buffer
	vals []string
}

// NewCSV returns an encoder of rows whose columns are cols.
func NewCSV(cols []types.Column) *CSV {
	return &CSV{cols: cols, vals: make([]string, len(cols))}
}

// Names are the header's fields: the columns' names.
func (c *CSV) Names() []string {
	names := make([]string, len(c.cols))
	for k, col := range c.cols {
		names[k] = col.Name
	}
	return names
}

// Header is the header row, valid until the next call.
func (c *CSV) Header() []byte {
	c.buf.Reset()
	cw := csv.NewWriter(&c.buf)
	_ = cw.Write(c.Names()) // a bytes.Buffer does not fail
	cw.Flush()
	return c.buf.Bytes()
}

// Rows is every row of rec, valid until the next call. A caller writes
// it with one write call, so that a kill between writes leaves whole
// rows.
func (c *CSV) Rows(rec arrow.RecordBatch) []byte {
	c.buf.Reset()
	cw := csv.NewWriter(&c.buf)
	fmts := make([]func(int) (string, bool), len(c.cols))
	for k, col := range c.cols {
		fmts[k] = render.Formatter(rec.Column(k), col.Type)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		for k, f := range fmts {
			c.vals[k], _ = f(i) // NULL is an empty field
		}
		_ = cw.Write(c.vals)
	}
	cw.Flush()
	return c.buf.Bytes()
}

// Parquet writes batches as one Parquet file (Snappy, the Arrow schema
// stored) to a writer it does not close. The file is readable only once
// Close wrote its footer.
type Parquet struct {
	w *pqarrow.FileWriter
}

// NewParquet starts a Parquet file of schema on w; alloc (nil:
// memory.DefaultAllocator) holds the pages until they are written.
func NewParquet(w io.Writer, schema *arrow.Schema, alloc memory.Allocator) (*Parquet, error) {
	if alloc == nil {
		alloc = memory.DefaultAllocator
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithAllocator(alloc))
	pw, err := pqarrow.NewFileWriter(schema, noClose{w}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(alloc)))
	if err != nil {
		return nil, fmt.Errorf("starting a parquet file: %w", err)
	}
	return &Parquet{w: pw}, nil
}

// Write adds rec's rows to the file's current row group.
func (p *Parquet) Write(rec arrow.RecordBatch) error { return p.w.WriteBuffered(rec) }

// Size is about how many bytes the file holds so far, compressed, without
// its footer.
func (p *Parquet) Size() int64 { return p.w.TotalCompressedBytes() }

// Close writes the footer (the file's index) and leaves the underlying
// writer open, so that its file can be synced before it is renamed.
func (p *Parquet) Close() error { return p.w.Close() }

// noClose keeps the parquet writer's Close from closing the file.
type noClose struct{ w io.Writer }

func (n noClose) Write(b []byte) (int, error) { return n.w.Write(b) }

// Publish renames tmp, a file written and synced, to final and syncs
// their directory, so that after a crash final is either absent or the
// whole file.
func Publish(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(final))
}

// SyncDir makes the entries of dir durable: a file created or renamed in
// it survives a crash only once its directory is synced.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
