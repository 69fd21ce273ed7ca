package decimal

import (
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Status says whether a decimal's text was read, and if not why.
type Status uint8

const (
	OK     Status = iota
	Syntax        // not a number
	Range         // a number that does not fit the DECIMAL
)

// MaxPrecision is the most digits a DECIMAL has, and the most its 128 bits
// hold.
const MaxPrecision = 38

// maxExp caps the exponent read from a decimal's text. Anything beyond it
// is out of range (or rounds to zero) for every DECIMAL precision, so the
// cap only keeps the arithmetic from overflowing.
const maxExp = 1 << 20

// Parse reads the decimal text s exactly, never through float64, into a
// DECIMAL(prec, scale). The grammar is that of Java's BigDecimal, which
// includes JSON's numbers: an optional sign, digits with an optional point
// (".5" and "5." too), an optional exponent. Digits below the scale are
// rounded half up (away from zero), as Flink's DecimalData.fromBigDecimal
// does; a value with more than prec digits once scaled is out of Range.
func Parse[T ~string | ~[]byte](s T, prec, scale int) (decimal128.Num, Status) {
	// The scan is written out here, not called: the JSON decoder reads
	// every DECIMAL its fast path does not take through this function, and
	// a scanner of its own (which the compiler does not inline) cost it an
	// eighth more instructions.
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && s[i]-'0' <= 9 {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
		fracEnd = i
	}
	if intEnd == intStart && fracEnd == fracStart {
		return decimal128.Num{}, Syntax
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i >= len(s) || s[i]-'0' > 9 {
			return decimal128.Num{}, Syntax
		}
		for i < len(s) && s[i]-'0' <= 9 {
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
		return decimal128.Num{}, Syntax
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
		return decimal128.Num{}, OK
	}
	// top is the power of ten of the first significant digit, keep the
	// number of digits at or above 10^-scale: the digits of the result.
	top := nInt - 1 - k0 + exp
	keep := top + scale + 1
	if keep > prec {
		return decimal128.Num{}, Range
	}
	if keep < 0 {
		return decimal128.Num{}, OK
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
	v := decimal128.New(int64(hi), lo)
	if !v.FitsInPrecision(int32(prec)) {
		// Rounding carried into a new digit: 999.995 as DECIMAL(5, 2).
		return decimal128.Num{}, Range
	}
	if neg {
		v = v.Negate()
	}
	return v, OK
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

// maxBigExp bounds the exponent ParseBig takes: 1e1000 has more digits
// than any DECIMAL already, and math/big would spend memory in proportion
// to the exponent.
const maxBigExp = 1000

// ParseBig reads the decimal text s (Parse's grammar) exactly, with no
// precision to fit: its unscaled value and its scale, the digits after the
// point less the exponent, or 0 when that is negative (1.50 is 150 at scale
// 2, 1.5e3 is 1500 at scale 0), as Flink types a number literal. An
// exponent beyond +-1000 is refused.
func ParseBig(s string) (unscaled *big.Int, scale int, ok bool) {
	if _, st := Parse(s, MaxPrecision, 0); st == Syntax {
		return nil, 0, false
	}
	// Parse checked the grammar; what is left is to split the text.
	mant, exp := s, 0
	if k := strings.IndexAny(s, "eE"); k >= 0 {
		e, err := strconv.Atoi(s[k+1:])
		if err != nil || e > maxBigExp || e < -maxBigExp {
			return nil, 0, false
		}
		mant, exp = s[:k], e
	}
	neg := mant[0] == '-'
	intPart, frac, _ := strings.Cut(strings.TrimLeft(mant, "+-"), ".")
	v, _ := new(big.Int).SetString(intPart+frac, 10)
	scale = len(frac) - exp
	if scale < 0 {
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-scale)), nil))
		scale = 0
	}
	if neg {
		v.Neg(v)
	}
	return v, scale, true
}
