package expr

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// castable reports whether CAST(from AS to) is defined; kshare's matrix is
// Flink's for scalar types:
//
//	to CHAR/VARCHAR/STRING   from anything (rendered as render.CastString does, bytes as UTF-8)
//	to numeric types         from numeric types, BOOLEAN (1 or 0) and strings
//	to BOOLEAN               from BOOLEAN, numeric types (non-zero is TRUE) and strings
//	to BINARY/VARBINARY      from binary types and strings (their UTF-8 bytes)
//	to DATE                  from DATE, TIMESTAMP, TIMESTAMP_LTZ and strings
//	to TIME                  from TIME, TIMESTAMP, TIMESTAMP_LTZ and strings
//	to TIMESTAMP[_LTZ]       from DATE, TIMESTAMP, TIMESTAMP_LTZ and strings
func castable(from, to *types.DataType) bool {
	if !comparableKind(to) {
		return from.WithNotNull(false).Equal(to.WithNotNull(false))
	}
	switch {
	case IsChar(to):
		return true
	case !comparableKind(from):
		return false
	case IsNumeric(to):
		return IsNumeric(from) || from.Kind == types.Boolean || IsChar(from)
	case to.Kind == types.Boolean:
		return IsNumeric(from) || from.Kind == types.Boolean || IsChar(from)
	case isBin(to):
		return isBin(from) || IsChar(from)
	case to.Kind == types.Date:
		return from.Kind == types.Date || isTimestamp(from) || IsChar(from)
	case to.Kind == types.Time:
		return from.Kind == types.Time || isTimestamp(from) || IsChar(from)
	case isTimestamp(to):
		return from.Kind == types.Date || isTimestamp(from) || IsChar(from)
	}
	return false
}

// sameStorage reports whether a value of from is already a value of to, so
// that a cast only relabels the array.
func sameStorage(from, to *types.DataType) bool {
	if !arrow.TypeEqual(from.ArrowType(), to.ArrowType()) {
		return false
	}
	switch {
	case IsChar(to):
		// Only a cast to a length no shorter than every value's is a no-op.
		return to.Kind == types.Varchar && (to.Length == types.MaxLength || IsChar(from) && from.Kind == types.Varchar && from.Length <= to.Length)
	case isTimestamp(to), to.Kind == types.Time:
		return from.Precision <= to.Precision
	case to.Kind == types.Varbinary:
		return to.Length == types.MaxLength || from.Length <= to.Length
	}
	return true
}

// castError is one value that does not fit the target of a CAST.
func castError(val string, to *types.DataType, why string) error {
	msg := fmt.Sprintf("cannot cast %s to %s", val, TypeName(to))
	if why != "" {
		msg += ": " + why
	}
	return &Error{Kind: ErrEval, Msg: msg}
}

// castArray converts every value of a (of type from) to type to. A value that
// does not fit is an error, or NULL when try is set (TRY_CAST).
func castArray(ec *EvalCtx, a arrow.Array, from, to *types.DataType, try bool) (arrow.Array, error) {
	if sameStorage(from, to) {
		a.Retain()
		return a, nil
	}
	if widens(from, to) {
		// Every value fits, so arrow's vectorized cast gives the same
		// answer as the loops below, faster; it is what arithmetic and
		// comparisons of mixed numbers spend their casts on.
		return compute.CastArray(ec.ctx, a, compute.UnsafeCastOptions(to.ArrowType()))
	}
	mem := ec.mem
	n := a.Len()
	b := array.NewBuilder(mem, to.ArrowType())
	defer b.Release()
	b.Reserve(n)
	show := render.Formatter(a, from)
	quoted := func(i int) string { // of a value that is not NULL
		s, _ := show(i)
		if IsChar(from) {
			return types.QuoteString(s)
		}
		return s
	}
	// fail handles value i that does not fit: an error, or a NULL for TRY_CAST.
	fail := func(i int, why string) error {
		if try {
			b.AppendNull()
			return nil
		}
		return castError(quoted(i), to, why)
	}
	var err error
	switch k, ok := numCasts[castKey{from.ArrowType().ID(), to.ArrowType().ID()}]; {
	case ok:
		err = k(a, b, to, fail)
	case isInt(to):
		err = castToInt(b, a, from, to, fail)
	case isApprox(to):
		err = castToFloat(b, a, from, fail)
	case to.Kind == types.Decimal:
		err = castToDecimal(b.(*array.Decimal128Builder), a, from, to, fail)
	case to.Kind == types.Boolean:
		err = castToBool(b.(*array.BooleanBuilder), a, from, fail)
	case IsChar(to):
		err = castToString(b.(*array.StringBuilder), a, from, to)
	case isBin(to):
		err = castToBinary(b, a, to)
	case to.Kind == types.Date:
		err = castToDate(b.(*array.Date32Builder), a, from, fail)
	case to.Kind == types.Time:
		err = castToTime(b, a, from, to, fail)
	case isTimestamp(to):
		err = castToTimestamp(b.(*array.TimestampBuilder), a, from, to, fail)
	default:
		return nil, Errorf(ErrUnsupported, "cannot cast %s to %s", from, to)
	}
	if err != nil {
		return nil, err
	}
	return b.NewArray(), nil
}

