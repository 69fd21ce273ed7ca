package batch

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/table"
)

// DefaultSize is the number of rows of a batch when NewBuilder is given a
// size of 0 or less; the kafka-sharegroup connector declares it as the
// default of 'scan.batch-size'.
const DefaultSize = 1024

// Builder decodes values into the physical columns of a schema and cuts
// record batches of Size rows. It owns its array.RecordBuilder: call Release
// when done. A Builder is not safe for concurrent use.
type Builder struct {
	rb       *array.RecordBuilder
	dataLen  []int // per field: bytes of the last batch's string or binary data
	lastRows int   // rows of the last batch
	// lastKinds are the last batch's kinds (see Kinds).
	lastKinds []flow.RowKind
	dec       table.Decoder
	changes   table.ChangeDecoder // dec, when it tells each row's kind
	kinds     []flow.RowKind      // of the rows since the last NewBatch, with changes
	physical  []array.Builder
	size      int
	rows      int
}

// NewBuilder returns a Builder over schema whose decoder fills the fields at
// the positions physical (in table order); nil means every field is
// physical. Fields that are not physical (metadata columns) are the caller's
// to fill through Field, one value per row Append reported, before NewBatch
// (or MetaBuilder's to fill). A nil dec means there is nothing to decode
// (physical is empty): each value is one row.
// size is the number of rows at which Full reports true; 0 or less means
// DefaultSize. The builder allocates from alloc.
func NewBuilder(alloc memory.Allocator, schema *arrow.Schema, physical []int, dec table.Decoder, size int) *Builder {
	if size <= 0 {
		size = DefaultSize
	}
	rb := array.NewRecordBuilder(alloc, schema)
	if physical == nil {
		physical = make([]int, schema.NumFields())
		for i := range physical {
			physical[i] = i
		}
	}
	cols := make([]array.Builder, len(physical))
	for i, p := range physical {
		if p < 0 || p >= schema.NumFields() {
			rb.Release()
			panic(fmt.Sprintf("batch: physical column position %d outside a schema of %d fields", p, schema.NumFields()))
		}
		cols[i] = rb.Field(p)
	}
	b := &Builder{rb: rb, dec: dec, physical: cols, size: size, dataLen: make([]int, schema.NumFields())}
	b.changes, _ = dec.(table.ChangeDecoder)
	return b
}

// reserve makes room for the next batch up front, so that buffers are not
// regrown and copied while it fills: as many rows, and for string and
// binary columns as many bytes, as the last batch held. The last batch is
// the best guess there is: a connector's batches are as large as its polls,
// often far below Size, and reserving Size rows for each would allocate
// (and zero) many times what they use. The first batch grows as it fills.
func (b *Builder) reserve() {
	b.rb.Reserve(b.lastRows)
	for i, f := range b.rb.Fields() {
		if d, ok := f.(interface{ ReserveData(int) }); ok && b.dataLen[i] > 0 {
			d.ReserveData(b.dataLen[i])
		}
	}
}

// Append decodes value into the physical columns and returns the number of
// rows it added (0 or more: a JSON array gives one row per element). On an
// error nothing was appended and the error is the decoder's.
func (b *Builder) Append(value []byte) (int, error) {
	if b.dec == nil {
		b.rows++
		return 1, nil
	}
	if b.changes != nil {
		n, kinds, err := b.changes.DecodeChanges(value, b.physical, b.kinds)
		b.kinds = kinds
		b.rows += n
		return n, err
	}
	n, err := b.dec.Decode(value, b.physical)
	b.rows += n
	return n, err
}

// Kinds are the kinds of change of the rows of the batch NewBatch returned
// last, for a changelog format's decoder (table.ChangeDecoder); nil for
// another format, whose rows are inserts. The slice is the caller's.
func (b *Builder) Kinds() []flow.RowKind { return b.lastKinds }

// Field is the builder of schema field i, for filling the columns that are
// not physical. It stays owned by the Builder.
func (b *Builder) Field(i int) array.Builder { return b.rb.Field(i) }

// Len is the number of rows appended since the last NewBatch.
func (b *Builder) Len() int { return b.rows }

// Size is the number of rows at which Full reports true.
func (b *Builder) Size() int { return b.size }

// Full reports whether the pending rows reached the batch size. Append does
// not refuse rows past it (one value may give several rows), so a batch can
// hold somewhat more than Size rows.
func (b *Builder) Full() bool { return b.rows >= b.size }

// NewBatch returns the rows appended since the last call as a record batch,
// possibly empty, and starts the next one. The caller owns the batch and
// must Release it; it stays valid after the Builder is released. It panics
// if a column that is not physical was left shorter than the others, which
// is a programming error.
func (b *Builder) NewBatch() arrow.RecordBatch {
	for i, f := range b.rb.Fields() {
		if d, ok := f.(interface{ DataLen() int }); ok {
			b.dataLen[i] = d.DataLen()
		}
	}
	var rec arrow.RecordBatch
	if b.rb.Schema().NumFields() == 0 {
		// A RecordBuilder without fields cannot count rows; a table whose
		// columns are all filled elsewhere still has them.
		rec = array.NewRecordBatch(b.rb.Schema(), nil, int64(b.rows))
	} else {
		rec = b.rb.NewRecordBatch()
	}
	b.lastRows, b.rows = b.rows, 0
	b.lastKinds = nil
	if b.changes != nil {
		b.lastKinds, b.kinds = b.kinds, nil
	}
	b.reserve()
	return rec
}

// Release frees the pending rows and the builders. Batches returned by
// NewBatch are not affected.
func (b *Builder) Release() {
	if b.rb != nil {
		b.rb.Release()
		b.rb = nil
	}
}

// Meta is a column that is not physical (a metadata column) and how to fill
// it from the source of a value: R is what the metadata is read from (a
// Kafka record, say).
type Meta[R any] struct {
	// Index is the column's position in the schema.
	Index int
	// Fill appends one value read from src to b, the column's builder.
	Fill func(b array.Builder, src R)
}

// MetaBuilder is a Builder that fills the metadata columns as well: Append
// decodes a value and gives each row it became the metadata of its source.
type MetaBuilder[R any] struct {
	*Builder
	cols  []array.Builder // the metadata columns' builders, as meta lists them
	fills []func(array.Builder, R)
}

// NewMetaBuilder is NewBuilder whose fields that are not physical are the
// columns meta declares, filled by Append.
func NewMetaBuilder[R any](alloc memory.Allocator, schema *arrow.Schema, physical []int, dec table.Decoder, size int, meta []Meta[R]) *MetaBuilder[R] {
	b := &MetaBuilder[R]{Builder: NewBuilder(alloc, schema, physical, dec, size)}
	for _, m := range meta {
		if m.Index < 0 || m.Index >= schema.NumFields() {
			b.Release()
			panic(fmt.Sprintf("batch: metadata column position %d outside a schema of %d fields", m.Index, schema.NumFields()))
		}
		b.cols = append(b.cols, b.rb.Field(m.Index))
		b.fills = append(b.fills, m.Fill)
	}
	return b
}

// Append decodes value into the physical columns and fills every metadata
// column from src once for each row the value gave. It returns the number
// of rows; on an error nothing was appended and the error is the decoder's.
func (b *MetaBuilder[R]) Append(value []byte, src R) (int, error) {
	n, err := b.Builder.Append(value)
	if err != nil {
		return n, err
	}
	for i, col := range b.cols {
		for range n {
			b.fills[i](col, src)
		}
	}
	return n, nil
}
