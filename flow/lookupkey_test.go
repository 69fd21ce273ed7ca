package flow_test

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
)

// Keys of equal values are equal, whatever the integer width; a composite
// key tells its parts apart ("a","bc" is not "ab","c"); a NULL makes none.
func TestAppendKey(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	col := func(typ arrow.DataType, json string) arrow.Array {
		a, _, err := array.FromJSON(mem, typ, strings.NewReader(json))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	s1, s2 := col(arrow.BinaryTypes.String, `["a", "ab", null]`), col(arrow.BinaryTypes.String, `["bc", "c", "x"]`)
	i32, i64 := col(arrow.PrimitiveTypes.Int32, `[7, -1, 3]`), col(arrow.PrimitiveTypes.Int64, `[7, -1, 4]`)
	d := col(&arrow.Decimal128Type{Precision: 5, Scale: 2}, `["1.50", "1.50", "2.00"]`)
	for _, a := range []arrow.Array{s1, s2, i32, i64, d} {
		defer a.Release()
	}
	key := func(cols []arrow.Array, i int) string {
		k, ok := flow.AppendKey(nil, cols, i)
		if !ok {
			return "NULL"
		}
		return string(k)
	}
	pair := []arrow.Array{s1, s2}
	if key(pair, 0) == key(pair, 1) {
		t.Error(`("a", "bc") and ("ab", "c") have one key`)
	}
	if key(pair, 2) != "NULL" {
		t.Error("a key with a NULL part is a key")
	}
	for i := range 2 {
		if key([]arrow.Array{i32}, i) != key([]arrow.Array{i64}, i) {
			t.Errorf("row %d: INT and BIGINT of one value have two keys", i)
		}
	}
	if key([]arrow.Array{i32}, 2) == key([]arrow.Array{i64}, 2) || key([]arrow.Array{d}, 0) != key([]arrow.Array{d}, 1) || key([]arrow.Array{d}, 1) == key([]arrow.Array{d}, 2) {
		t.Error("keys do not follow the values")
	}
	if b, ok := flow.AppendKey([]byte("kept"), pair, 2); ok || string(b) != "kept" {
		t.Errorf("a NULL key left %q, want what was there", b)
	}
}