// widens reports whether every value of from is a value of to (as Java
// widens numbers: an integer to a wider integer, to FLOAT or to DOUBLE,
// FLOAT to DOUBLE).
func widens(from, to *types.DataType) bool {
	switch {
	case isInt(from) && isInt(to):
		return intRank(to.Kind) >= intRank(from.Kind)
	case isInt(from) && isApprox(to):
		return true
	}
	return from.Kind == types.Float && to.Kind == types.Double
}

// castEach is the loop of every cast that goes value by value: a NULL stays
// NULL; get reads value i as the target's Go value, or says why it does not
// fit, and then fail decides (an error, or a NULL for TRY_CAST); put appends.
func castEach[T any](a arrow.Array, b array.Builder, get func(int) (T, string), put func(T), fail func(int, string) error) error {
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		v, why := get(i)
		if why != "" {
			if err := fail(i, why); err != nil {
				return err
			}
			continue
		}
		put(v)
	}
	return nil
}

// A castKernel casts array a, whose Arrow type is the key's from, into b,
// whose type is the key's to (the SQL type to).
type castKernel func(a arrow.Array, b array.Builder, to *types.DataType, fail func(int, string) error) error

type castKey struct{ from, to arrow.Type }

// numCasts holds a kernel for every pair of numeric Arrow types that kshare's
// integers and approximate numbers use: one generic function, numCast,
// instantiated per pair. (Pairs that widen go to arrow's compute instead, see
// castArray.)
var numCasts = map[castKey]castKernel{}

// numeric is the Go value type of an integer or approximate SQL type.
type numeric interface {
	int8 | int16 | int32 | int64 | float32 | float64
}

func init() {
	addNumCasts[int8]()
	addNumCasts[int16]()
	addNumCasts[int32]()
	addNumCasts[int64]()
	addNumCasts[float32]()
	addNumCasts[float64]()
}

func addNumCasts[F numeric]() {
	add := func(to arrow.DataType, k castKernel) {
		numCasts[castKey{arrow.GetDataType[F]().ID(), to.ID()}] = k
	}
	add(arrow.PrimitiveTypes.Int8, numCast[F, int8])
	add(arrow.PrimitiveTypes.Int16, numCast[F, int16])
	add(arrow.PrimitiveTypes.Int32, numCast[F, int32])
	add(arrow.PrimitiveTypes.Int64, numCast[F, int64])
	add(arrow.PrimitiveTypes.Float32, numCast[F, float32])
	add(arrow.PrimitiveTypes.Float64, numCast[F, float64])
}

func isFloat[T numeric]() bool {
	var z T
	switch any(z).(type) {
	case float32, float64:
		return true
	}
	return false
}

