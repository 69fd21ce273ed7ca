package expr

import (
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// TestNumCasts casts edge values between every pair of integer and
// approximate types, through castArray as a query does, and checks each
// result against the rule: to an integer, the value truncated toward zero
// when it is finite and fits the target, otherwise NULL (TRY_CAST) or an
// error (CAST); to a float, the nearest value.
func TestNumCasts(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	ec := NewEvalCtx(mem)
	kinds := []types.Kind{types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double}
	ints := []int64{math.MinInt64, math.MinInt32, -129, -128, -1, 0, 1, 127, 128, 32768, math.MaxInt32, math.MaxInt64}
	floats := []float64{math.NaN(), math.Inf(-1), math.Inf(1), -1e300, -9.3e18, -2.9, -0.5, 0, 0.5, 2.9, 127.9, 128, 9.2e18, 1e300}
	for _, fk := range kinds {
		from := &types.DataType{Kind: fk}
		var in []any // the values as int64s or float64s, for the rule
		b := array.NewBuilder(mem, from.ArrowType())
		switch bb := b.(type) {
		case *array.Float32Builder:
			for _, v := range floats {
				bb.Append(float32(v))
				in = append(in, float64(float32(v)))
			}
		case *array.Float64Builder:
			bb.AppendValues(floats, nil)
			for _, v := range floats {
				in = append(in, v)
			}
		default:
			lo, hi := types.IntRange(fk)
			app := intAppender(b)
			for _, v := range ints {
				if v >= lo && v <= hi {
					app(v)
					in = append(in, v)
				}
			}
		}
		b.AppendNull()
		a := b.NewArray()
		b.Release()
		for _, tk := range kinds {
			to := &types.DataType{Kind: tk}
			if _, ok := numCasts[castKey{from.ArrowType().ID(), to.ArrowType().ID()}]; !ok {
				t.Errorf("no kernel for %s to %s", from, to)
				continue
			}
			out, err := castArray(ec, a, from, to, true)
			if err != nil {
				t.Fatalf("TRY_CAST %s to %s: %v", from, to, err)
			}
			if !out.IsNull(out.Len() - 1) {
				t.Errorf("%s to %s: NULL became %s", from, to, out.ValueStr(out.Len()-1))
			}
			failed := false
			for i, v := range in {
				want, ok := numRule(v, tk)
				failed = failed || !ok
				switch {
				case !ok && out.IsValid(i):
					t.Errorf("%s %v to %s: got %s, want NULL", from, v, to, out.ValueStr(i))
				case !ok:
				case out.IsNull(i):
					t.Errorf("%s %v to %s: got NULL, want %v", from, v, to, want)
				case isApprox(to):
					if got := render.FloatReader(out)(i); got != want.(float64) && !(math.IsNaN(got) && math.IsNaN(want.(float64))) {
						t.Errorf("%s %v to %s: got %v, want %v", from, v, to, got, want)
					}
				default:
					if got := render.IntReader(out)(i); got != want.(int64) {
						t.Errorf("%s %v to %s: got %v, want %v", from, v, to, got, want)
					}
				}
			}
			out.Release()
			// CAST fails where TRY_CAST gave NULL.
			out, err = castArray(ec, a, from, to, false)
			var qe *Error
			switch {
			case failed && (!errors.As(err, &qe) || qe.Kind != ErrEval):
				t.Errorf("CAST %s to %s: got %v, want an evaluation error", from, to, err)
			case !failed && err != nil:
				t.Errorf("CAST %s to %s: %v", from, to, err)
			}
			if out != nil {
				out.Release()
			}
		}
		a.Release()
	}
}

// numRule is what casting v (an int64 or a float64) to kind k gives: an
// int64 or a float64, or ok false where there is none.
func numRule(x any, k types.Kind) (any, bool) {
	if n, ok := x.(int64); ok {
		switch k {
		case types.Float:
			return float64(float32(float64(n))), true
		case types.Double:
			return float64(n), true
		}
		lo, hi := types.IntRange(k)
		return n, n >= lo && n <= hi
	}
	v := x.(float64)
	switch k {
	case types.Float:
		return float64(float32(v)), true
	case types.Double:
		return v, true
	}
	tv := math.Trunc(v)
	// 2^63 is the first float64 beyond int64; below it the conversion is
	// exact for every value in ints and floats.
	if math.IsNaN(v) || math.IsInf(v, 0) || tv < -9.223372036854775808e18 || tv >= 9.223372036854775808e18 {
		return nil, false
	}
	lo, hi := types.IntRange(k)
	if n := int64(tv); n >= lo && n <= hi {
		return n, true
	}
	return nil, false
}
