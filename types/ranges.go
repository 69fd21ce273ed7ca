package types

import "math"

// IntRange is the range of values of an integer kind, TINYINT to BIGINT:
// what a decoder or a CAST checks a value against before it narrows it, so
// that an out-of-range value is an error rather than a wrap-around. Any other
// kind is the caller's programming error and panics.
func IntRange(k Kind) (lo, hi int64) {
	switch k {
	case TinyInt:
		return math.MinInt8, math.MaxInt8
	case SmallInt:
		return math.MinInt16, math.MaxInt16
	case Int:
		return math.MinInt32, math.MaxInt32
	case BigInt:
		return math.MinInt64, math.MaxInt64
	}
	panic("types: IntRange of " + k.String())
}
