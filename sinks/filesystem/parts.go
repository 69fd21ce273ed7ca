package filesystem

import (
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/rowfile"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// partEncoder writes one part's rows in the table's format.
type partEncoder interface {
	// write appends every row of rec, with one write call for csv and
	// json. A row the format cannot write is a *flow.RowError, and then
	// nothing of rec was written; any other error breaks the part.
	write(rec arrow.RecordBatch) error
	// size is about how many bytes the part holds.
	size() int64
	// finish ends the file (parquet's footer); abort frees what an
	// unfinished part holds.
	finish() error
	abort()
}

func (s *sink) newPartEncoder(w io.Writer) (partEncoder, error) {
	switch s.format {
	case "csv":
		p := &csvPart{out: sized{w: w}, enc: rowfile.NewCSV(s.cols)}
		if err := p.out.write(p.enc.Header()); err != nil {
			return nil, err
		}
		return p, nil
	case "parquet":
		schema := (&types.Schema{Columns: s.cols}).Arrow()
		pw, err := rowfile.NewParquet(w, schema, alloc)
		if err != nil {
			return nil, err
		}
		return &parquetPart{w: pw, schema: schema}, nil
	}
	enc, err := s.newEncoder()
	if err != nil {
		return nil, err
	}
	return &linesPart{out: sized{w: w}, enc: enc}, nil
}

// sized is a part's file with the bytes written to it so far.
type sized struct {
	w io.Writer
	n int64
}

// write writes b with one call, so that a kill between calls leaves
// whole rows.
func (s *sized) write(b []byte) error {
	n, err := s.w.Write(b)
	s.n += int64(n)
	return err
}

// csvPart writes a header, then a CSV row per row.
type csvPart struct {
	out sized
	enc *rowfile.CSV
}

func (p *csvPart) write(rec arrow.RecordBatch) error {
	return p.out.write(p.enc.Rows(rec))
}

func (p *csvPart) size() int64   { return p.out.n }
func (p *csvPart) finish() error { return nil }
func (p *csvPart) abort()        {}

// linesPart writes a value of a registered format (json) per row, each
// on a line of its own.
type linesPart struct {
	out sized
	enc table.Encoder
	buf []byte
}

func (p *linesPart) write(rec arrow.RecordBatch) error {
	b := p.buf[:0]
	cols := rec.Columns()
	for i := 0; i < int(rec.NumRows()); i++ {
		out, null, err := p.enc.Encode(b, cols, i)
		if err != nil {
			return &flow.RowError{Row: i, Err: err}
		}
		if null {
			out = append(out, "null"...)
		}
		b = append(out, '\n')
	}
	p.buf = b
	return p.out.write(b)
}

func (p *linesPart) size() int64   { return p.out.n }
func (p *linesPart) finish() error { return nil }
func (p *linesPart) abort()        {}

// parquetPart buffers the part's rows as Parquet pages; the file can be
// read only once finish wrote its footer.
type parquetPart struct {
	w      *rowfile.Parquet
	schema *arrow.Schema
	done   bool
}

func (p *parquetPart) write(rec arrow.RecordBatch) error {
	// The query's batch may name its columns otherwise (SELECT's
	// aliases): the file takes the table's names, the columns as they
	// are (INSERT checked their types; checked again here, since a
	// mismatch would panic).
	for i, f := range p.schema.Fields() {
		if i >= int(rec.NumCols()) || !arrow.TypeEqual(f.Type, rec.Column(i).DataType()) {
			return fmt.Errorf("column %d (%s) of the batch does not have the table's type %s", i+1, f.Name, f.Type)
		}
	}
	r := array.NewRecordBatch(p.schema, rec.Columns(), rec.NumRows())
	defer r.Release()
	return p.w.Write(r)
}

func (p *parquetPart) size() int64 { return p.w.Size() }

func (p *parquetPart) finish() error {
	p.done = true
	return p.w.Close()
}

// abort closes the writer for the memory it holds; the file it ends is
// removed.
func (p *parquetPart) abort() {
	if !p.done {
		p.done = true
		_ = p.w.Close()
	}
}
