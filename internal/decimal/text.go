package decimal

import (
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Append writes the DECIMAL whose unscaled value is v with scale
// fractional digits, exactly: in plain digits when plain (what Flink
// prints, 0.00000010), otherwise as Java's BigDecimal.toString does
// (Jackson's default, hence Flink's JSON), which switches to scientific
// notation when the adjusted exponent is below -6 (1.0E-7).
func Append(b []byte, v decimal128.Num, scale int32, plain bool) []byte {
	if v.Sign() < 0 {
		b = append(b, '-')
		v = v.Negate()
	}
	var buf [40]byte
	d := unsignedDigits(buf[:0], v.HighBits(), v.LowBits())
	n, s := len(d), int(scale)
	if adjusted := n - 1 - s; !plain && adjusted < -6 {
		b = append(b, d[0])
		if n > 1 {
			b = append(b, '.')
			b = append(b, d[1:]...)
		}
		b = append(b, 'E')
		return strconv.AppendInt(b, int64(adjusted), 10)
	}
	switch {
	case s == 0:
		return append(b, d...)
	case n > s:
		b = append(b, d[:n-s]...)
		b = append(b, '.')
		return append(b, d[n-s:]...)
	}
	b = append(b, '0', '.')
	for range s - n {
		b = append(b, '0')
	}
	return append(b, d...)
}

// unsignedDigits appends the decimal digits of the 128-bit hi:lo.
func unsignedDigits(b []byte, hi int64, lo uint64) []byte {
	h := uint64(hi)
	if h == 0 {
		return strconv.AppendUint(b, lo, 10)
	}
	// Split off the low 19 digits: hi:lo = q*1e19 + r.
	const e19 = 10_000_000_000_000_000_000
	qh, rh := h/e19, h%e19
	ql, r := bits.Div64(rh, lo, e19)
	b = unsignedDigits(b, int64(qh), ql)
	var chunk [19]byte
	for k := 18; k >= 0; k-- {
		chunk[k] = byte('0' + r%10)
		r /= 10
	}
	return append(b, chunk[:]...)
}
