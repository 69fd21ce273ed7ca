package decimal

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Append's plain digits are arrow's own formatting (which goes through
// math/big), for the int64 values that take strconv's fast path and for
// the 128-bit values beyond them.
func TestAppendPlain(t *testing.T) {
	vals := []decimal128.Num{decimal128.New(1, 5), decimal128.New(-2, 7)}
	for _, v := range []int64{0, 1, -1, 5, -5, 9, 10, 99, 100, 2550, -2550, 123456789, math.MaxInt64, math.MinInt64, math.MinInt64 + 1} {
		vals = append(vals, decimal128.FromI64(v))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		vals = append(vals, decimal128.FromI64(r.Int64()>>r.IntN(63)))
		// Below 10^38 in magnitude: at most 38 digits, as a DECIMAL has.
		v := decimal128.New(r.Int64N(1<<61)>>r.IntN(61), r.Uint64())
		if r.IntN(2) == 0 {
			v = v.Negate()
		}
		vals = append(vals, v)
	}
	for _, v := range vals {
		for _, scale := range []int32{0, 1, 2, 3, 10, 18, 20, 38} {
			if got, want := string(Append(nil, v, scale, true)), v.ToString(scale); got != want {
				t.Fatalf("Append(%s, %d, plain) = %q, want %q", v.BigInt(), scale, got, want)
			}
		}
	}
}

// Without plain, Append writes as Java's BigDecimal.toString: scientific
// notation once the adjusted exponent is below -6.
func TestAppendJava(t *testing.T) {
	cases := []struct {
		v     string // unscaled
		scale int32
		want  string
	}{
		{"0", 2, "0.00"}, {"0", 10, "0E-10"}, {"0", 38, "0E-38"}, {"-1", 2, "-0.01"},
		{"10000", 10, "0.0000010000"}, {"1000", 10, "1.000E-7"}, {"1", 38, "1E-38"},
		{"-2700000000000000000000000000000", 38, "-2.700000000000000000000000000000E-8"},
		{"99999999999999999999999999999999999999", 0, "99999999999999999999999999999999999999"},
		{"-99999999999999999999999999999999999999", 38, "-0.99999999999999999999999999999999999999"},
		{"123456", 6, "0.123456"}, {"1234567", 12, "0.000001234567"}, {"1234567", 13, "1.234567E-7"},
	}
	for _, c := range cases {
		b, _ := new(big.Int).SetString(c.v, 10)
		if got := string(Append(nil, decimal128.FromBigInt(b), c.scale, false)); got != c.want {
			t.Errorf("Append(%s, %d) = %q, want %q", c.v, c.scale, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		in          string
		prec, scale int
		want        string // the value at scale, "syntax" or "range"
	}{
		{"25.50", 10, 2, "25.50"},
		{"25.5", 10, 2, "25.50"},
		{"12345678901234567890.12", 22, 2, "12345678901234567890.12"},
		{"-12345678901234567890.12", 22, 2, "-12345678901234567890.12"},
		{"1234567890123456789012345678.0123456789", 38, 10, "1234567890123456789012345678.0123456789"},
		{"0.0000000001", 38, 10, "0.0000000001"},
		{"-0.00000000005", 38, 10, "-0.0000000001"},
		{"+12", 5, 0, "12"},
		{"0.005", 10, 2, "0.01"},
		{"0.004", 22, 2, "0.00"},
		{"-0.005", 10, 2, "-0.01"},
		{"2.5", 5, 0, "3"},
		{"-2.5", 5, 0, "-3"},
		{"-2.505", 10, 2, "-2.51"},
		{"1.5e3", 10, 2, "1500.00"},
		{"1E-2", 22, 2, "0.01"},
		{"12e+5", 38, 10, "1200000.0000000000"},
		{"1e4", 5, 0, "10000"},
		{"1e5", 5, 0, "range"},
		{"99999999.995", 10, 2, "range"},
		{"99999999.994", 10, 2, "99999999.99"},
		{"123456789.0", 10, 2, "range"},
		{"12345678901234567890123456789", 38, 10, "range"},
		{"1e-999999999999", 10, 2, "0.00"},
		{"0e999999999", 5, 0, "0"},
		{"1e999999999999", 10, 2, "range"},
		{"1e1001", 10, 2, "range"},
		{"1e-1001", 10, 2, "0.00"},
		{".5", 10, 2, "0.50"},
		{"5.", 22, 2, "5.00"},
		{"00.5", 22, 2, "0.50"},
		{"0.0000000000000000000000000000000000000000000000000000000000000000000000000000000001", 10, 2, "0.00"},
		{"99999999999999999999999999999999999999", 38, 0, "99999999999999999999999999999999999999"},
		{"99999999999999999999999999999999999999.5", 38, 0, "range"},
		{"-0", 5, 2, "0.00"},
		{"abc", 10, 2, "syntax"},
		{"1.2.3", 10, 2, "syntax"},
		{" 1.25 ", 10, 2, "syntax"},
		{"", 10, 2, "syntax"},
		{".", 10, 2, "syntax"},
		{"-", 10, 2, "syntax"},
		{"e5", 10, 2, "syntax"},
		{"5e", 10, 2, "syntax"},
		{"5e+", 10, 2, "syntax"},
		{"1e--5", 10, 2, "syntax"},
		{"1e5.0", 10, 2, "syntax"},
		{"1_000", 10, 2, "syntax"},
		{"0x10", 10, 2, "syntax"},
		{"Infinity", 10, 2, "syntax"},
	}
	for _, c := range cases {
		if got := parsed(c.in, c.prec, c.scale); got != c.want {
			t.Errorf("Parse(%q, %d, %d) = %s, want %s", c.in, c.prec, c.scale, got, c.want)
		}
		v, st := Parse([]byte(c.in), c.prec, c.scale)
		if v2, st2 := Parse(c.in, c.prec, c.scale); v != v2 || st != st2 {
			t.Errorf("Parse(%q) reads bytes and a string differently", c.in)
		}
	}
}

func parsed(s string, prec, scale int) string {
	v, st := Parse(s, prec, scale)
	switch st {
	case Syntax:
		return "syntax"
	case Range:
		return "range"
	}
	return v.ToString(int32(scale))
}

// Parse agrees with exact rational arithmetic (math/big's Rat, rounded half
// away from zero) on random decimal texts of every shape.
func TestParseAsRat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for range 20000 {
		s := []string{"", "-", "+"}[r.IntN(3)] + digits(r.IntN(25))
		if r.IntN(2) == 0 {
			s += "." + digits(r.IntN(25))
		}
		if strings.Trim(s, "+-.") == "" {
			s += "0"
		}
		if r.IntN(3) == 0 {
			s += fmt.Sprintf("e%d", r.IntN(61)-30)
		}
		prec := 1 + r.IntN(38)
		scale := r.IntN(prec + 1)
		if got, want := parsed(s, prec, scale), ratDecimal(t, s, prec, scale); got != want {
			t.Fatalf("Parse(%q, %d, %d) = %s, want %s", s, prec, scale, got, want)
		}
	}
}

// ratDecimal is s at scale, rounded half away from zero, or "range".
func ratDecimal(t *testing.T, s string, prec, scale int) string {
	q, ok := new(big.Rat).SetString(strings.TrimPrefix(s, "+"))
	if !ok {
		t.Fatalf("big.Rat does not read %q", s)
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	q.Mul(q, new(big.Rat).SetInt(pow))
	num, den := q.Num(), q.Denom()
	quo, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if rem.Abs(rem).Lsh(rem, 1).Cmp(den) >= 0 {
		quo.Add(quo, big.NewInt(int64(num.Sign())))
	}
	if new(big.Int).Abs(quo).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)) >= 0 {
		return "range"
	}
	return decimal128.FromBigInt(quo).ToString(int32(scale))
}

func TestParseBig(t *testing.T) {
	cases := []struct {
		in       string
		unscaled string
		scale    int
		ok       bool
	}{
		{"1.50", "150", 2, true},
		{"0.001", "1", 3, true},
		{"007", "7", 0, true},
		{"-2.505", "-2505", 3, true},
		{"1e2", "100", 0, true},
		{"1.5e3", "1500", 0, true},
		{"1.5e-3", "15", 4, true},
		{"+.5", "5", 1, true},
		{"5.", "5", 0, true},
		{"123456789012345678901234567890123456789012", "123456789012345678901234567890123456789012", 0, true},
		{"1e1000", "1" + strings.Repeat("0", 1000), 0, true},
		{"1e1001", "", 0, false},
		{"1e-1001", "", 0, false},
		{" 1", "", 0, false},
		{"1.2.3", "", 0, false},
		{"", "", 0, false},
	}
	for _, c := range cases {
		v, scale, ok := ParseBig(c.in)
		if ok != c.ok || ok && (v.String() != c.unscaled || scale != c.scale) {
			t.Errorf("ParseBig(%q) = %v, %d, %v; want %s, %d, %v", c.in, v, scale, ok, c.unscaled, c.scale, c.ok)
		}
	}
}

// Whatever the text, Parse does not panic, reads bytes as it reads a
// string, and what it reads (exponents kept small, for the oracle's sake)
// is exact rational arithmetic's value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"25.50", "-0.005", "1.5e3", "99999999.995", ".5", "5.", "1e--5", "00.5", "+12", "1E-2"} {
		f.Add(s, uint8(10), uint8(2))
	}
	f.Fuzz(func(t *testing.T, s string, p, sc uint8) {
		prec := 1 + int(p)%38
		scale := int(sc) % (prec + 1)
		v, st := Parse(s, prec, scale)
		if bv, bst := Parse([]byte(s), prec, scale); bv != v || bst != st {
			t.Fatalf("Parse(%q) reads bytes and a string differently", s)
		}
		if st == Syntax || len(s) > 100 {
			return
		}
		if _, exp, ok := strings.Cut(strings.ToLower(s), "e"); ok && len(strings.TrimLeft(exp, "+-0")) > 2 {
			return // beyond 1e99: too slow for the oracle
		}
		if got, want := parsed(s, prec, scale), ratDecimal(t, s, prec, scale); got != want {
			t.Fatalf("Parse(%q, %d, %d) = %s, want %s", s, prec, scale, got, want)
		}
	})
}
