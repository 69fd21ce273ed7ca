package flow

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestRowEncoder: a RowEncoder writes each row as AppendRows does, byte for
// byte, and ReadRows reads it back.
func TestRowEncoder(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 5 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i == 2 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(string(rune('a' + i)))
		}
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for k := range i {
			lb.ValueBuilder().(*array.StringBuilder).Append(string(rune('x' + k%3)))
		}
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + int64(i)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var enc RowEncoder
	for i := range int(rec.NumRows()) {
		row := rec.NewSlice(int64(i), int64(i)+1)
		want, err := AppendRows(nil, row)
		if err != nil {
			t.Fatal(err)
		}
		got, err := enc.Append([]byte("prefix"), row)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[len("prefix"):], want) || string(got[:len("prefix")]) != "prefix" {
			t.Fatalf("row %d: %d bytes, AppendRows writes %d other ones", i, len(got)-len("prefix"), len(want))
		}
		back, err := ReadRows(got[len("prefix"):], mem)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(back, row) {
			t.Errorf("row %d read back as %v, want %v", i, back, row)
		}
		back.Release()
		row.Release()
	}
}
