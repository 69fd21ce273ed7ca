package batch_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/internal/tabletest"
)

// digits is a decoder that appends one row per byte of a value: the
// digit's value to the first physical column, its text to the second.
type digits struct{}

func (digits) Decode(value []byte, cols []array.Builder) (int, error) {
	for _, c := range value {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a digit", c)
		}
	}
	for _, c := range value {
		cols[0].(*array.Int64Builder).Append(int64(c - '0'))
		cols[1].(*array.StringBuilder).Append(string(c))
	}
	return len(value), nil
}

// offsetSchema has a column the caller fills (the offset, as the connector
// would) between the two that digits fills.
var offsetSchema = arrow.NewSchema([]arrow.Field{
	{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// offsetRows are the rows of a batch of offsetSchema as "n offset s".
func offsetRows(rec arrow.RecordBatch) []string {
	var rows []string
	for r := 0; r < int(rec.NumRows()); r++ {
		rows = append(rows, strconv.FormatInt(rec.Column(0).(*array.Int64).Value(r), 10)+" "+
			strconv.FormatInt(rec.Column(1).(*array.Int64).Value(r), 10)+" "+rec.Column(2).(*array.String).Value(r))
	}
	return rows
}

// TestMetadataColumns interleaves a column the caller fills (the offset, as
// the connector would) with the decoder's two.
func TestMetadataColumns(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	b := batch.NewBuilder(mem, offsetSchema, []int{0, 2}, digits{}, 3)
	defer b.Release()
	var batches []arrow.RecordBatch
	for off, v := range []string{"12", "3", "", "456"} {
		n, err := b.Append([]byte(v))
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			b.Field(1).(*array.Int64Builder).Append(int64(off))
		}
		if b.Full() {
			batches = append(batches, b.NewBatch())
		}
	}
	if b.Len() != 0 {
		t.Errorf("pending %d rows, want none", b.Len())
	}
	// An empty batch is still a batch, for the caller to release.
	batches = append(batches, b.NewBatch())
	want := [][]string{{"1 0 1", "2 0 2", "3 1 3"}, {"4 3 4", "5 3 5", "6 3 6"}, {}}
	for i, rec := range batches {
		got := offsetRows(rec)
		if len(got) != len(want[i]) {
			t.Fatalf("batch %d: %v, want %v", i, got, want[i])
		}
		for r := range got {
			if got[r] != want[i][r] {
				t.Errorf("batch %d row %d: %q, want %q", i, r, got[r], want[i][r])
			}
		}
		rec.Release()
	}
}

// TestBatchOutlivesBuilder: a batch stays valid once the builder is
// released, as the doc comment promises.
func TestBatchOutlivesBuilder(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	b := batch.NewBuilder(mem, schema, nil, digits{}, 0)
	if b.Size() != batch.DefaultSize {
		t.Errorf("size %d", b.Size())
	}
	if _, err := b.Append([]byte("79")); err != nil {
		t.Fatal(err)
	}
	rec := b.NewBatch()
	b.Release()
	defer rec.Release()
	if rec.NumRows() != 2 || rec.Column(1).(*array.String).Value(1) != "9" {
		t.Errorf("batch %v", rec)
	}
}

// TestMetaBuilder fills the metadata columns from each value's source,
// once per row the value gave, and appends nothing for a value that fails.
func TestMetaBuilder(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	offset := batch.Meta[int64]{Index: 1, Fill: func(b array.Builder, off int64) { b.(*array.Int64Builder).Append(off) }}
	b := batch.NewMetaBuilder(mem, offsetSchema, []int{0, 2}, digits{}, 4, []batch.Meta[int64]{offset})
	defer b.Release()
	for off, v := range []string{"12", "", "x", "3"} {
		n, err := b.Append([]byte(v), int64(off))
		if (err != nil) != (v == "x") || (err == nil && n != len(v)) {
			t.Fatalf("Append(%q) = %d, %v", v, n, err)
		}
	}
	rec := b.NewBatch()
	defer rec.Release()
	if got, want := fmt.Sprint(offsetRows(rec)), "[1 0 1 2 0 2 3 3 3]"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
}

// TestMetaBuilderWithoutDecoder: a table of metadata columns only decodes
// nothing and gets one row per value.
func TestMetaBuilderWithoutDecoder(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "offset", Type: arrow.PrimitiveTypes.Int64}}, nil)
	offset := batch.Meta[int64]{Index: 0, Fill: func(b array.Builder, off int64) { b.(*array.Int64Builder).Append(off) }}
	b := batch.NewMetaBuilder(mem, schema, []int{}, nil, 2, []batch.Meta[int64]{offset})
	defer b.Release()
	for off := range int64(2) {
		if n, err := b.Append([]byte("ignored"), off+7); n != 1 || err != nil {
			t.Fatalf("Append = %d, %v", n, err)
		}
	}
	if !b.Full() {
		t.Errorf("%d rows of 2 and not full", b.Len())
	}
	rec := b.NewBatch()
	defer rec.Release()
	if col := rec.Column(0).(*array.Int64); rec.NumRows() != 2 || col.Value(0) != 7 || col.Value(1) != 8 {
		t.Errorf("batch %v", rec)
	}
}
