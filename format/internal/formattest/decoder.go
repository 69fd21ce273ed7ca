package formattest

import (
	"reflect"
	"testing"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// NewDecoder is f's decoder for the columns of schema (as in a golden
// case: "a INT, b STRING"), with f's options set to kvs; any error fails
// tb.
func NewDecoder(tb testing.TB, f table.Format, schema string, kvs ...options.KV) ([]types.Column, table.Decoder) {
	tb.Helper()
	cols, err := ParseColumns(schema)
	if err != nil {
		tb.Fatalf("schema %q: %v", schema, err)
	}
	vals, err := options.Parse(kvs, nil, f.Options())
	if err != nil {
		tb.Fatalf("options %v: %v", kvs, err)
	}
	dec, err := f.NewDecoder(cols, vals)
	if err != nil {
		tb.Fatalf("decoder for %q: %v", schema, err)
	}
	return cols, dec
}

// NewCodec is NewDecoder with f's encoder of the same columns and options
// beside it.
func NewCodec(tb testing.TB, f table.Format, schema string, kvs ...options.KV) ([]types.Column, table.Decoder, table.Encoder) {
	tb.Helper()
	cols, dec := NewDecoder(tb, f, schema, kvs...)
	vals, err := options.Parse(kvs, nil, f.Options())
	if err != nil {
		tb.Fatalf("options %v: %v", kvs, err)
	}
	enc, err := table.NewEncoder(f, cols, vals)
	if err != nil {
		tb.Fatalf("encoder for %q: %v", schema, err)
	}
	return cols, dec, enc
}

// CheckRegistered fails t unless the format registered under f's name is
// of f's type and has f's options.
func CheckRegistered(t *testing.T, f table.Format) {
	t.Helper()
	got, err := table.LookupFormat(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if reflect.TypeOf(got) != reflect.TypeOf(f) || got.Options() != f.Options() {
		t.Errorf("registered %T with options %p, want %T with %p", got, got.Options(), f, f.Options())
	}
}
