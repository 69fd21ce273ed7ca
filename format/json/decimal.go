package json

import (
	"math/bits"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

type numStatus uint8

const (
	numOK numStatus = iota
	numSyntax
	numRange
)

// maxExp caps the exponent read from a decimal's text. Anything beyond it
// is out of range (or rounds to zero) for every DECIMAL precision, so the
// cap only keeps the arithmetic from overflowing.
const maxExp = 1 << 20

// parseDecimal reads the decimal text s exactly, never through float64, into
// a DECIMAL(prec, scale). Digits below the scale are rounded half up (away
// from zero), as Flink's DecimalData.fromBigDecimal does; a value with more
// than prec digits once scaled is out of range. The grammar is that of
// Java's BigDecimal, which includes JSON's numbers: an optional sign, digits
// with an optional point (".5" and "5." too), an optional exponent.
func parseDecimal(s []byte, prec, scale int) (decimal128.Num, numStatus) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		fracEnd = i
	}
	if intEnd == intStart && fracEnd == fracStart {
		return decimal128.Num{}, numSyntax
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return decimal128.Num{}, numSyntax
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if exp < maxExp {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return decimal128.Num{}, numSyntax
	}

	nInt := intEnd - intStart
	total := nInt + fracEnd - fracStart
	digit := func(k int) byte {
		if k < nInt {
			return s[intStart+k] - '0'
		}
		return s[fracStart+k-nInt] - '0'
	}
	k0 := 0
	for k0 < total && digit(k0) == 0 {
		k0++
	}
	if k0 == total {
		return decimal128.Num{}, numOK
	}
	// top is the power of ten of the first significant digit, keep the
	// number of digits at or above 10^-scale: the digits of the result.
	top := nInt - 1 - k0 + exp
	keep := top + scale + 1
	if keep > prec {
		return decimal128.Num{}, numRange
	}
	if keep < 0 {
		return decimal128.Num{}, numOK
	}
	have := total - k0
	take := min(keep, have)
	var hi, lo uint64
	for k := k0; k < k0+take; k++ {
		hi, lo = mul10add(hi, lo, uint64(digit(k)))
	}
	for range keep - take {
		hi, lo = mul10add(hi, lo, 0)
	}
	if keep < have && digit(k0+keep) >= 5 {
		var c uint64
		lo, c = bits.Add64(lo, 1, 0)
		hi += c
	}
	n := decimal128.New(int64(hi), lo)
	if !n.FitsInPrecision(int32(prec)) {
		// Rounding carried into a new digit: 999.995 as DECIMAL(5, 2).
		return decimal128.Num{}, numRange
	}
	if neg {
		n = n.Negate()
	}
	return n, numOK
}

// mul10add is hi:lo*10 + d. Callers keep it below 10^38, so it never
// overflows 128 bits.
func mul10add(hi, lo, d uint64) (uint64, uint64) {
	if hi == 0 && lo < (1<<63)/10 {
		return 0, lo*10 + d
	}
	carry, l := bits.Mul64(lo, 10)
	h := hi*10 + carry
	l, c := bits.Add64(l, d, 0)
	return h + c, l
}

// appendDecimal writes the DECIMAL whose unscaled value is v with scale
// fractional digits, exactly: in plain digits when plain, otherwise as
// Java's BigDecimal.toString does (Jackson's default, hence Flink's), which
// switches to scientific notation when the adjusted exponent is below -6.
func appendDecimal(b []byte, v decimal128.Num, scale int32, plain bool) []byte {
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
