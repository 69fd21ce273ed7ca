package json

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// TestRowEncoderFloat: a FLOAT is written with the shortest digits that
// read back as the float32 (0.1, not 0.10000000149011612), and the
// non-finite values as strings, as for DOUBLE.
func TestRowEncoderFloat(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cols := []types.Column{{Name: "f", Type: &types.DataType{Kind: types.Float}}}
	rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
	defer rb.Release()
	fb := rb.Field(0).(*array.Float32Builder)
	fb.AppendValues([]float32{0.1, float32(math.Inf(-1))}, nil)
	fb.AppendNull()
	rec := rb.NewRecordBatch()
	defer rec.Release()
	enc, err := NewRowEncoder(cols)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range int(rec.NumRows()) {
		b, err := enc.AppendRow(nil, rec, i)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if want := []string{`{"f":0.1}`, `{"f":"-Infinity"}`, `{"f":null}`}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRowEncoderIsTheSinks: a RowEncoder writes what a sink's encoder of
// the table with no json.* option writes, row for row, through batches
// taken in turn (each new batch binds the encoder again) and appended after
// what the buffer holds.
func TestRowEncoderIsTheSinks(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cols, dec, sink := formattest.NewCodec(t, Format{}, diffSchema)
	values := [][][]byte{{
		[]byte(`{"b":true,"i8":-1,"f64":"NaN","d":1.5,"s":"a\nb","bin":"AQI=","dt":"2024-02-29","ts":"2024-02-29 23:59:59.5","ltz":"2024-02-29 23:59:59.000001Z","arr":[1,null],"r":{"x":1,"y":[{"z":"q","w":-0.0}]},"m":{"k":7}}`),
		[]byte(`{}`),
	}, {
		[]byte(`{"i64":9223372036854775807,"f32":0.1,"ts":"2024-01-01 00:00:00","m":{}}`),
	}}
	var recs []arrow.RecordBatch
	for _, vs := range values {
		rec, err := formattest.DecodeAll(mem, dec, cols, vs)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		recs = append(recs, rec)
	}
	enc, err := NewRowEncoder(cols)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for k, rec := range recs {
			for i := range int(rec.NumRows()) {
				want, _, err := sink.Encode(nil, rec.Columns(), i)
				if err != nil {
					t.Fatal(err)
				}
				got, err := enc.AppendRow([]byte("x"), rec, i)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != "x"+string(want) {
					t.Errorf("round %d, batch %d, row %d: got %s, the sink writes %s", round, k, i, got, want)
				}
			}
		}
	}
}

// TestRowEncoderRefuses: a value JSON text cannot hold is an EncodeError
// with its path, and the buffer comes back as it was.
func TestRowEncoderRefuses(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cols := []types.Column{{Name: "id", Type: types.IntType()}, {Name: "s", Type: types.StringType()}}
	rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
	defer rb.Release()
	rb.Field(0).(*array.Int32Builder).Append(1)
	rb.Field(1).(*array.StringBuilder).BinaryBuilder.Append([]byte("a\xffb"))
	rec := rb.NewRecordBatch()
	defer rec.Release()
	enc, err := NewRowEncoder(cols)
	if err != nil {
		t.Fatal(err)
	}
	out, err := enc.AppendRow([]byte("x"), rec, 0)
	var ee *table.EncodeError
	if !errors.As(err, &ee) || ee.Field != "s" {
		t.Fatalf("error %v, want an EncodeError of field s", err)
	}
	if string(out) != "x" {
		t.Errorf("a failed AppendRow left %q", out)
	}

	// A type the format cannot write is said when the encoder is built.
	keyRow := &types.DataType{Kind: types.Row, Fields: []types.Field{{Name: "a", Type: types.IntType()}}}
	if _, err := NewRowEncoder([]types.Column{{Name: "m", Type: types.MapType(keyRow, types.IntType())}}); err == nil {
		t.Error("NewRowEncoder took a MAP whose keys are rows")
	}
}