// numCast casts between numbers. To an integer it truncates toward zero
// (3.9 -> 3, -3.9 -> -3), as Flink and Java do; a value out of the target's
// range, or not finite, is an error where Flink would wrap around. To a
// float it rounds to the nearest.
func numCast[F, T numeric](a arrow.Array, b array.Builder, to *types.DataType, fail func(int, string) error) error {
	in := a.(arrow.TypedArray[F])
	put := b.(interface{ Append(T) }).Append
	var get func(int) (T, string)
	switch {
	case isFloat[T]():
		get = func(i int) (T, string) { return T(float64(in.Value(i))), "" }
	case isFloat[F]():
		lo, hi := types.IntRange(to.Kind)
		get = func(i int) (T, string) {
			v, why := truncFloat(float64(in.Value(i)))
			if why == "" && (v < lo || v > hi) {
				why = "out of range"
			}
			return T(v), why
		}
	default:
		lo, hi := types.IntRange(to.Kind)
		get = func(i int) (T, string) {
			v := int64(in.Value(i))
			if v < lo || v > hi {
				return 0, "out of range"
			}
			return T(v), ""
		}
	}
	return castEach(a, b, get, put, fail)
}

// truncFloat is v truncated toward zero as an int64, or why it has none.
func truncFloat(v float64) (int64, string) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "not a finite number"
	}
	v = math.Trunc(v)
	if v < -9.223372036854775808e18 || v >= 9.223372036854775808e18 {
		return 0, "out of range"
	}
	return int64(v), ""
}

func intAppender(b array.Builder) func(int64) {
	switch b := b.(type) {
	case *array.Int8Builder:
		return func(v int64) { b.Append(int8(v)) }
	case *array.Int16Builder:
		return func(v int64) { b.Append(int16(v)) }
	case *array.Int32Builder:
		return func(v int64) { b.Append(int32(v)) }
	case *array.Int64Builder:
		return b.Append
	}
	panic("query: intAppender of " + b.Type().String())
}

var (
	bigTen     = big.NewInt(10)
	pow10Cache [2*types.MaxDecimalPrecision + 2]*big.Int
)

func init() {
	p := big.NewInt(1)
	for i := range pow10Cache {
		pow10Cache[i] = new(big.Int).Set(p)
		p.Mul(p, bigTen)
	}
}

func pow10(n int) *big.Int {
	if n < len(pow10Cache) {
		return pow10Cache[n]
	}
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// castToInt casts the other kinds to an integer, with numCast's rules: a
// DECIMAL truncates toward zero, and a value out of the target's range is an
// error where Flink would wrap around.
func castToInt(b array.Builder, a arrow.Array, from, to *types.DataType, fail func(int, string) error) error {
	div := pow10(from.Scale)
	get := numberOf(a, from, func(d decimal128.Num) (int64, string) {
		q := new(big.Int).Quo(d.BigInt(), div)
		if !q.IsInt64() {
			return 0, "out of range"
		}
		return q.Int64(), ""
	}, func(s string) (int64, string) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return 0, "out of range"
			}
			return 0, "not an integer"
		}
		return v, ""
	})
	if get == nil {
		return Errorf(ErrUnsupported, "cannot cast %s to %s", from, to)
	}
	lo, hi := types.IntRange(to.Kind)
	inRange := func(i int) (int64, string) {
		v, why := get(i)
		if why == "" && (v < lo || v > hi) {
			why = "out of range"
		}
		return v, why
	}
	return castEach(a, b, inRange, intAppender(b), fail)
}

// numberOf reads a DECIMAL, BOOLEAN or character column as numbers for a
// cast: a DECIMAL's values through dec, a string's (trimmed) through str,
// TRUE as 1 and FALSE as 0, as Flink casts them. The second result says why
// a value does not cast. It is nil for the other kinds, which numCast casts.
func numberOf[N int64 | float64](a arrow.Array, from *types.DataType, dec func(decimal128.Num) (N, string), str func(string) (N, string)) func(int) (N, string) {
	switch {
	case from.Kind == types.Decimal:
		d := a.(*array.Decimal128)
		return func(i int) (N, string) { return dec(d.Value(i)) }
	case from.Kind == types.Boolean:
		r := a.(*array.Boolean)
		return func(i int) (N, string) {
			if r.Value(i) {
				return 1, ""
			}
			return 0, ""
		}
	case IsChar(from):
		s := a.(*array.String)
		return func(i int) (N, string) { return str(strings.TrimSpace(s.Value(i))) }
	}
	return nil
}

