package table

import (
	"math"

	"github.com/kshare/kshare/types"
)

// IntRange is the range of values of an integer kind, TINYINT to BIGINT:
// what a decoder or a CAST checks a value against before it narrows it, so
// that an out-of-range value is an error rather than a wrap-around. Any other
// kind is the caller's programming error and panics.
func IntRange(k types.Kind) (lo, hi int64) {
	switch k {
	case types.TinyInt:
		return math.MinInt8, math.MaxInt8
	case types.SmallInt:
		return math.MinInt16, math.MaxInt16
	case types.Int:
		return math.MinInt32, math.MaxInt32
	case types.BigInt:
		return math.MinInt64, math.MaxInt64
	}
	panic("table: IntRange of " + k.String())
}
