package expr

// This file holds the numeric functions. Exact numbers stay exact: ROUND,
// TRUNCATE, FLOOR, CEIL, ABS and SIGN of a DECIMAL compute on its digits and
// round half away from zero (Java's HALF_UP), as Flink does. Functions of
// FLOAT or DOUBLE follow Java's Math (SQRT(-1) is NaN, LN(0) -Infinity).
// An integer result beyond its type (ABS of the smallest INT) is an error,
// where Flink wraps around.

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// numOrTimeArg is FLOOR's and CEIL's first argument.
var numOrTimeArg = argKind{name: "numeric, DATE or TIMESTAMP", ok: func(t *types.DataType) bool {
	return IsNumeric(t) || timeArg.ok(t)
}, null: types.DoubleType()}

func init() {
	register(
		&funcDef{name: "MOD", args: []argKind{exactArg, exactArg},
			desc: "the remainder of dividing the first argument by the second, with the sign of the first",
			build: func(_ *Compiler, args []Node, src string) (Node, error) {
				return arithOf("%", args[0], args[1], src)
			}},
		&funcDef{name: "ABS", args: []argKind{numArg}, desc: "the absolute value",
			ret: sameAsArg(0), eval: exactOrFloat(absInt, absDec, math.Abs)},
		&funcDef{name: "SIGN", args: []argKind{numArg}, desc: "-1, 0 or 1 as the number is negative, zero or positive, of its type",
			ret: sameAsArg(0), eval: exactOrFloat(signInt, signDec, signFloat)},
		&funcDef{name: "ROUND", args: []argKind{numArg, intArg}, min: 1,
			desc: "the number rounded half away from zero to d digits after the point (default 0; negative: before it)",
			ret:  roundType, eval: rounder(false)},
		&funcDef{name: "TRUNCATE", args: []argKind{numArg, intArg}, min: 1,
			desc: "the number cut toward zero to d digits after the point (default 0; negative: before it)",
			ret:  roundType, eval: rounder(true)},
		&funcDef{name: "FLOOR", args: []argKind{numOrTimeArg, unitArg}, min: 1, sig: "FLOOR(numeric), FLOOR(DATE or TIMESTAMP TO unit)",
			desc: "the largest integer not greater than the number; the time cut to the unit (" + strings.Join(floorUnits, ", ") + ")",
			ret:  floorCeilType, eval: floorCeil(true)},
		&funcDef{name: "CEIL", args: []argKind{numOrTimeArg, unitArg}, min: 1, sig: "CEIL(numeric), CEIL(DATE or TIMESTAMP TO unit)",
			desc: "the smallest integer not less than the number; the time raised to the next boundary of the unit unless on one",
			ret:  floorCeilType, eval: floorCeil(false)},
		&funcDef{name: "CEILING", args: []argKind{numOrTimeArg, unitArg}, min: 1, sig: "CEILING(numeric), CEILING(DATE or TIMESTAMP TO unit)",
			desc: "CEIL", ret: floorCeilType, eval: floorCeil(false)},
		&funcDef{name: "POWER", args: []argKind{numArg, numArg}, desc: "the first argument raised to the power of the second, a DOUBLE",
			ret: doubleArgs, eval: doubles(math.Pow)},
		&funcDef{name: "SQRT", args: []argKind{numArg}, desc: "the square root, a DOUBLE",
			ret: doubleArgs, eval: doubles(math.Sqrt)},
		&funcDef{name: "LN", args: []argKind{numArg}, desc: "the natural logarithm, a DOUBLE",
			ret: doubleArgs, eval: doubles(math.Log)},
		&funcDef{name: "LOG10", args: []argKind{numArg}, desc: "the base 10 logarithm, a DOUBLE",
			ret: doubleArgs, eval: doubles(math.Log10)},
		&funcDef{name: "EXP", args: []argKind{numArg}, desc: "e raised to the power of the number, a DOUBLE",
			ret: doubleArgs, eval: doubles(math.Exp)},
	)
}

// doubleArgs converts every argument to DOUBLE, the result's type too.
func doubleArgs(c *call) (*types.DataType, error) {
	for k, a := range c.args {
		d, err := convert(a, types.DoubleType())
		if err != nil {
			return nil, err
		}
		c.args[k] = d
	}
	return types.DoubleType().WithNotNull(notNull(c.args...)), nil
}