// castToFloat casts the other kinds to FLOAT or DOUBLE.
func castToFloat(b array.Builder, a arrow.Array, from *types.DataType, fail func(int, string) error) error {
	scale := int32(from.Scale)
	get := numberOf(a, from, func(d decimal128.Num) (float64, string) {
		// Through the decimal text, so that the float is the nearest to
		// the exact value.
		v, _ := strconv.ParseFloat(d.ToString(scale), 64)
		return v, ""
	}, func(s string) (float64, string) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return v, "" // +-Inf or 0, as Java's parseDouble
			}
			return 0, "not a number"
		}
		return v, ""
	})
	var put func(float64)
	switch b := b.(type) {
	case *array.Float32Builder:
		put = func(v float64) { b.Append(float32(v)) }
	case *array.Float64Builder:
		put = b.Append
	}
	return castEach(a, b, get, put, fail)
}

// rescale moves v from scale from to scale to, rounding half away from zero
// (Java's HALF_UP, which Flink uses) when digits are dropped.
func rescale(v *big.Int, from, to int) *big.Int {
	switch {
	case to == from:
		return v
	case to > from:
		return new(big.Int).Mul(v, pow10(to-from))
	}
	div := pow10(from - to)
	q, r := new(big.Int).QuoRem(v, div, new(big.Int))
	r.Abs(r).Lsh(r, 1)
	if r.Cmp(div) >= 0 {
		if v.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// fitsDecimal reports whether the unscaled v has at most p digits.
func fitsDecimal(v *big.Int, p int) bool {
	return new(big.Int).Abs(v).Cmp(pow10(p)) < 0
}

// castToDecimal casts to DECIMAL(p, s): integers, DECIMALs and BOOLEANs
// through their exact value, strings and floats through their decimal text
// (a float's shortest, as Java's BigDecimal.valueOf: 1.005 is 1.005, not
// 1.00499999...), read by decimal.Parse; digits below s round half up, as
// Flink rounds them.
func castToDecimal(b *array.Decimal128Builder, a arrow.Array, from, to *types.DataType, fail func(int, string) error) error {
	var get func(int) (decimal128.Num, string)
	exact := func(v *big.Int, scale int) (decimal128.Num, string) {
		v = rescale(v, scale, to.Scale)
		if !fitsDecimal(v, to.Precision) {
			return decimal128.Num{}, "out of range"
		}
		return decimal128.FromBigInt(v), ""
	}
	text := func(s string) (decimal128.Num, string) {
		switch v, st := decimal.Parse(s, to.Precision, to.Scale); st {
		case decimal.Syntax:
			return decimal128.Num{}, "not a number"
		case decimal.Range:
			return decimal128.Num{}, "out of range"
		default:
			return v, ""
		}
	}
	switch {
	case isInt(from):
		r := render.IntReader(a)
		get = func(i int) (decimal128.Num, string) { return exact(big.NewInt(r(i)), 0) }
	case from.Kind == types.Decimal:
		d := a.(*array.Decimal128)
		get = func(i int) (decimal128.Num, string) { return exact(d.Value(i).BigInt(), from.Scale) }
	case isApprox(from):
		r := render.FloatReader(a)
		bits := 64
		if from.Kind == types.Float {
			bits = 32
		}
		get = func(i int) (decimal128.Num, string) {
			f := r(i)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return decimal128.Num{}, "not a finite number"
			}
			return text(strconv.FormatFloat(f, 'e', -1, bits))
		}
	case from.Kind == types.Boolean:
		r := a.(*array.Boolean)
		get = func(i int) (decimal128.Num, string) {
			if r.Value(i) {
				return exact(big.NewInt(1), 0)
			}
			return decimal128.Num{}, ""
		}
	case IsChar(from):
		str := a.(*array.String)
		get = func(i int) (decimal128.Num, string) { return text(strings.TrimSpace(str.Value(i))) }
	}
	return castEach(a, b, get, b.Append, fail)
}

func castToBool(b *array.BooleanBuilder, a arrow.Array, from *types.DataType, fail func(int, string) error) error {
	var get func(int) (bool, string)
	switch {
	case from.Kind == types.Boolean:
		r := a.(*array.Boolean)
		get = func(i int) (bool, string) { return r.Value(i), "" }
	case isInt(from):
		r := render.IntReader(a)
		get = func(i int) (bool, string) { return r(i) != 0, "" }
	case isApprox(from):
		r := render.FloatReader(a)
		get = func(i int) (bool, string) { return r(i) != 0, "" }
	case from.Kind == types.Decimal:
		d := a.(*array.Decimal128)
		get = func(i int) (bool, string) { return d.Value(i).Sign() != 0, "" }
	case IsChar(from):
		s := a.(*array.String)
		get = func(i int) (bool, string) {
			switch strings.ToLower(strings.TrimSpace(s.Value(i))) {
			case "true", "t", "yes", "y", "1":
				return true, ""
			case "false", "f", "no", "n", "0":
				return false, ""
			}
			return false, "not a boolean"
		}
	}
	return castEach(a, b, get, b.Append, fail)
}

// castToString renders values as render.CastString does (bytes as their
// UTF-8 text); VARCHAR(n) keeps the first n characters and CHAR(n) pads with
// spaces to n, as Flink does.
func castToString(b *array.StringBuilder, a arrow.Array, from, to *types.DataType) error {
	f := render.CastString(a, from)
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		s := f(i)
		if to.Length != types.MaxLength && utf8.RuneCountInString(s) > to.Length {
			s = string([]rune(s)[:to.Length])
		}
		if to.Kind == types.Char {
			if k := utf8.RuneCountInString(s); k < to.Length {
				s += strings.Repeat(" ", to.Length-k)
			}
		}
		b.Append(s)
	}
	return nil
}

