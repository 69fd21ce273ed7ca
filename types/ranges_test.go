package types

import (
	"math"
	"testing"
)

func TestIntRange(t *testing.T) {
	for _, c := range []struct {
		k      Kind
		lo, hi int64
	}{
		{TinyInt, math.MinInt8, math.MaxInt8},
		{SmallInt, math.MinInt16, math.MaxInt16},
		{Int, math.MinInt32, math.MaxInt32},
		{BigInt, math.MinInt64, math.MaxInt64},
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
	IntRange(Double)
}
