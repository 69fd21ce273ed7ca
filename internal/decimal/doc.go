// Package decimal reads and writes the text of DECIMAL values exactly: in
// the 128 bits of arrow's decimal128.Num, never through float64, and
// without math/big on the paths that run once a value. Reading follows
// Java's BigDecimal grammar and Flink's rounding (half up); writing is
// plain digits or BigDecimal.toString's.
//
// It is the one place for this: the formats (format/json), the rendering of
// values (render) and the casts and literals of expressions (expr) all use
// it, so it imports nothing of kshare's.
package decimal