// castToBinary keeps the first n bytes for VARBINARY(n) and pads BINARY(n)
// with zero bytes, as Flink does.
func castToBinary(b array.Builder, a arrow.Array, to *types.DataType) error {
	get := render.BytesReader(a)
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := get(i)
		if to.Length != types.MaxLength && len(v) > to.Length {
			v = v[:to.Length]
		}
		switch b := b.(type) {
		case *array.FixedSizeBinaryBuilder:
			if len(v) < to.Length {
				v = append(append([]byte(nil), v...), make([]byte, to.Length-len(v))...)
			}
			b.Append(v)
		case *array.BinaryBuilder:
			b.Append(v)
		}
	}
	return nil
}

// parseStrings reads a CHAR or VARCHAR column with parse, spaces around
// the text ignored, as Flink does; text parse refuses is why.
func parseStrings[T any](a arrow.Array, parse func(string) (T, bool), why string) func(int) (T, string) {
	s := a.(*array.String)
	return func(i int) (T, string) {
		v, ok := parse(strings.TrimSpace(s.Value(i)))
		if !ok {
			var zero T
			return zero, why
		}
		return v, ""
	}
}

func castToDate(b *array.Date32Builder, a arrow.Array, from *types.DataType, fail func(int, string) error) error {
	var get func(int) (int64, string)
	switch {
	case from.Kind == types.Date:
		d := a.(*array.Date32)
		get = func(i int) (int64, string) { return int64(d.Value(i)), "" }
	case isTimestamp(from):
		r := render.InstantReader(a)
		get = func(i int) (int64, string) {
			days, _ := calendar.FloorDiv(r(i).Sec, calendar.SecsPerDay)
			return days, ""
		}
	case IsChar(from):
		get = parseStrings(a, parseDate, "not a date (yyyy-mm-dd)")
	}
	inRange := func(i int) (arrow.Date32, string) {
		v, why := get(i)
		if why == "" && (v < math.MinInt32 || v > math.MaxInt32) {
			why = "out of range"
		}
		return arrow.Date32(v), why
	}
	return castEach(a, b, inRange, b.Append, fail)
}