// doubles applies f (of one or two float64s) to DOUBLE arguments.
func doubles[F func(float64) float64 | func(float64, float64) float64](f F) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		x := as[0].(*array.Float64)
		var y *array.Float64
		if len(as) > 1 {
			y = as[1].(*array.Float64)
		}
		return rowsOf(ec, c, as, func(b *array.Float64Builder, i int) error {
			switch f := any(f).(type) {
			case func(float64) float64:
				b.UnsafeAppend(f(x.Value(i)))
			case func(float64, float64) float64:
				b.UnsafeAppend(f(x.Value(i), y.Value(i)))
			}
			return nil
		})
	}
}

// exactOrFloat is a function of one number of the result's type: onInt on
// integers (an error if the result does not fit, or ok is false), onDec on a DECIMAL's
// unscaled value at its scale, onFloat on FLOAT and DOUBLE.
func exactOrFloat(onInt func(int64) (int64, bool), onDec func(v *big.Int, scale int) *big.Int, onFloat func(float64) float64) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		t := c.t
		switch {
		case isInt(t):
			get := render.IntReader(as[0])
			lo, hi := types.IntRange(t.Kind)
			var put func(int64)
			return rowsOf(ec, c, as, func(b array.Builder, i int) error {
				r, ok := onInt(get(i))
				if !ok || r < lo || r > hi {
					return Errorf(ErrEval, "%s overflows %s", c.src, TypeName(t))
				}
				if put == nil {
					put = intAppender(b)
				}
				put(r)
				return nil
			})
		case t.Kind == types.Decimal:
			get := decReader(as[0], c.args[0].Type())
			return rowsOf(ec, c, as, func(b *array.Decimal128Builder, i int) error {
				b.Append(decimal128.FromBigInt(onDec(get(i), t.Scale)))
				return nil
			})
		}
		get := render.FloatReader(as[0])
		return rowsOf(ec, c, as, func(b array.Builder, i int) error {
			putFloat(b, onFloat(get(i)))
			return nil
		})
	}
}

// putFloat appends v to a FLOAT or DOUBLE builder.
func putFloat(b array.Builder, v float64) {
	if f, ok := b.(*array.Float32Builder); ok {
		f.Append(float32(v))
		return
	}
	b.(*array.Float64Builder).Append(v)
}

func absInt(v int64) (int64, bool) {
	if v < 0 {
		return -v, v != math.MinInt64
	}
	return v, true
}

func absDec(v *big.Int, _ int) *big.Int { return new(big.Int).Abs(v) }

func signInt(v int64) (int64, bool) {
	switch {
	case v < 0:
		return -1, true
	case v > 0:
		return 1, true
	}
	return 0, true
}

func signDec(v *big.Int, scale int) *big.Int {
	return new(big.Int).Mul(big.NewInt(int64(v.Sign())), pow10(scale))
}

// signFloat is Java's Math.signum: NaN and zeros (with their sign) as they
// are.
func signFloat(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return v
}

// digitsArg is ROUND's and TRUNCATE's second argument when it is a
// constant; ok is false when there is none (0 digits) or it is not one.
func digitsArg(c *call) (d int64, constant bool) {
	if len(c.args) < 2 {
		return 0, true
	}
	lit, ok := c.args[1].(*literal)
	if !ok {
		return 0, false
	}
	v, valid := literalInt(lit)
	return v, valid
}

// roundType is Flink's: the number's type, except that a DECIMAL(p, s)
// rounded to d < s digits is DECIMAL(1 + p - s + d, d) (the digit rounding
// may carry), or DECIMAL(1 + p - s, 0) for d < 0; a DECIMAL needs d to be a
// constant.
func roundType(c *call) (*types.DataType, error) {
	t := c.args[0].Type().WithNotNull(notNull(c.args...))
	if t.Kind != types.Decimal {
		return t, nil
	}
	d, ok := digitsArg(c)
	if !ok {
		return nil, Errorf(ErrType, "%s of a DECIMAL needs a constant number of digits, got %s (%s)", c.fn.name, c.args[1].Text(), c.src)
	}
	p, s := t.Precision, t.Scale
	switch {
	case d >= int64(s):
		return t, nil
	case d < 0:
		return &types.DataType{Kind: types.Decimal, Precision: min(types.MaxDecimalPrecision, 1+p-s), NotNull: t.NotNull}, nil
	}
	return &types.DataType{Kind: types.Decimal, Precision: min(types.MaxDecimalPrecision, 1+p-s+int(d)), Scale: int(d), NotNull: t.NotNull}, nil
}

// roundDigits rounds the unscaled v (at scale s) to d digits after the point,
// half away from zero or (trunc) toward zero; the result is at scale s.
func roundDigits(v *big.Int, s int, d int64, trunc bool) *big.Int {
	if d >= int64(s) {
		return v
	}
	if int64(s)-d > int64(len(pow10Cache)) {
		return new(big.Int) // every digit goes
	}
	keep := int(d)
	var q *big.Int
	if trunc {
		q = new(big.Int).Quo(v, pow10(s-keep))
	} else {
		q = rescale(v, s, keep)
	}
	return q.Mul(q, pow10(s-keep))
}

