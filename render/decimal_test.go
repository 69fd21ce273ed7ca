package render

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// TestDecimalString checks the int64 fast path against arrow's own
// formatting, which goes through math/big.
func TestDecimalString(t *testing.T) {
	vals := []int64{0, 1, -1, 5, -5, 9, 10, 99, 100, 2550, -2550, 123456789, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		vals = append(vals, r.Int64()>>r.IntN(63))
	}
	for _, v := range vals {
		for _, scale := range []int32{0, 1, 2, 3, 10, 18, 20, 38} {
			n := decimal128.FromI64(v)
			if got, want := decimalString(n, scale), n.ToString(scale); got != want {
				t.Fatalf("decimalString(%d, %d) = %q, want %q", v, scale, got, want)
			}
		}
	}
	// Beyond int64: the slow path.
	big := decimal128.New(1, 5)
	if got, want := decimalString(big, 2), big.ToString(2); got != want {
		t.Fatalf("decimalString(2^64+5, 2) = %q, want %q", got, want)
	}
}