func castToTime(b array.Builder, a arrow.Array, from, to *types.DataType, fail func(int, string) error) error {
	var get func(int) (int64, string)
	switch {
	case from.Kind == types.Time:
		r := render.TimeReader(a)
		get = func(i int) (int64, string) { return r(i), "" }
	case isTimestamp(from):
		r := render.InstantReader(a)
		get = func(i int) (int64, string) {
			t := r(i)
			_, s := calendar.FloorDiv(t.Sec, calendar.SecsPerDay)
			return s*calendar.NanosPerSec + t.Nsec, ""
		}
	case IsChar(from):
		get = parseStrings(a, parseTime, "not a time (hh:mm:ss)")
	}
	var put func(int64)
	switch b := b.(type) {
	case *array.Time32Builder:
		div := int64(b.Type().(*arrow.Time32Type).Unit.Multiplier())
		put = func(v int64) { b.Append(arrow.Time32(calendar.Truncate(v, to.Precision) / div)) }
	case *array.Time64Builder:
		div := int64(b.Type().(*arrow.Time64Type).Unit.Multiplier())
		put = func(v int64) { b.Append(arrow.Time64(calendar.Truncate(v, to.Precision) / div)) }
	}
	return castEach(a, b, get, put, fail)
}

func castToTimestamp(b *array.TimestampBuilder, a arrow.Array, from, to *types.DataType, fail func(int, string) error) error {
	var get func(int) (calendar.Instant, string)
	switch {
	case from.Kind == types.Date || isTimestamp(from):
		r := render.InstantReader(a)
		get = func(i int) (calendar.Instant, string) { return r(i), "" }
	case IsChar(from):
		get = parseStrings(a, parseTimestamp, "not a timestamp (yyyy-mm-dd hh:mm:ss[.fffffffff])")
	}
	unit := int64(b.Type().(*arrow.TimestampType).Unit.Multiplier())
	inRange := func(i int) (arrow.Timestamp, string) {
		t, why := get(i)
		if why != "" {
			return 0, why
		}
		v, ok := calendar.ToUnit(t.Sec, calendar.Truncate(t.Nsec, to.Precision), unit)
		if !ok {
			return 0, "out of range"
		}
		return arrow.Timestamp(v), ""
	}
	return castEach(a, b, inRange, b.Append, fail)
}

// parseDate reads yyyy-mm-dd, as Flink's CAST does: a year of one to four
// digits, months and days of one or two, into days since the epoch.
func parseDate(s string) (int64, bool) {
	days, rest, ok := calendar.ParseDate(s, calendar.Loose)
	return days, ok && rest == ""
}

// parseTime reads hh:mm[:ss[.fffffffff]] (fields of one or two digits)
// into nanoseconds since midnight.
func parseTime(s string) (int64, bool) {
	nanos, rest, ok := calendar.ParseTime(s, calendar.Loose)
	return nanos, ok && rest == ""
}

// parseTimestamp reads yyyy-mm-dd[( |T)hh:mm[:ss[.fffffffff]]], the forms
// Flink's CAST accepts, as a wall-clock time in UTC.
func parseTimestamp(s string) (calendar.Instant, bool) {
	days, rest, ok := calendar.ParseDate(s, calendar.Loose)
	if !ok {
		return calendar.Instant{}, false
	}
	var nanos int64
	if rest != "" {
		if rest[0] != ' ' && rest[0] != 'T' {
			return calendar.Instant{}, false
		}
		if clock := strings.TrimLeft(rest[1:], " "); clock != "" {
			if nanos, ok = parseTime(clock); !ok {
				return calendar.Instant{}, false
			}
		}
	}
	return calendar.Instant{Sec: days*calendar.SecsPerDay + nanos/calendar.NanosPerSec, Nsec: nanos % calendar.NanosPerSec}, true
}

// fractionDigits counts the digits after the point of a time literal, which
// is the precision Flink gives TIME '...' and TIMESTAMP '...'.
func fractionDigits(s string) int {
	k := strings.LastIndex(s, ".")
	if k < 0 || !strings.Contains(s, ":") {
		return 0
	}
	return min(len(strings.TrimSpace(s[k+1:])), types.MaxTimePrecision)
}