// rounder is ROUND and TRUNCATE (trunc).
func rounder(trunc bool) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		digits := func(int) int64 { return 0 }
		if len(as) > 1 {
			digits = render.IntReader(as[1])
		}
		t, from := c.t, c.args[0].Type()
		switch {
		case isExact(t):
			get, s := decReader(as[0], from), scaleOf(from)
			return rowsOf(ec, c, as, func(b array.Builder, i int) error {
				v := rescale(roundDigits(get(i), s, digits(i), trunc), s, scaleOf(t))
				return appendExact(b, v, t, c)
			})
		}
		get, bits := render.FloatReader(as[0]), 64
		if t.Kind == types.Float {
			bits = 32
		}
		return rowsOf(ec, c, as, func(b array.Builder, i int) error {
			putFloat(b, roundFloat(get(i), bits, digits(i), trunc))
			return nil
		})
	}
}

// appendExact appends the unscaled v to an integer or DECIMAL builder of
// type t, an error if it does not fit.
func appendExact(b array.Builder, v *big.Int, t *types.DataType, c *call) error {
	if t.Kind == types.Decimal {
		if !fitsDecimal(v, t.Precision) {
			return Errorf(ErrEval, "%s overflows %s", c.src, TypeName(t))
		}
		b.(*array.Decimal128Builder).Append(decimal128.FromBigInt(v))
		return nil
	}
	lo, hi := types.IntRange(t.Kind)
	if !v.IsInt64() || v.Int64() < lo || v.Int64() > hi {
		return Errorf(ErrEval, "%s overflows %s", c.src, TypeName(t))
	}
	intAppender(b)(v.Int64())
	return nil
}

// roundFloat rounds as Flink does: on the shortest decimal text of the
// value (Java's BigDecimal.valueOf), so that ROUND(2.675, 2) is 2.68 even
// though the double is a little below 2.675. NaN and infinities stay.
func roundFloat(v float64, bits int, d int64, trunc bool) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	u, s, ok := decimal.ParseBig(strconv.FormatFloat(v, 'f', -1, bits))
	if !ok {
		return v
	}
	r := roundDigits(u, s, d, trunc)
	f, _ := strconv.ParseFloat(decimalText(r, s), 64)
	if f == 0 && math.Signbit(v) {
		return math.Copysign(0, -1)
	}
	return f
}

// decimalText prints the unscaled v at scale s.
func decimalText(v *big.Int, s int) string {
	return v.String() + "e-" + strconv.Itoa(s)
}

// floorCeilType is the number's type, except that a DECIMAL(p, s) is
// DECIMAL(p - s + 1, 0) (the integer part may gain a digit: CEIL(9.5) is
// 10), as in Flink.
func floorCeilType(c *call) (*types.DataType, error) {
	t := c.args[0].Type()
	if len(c.args) == 2 || !IsNumeric(t) {
		if len(c.args) == 1 || IsNumeric(t) {
			return nil, Errorf(ErrType, "%s takes a number, or a time TO a unit (%s)", c.fn.name, c.src)
		}
		u, err := unitName(c, c.args[1], floorUnits)
		c.state = u
		return t, err
	}
	if t.Kind != types.Decimal || t.Scale == 0 {
		return t, nil
	}
	return &types.DataType{Kind: types.Decimal, Precision: min(types.MaxDecimalPrecision, t.Precision-t.Scale+1), NotNull: t.NotNull}, nil
}

func floorCeil(floor bool) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	f := math.Ceil
	if floor {
		f = math.Floor
	}
	toInt := func(v *big.Int, s int) *big.Int {
		q, r := new(big.Int).QuoRem(v, pow10(s), new(big.Int))
		switch {
		case floor && r.Sign() < 0:
			q.Sub(q, big.NewInt(1))
		case !floor && r.Sign() > 0:
			q.Add(q, big.NewInt(1))
		}
		return q
	}
	onTime := floorCeilTime(floor)
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		from := c.args[0].Type()
		if len(as) == 2 {
			return onTime(ec, c, as[:1])
		}
		if from.Kind != types.Decimal {
			return exactOrFloat(func(v int64) (int64, bool) { return v, true }, nil, f)(ec, c, as)
		}
		get := decReader(as[0], from)
		return rowsOf(ec, c, as, func(b array.Builder, i int) error {
			return appendExact(b, rescale(toInt(get(i), from.Scale), 0, c.t.Scale), c.t, c)
		})
	}
}
