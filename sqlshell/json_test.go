package sqlshell

import (
	"math"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/table"
)

// TestJSONFloat: a FLOAT is written with the shortest digits that read back
// as the float32 (0.1, not 0.10000000149011612), and the non-finite values as
// strings, as for DOUBLE.
func TestJSONFloat(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	fb := array.NewFloat32Builder(mem)
	defer fb.Release()
	fb.AppendValues([]float32{0.1, float32(math.Inf(-1))}, nil)
	fb.AppendNull()
	a := fb.NewArray()
	defer a.Release()
	f := jsonValue(a, &table.DataType{Kind: table.Float})
	var got []string
	for i := 0; i < a.Len(); i++ {
		got = append(got, string(f(nil, i)))
	}
	if want := []string{"0.1", `"-Infinity"`, "null"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
