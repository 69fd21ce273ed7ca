package table

import (
	"math"
	"testing"

	"github.com/kshare/kshare/types"
)

func TestIntRange(t *testing.T) {
	for _, c := range []struct {
		k      types.Kind
		lo, hi int64
	}{
		{types.TinyInt, math.MinInt8, math.MaxInt8},
		{types.SmallInt, math.MinInt16, math.MaxInt16},
		{types.Int, math.MinInt32, math.MaxInt32},
		{types.BigInt, math.MinInt64, math.MaxInt64},
	} {
		if lo, hi := IntRange(c.k); lo != c.lo || hi != c.hi {
			t.Errorf("IntRange(%s) = %d, %d; want %d, %d", c.k, lo, hi, c.lo, c.hi)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("IntRange(DOUBLE) did not panic")
		}
	}()
	IntRange(types.Double)
}
