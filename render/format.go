package render

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/types"
)

// Formatter returns a function that renders the values of col (whose type is
// t) as Flink renders them: DECIMAL with all its scale digits, DOUBLE as Java
// does (1.0, 1.0E10), BOOLEAN as TRUE/FALSE, TIMESTAMP(3) as
// 2024-01-02 03:04:05.678 (TIMESTAMP_LTZ in UTC, kshare's session time zone),
// BYTES as x'0a1b', ARRAY as [1, 2], MAP as {k=v}, ROW as (1, a). ok is false
// for a NULL. The function reads col; it is valid while col is.
func Formatter(col arrow.Array, t *types.DataType) func(row int) (s string, ok bool) {
	f := formatter(col, t, true)
	return func(i int) (string, bool) {
		if col.IsNull(i) {
			return "", false
		}
		return f(i), true
	}
}

// CastString returns a function that renders the non-null values of col
// (whose type is t) as CAST(col AS STRING) does: as Formatter, but a
// BINARY or VARBINARY value as the text its bytes are, not as x'..'.
func CastString(col arrow.Array, t *types.DataType) func(row int) string {
	return formatter(col, t, false)
}

// formatter renders non-null values. display selects how bytes look: x'..'
// for people, the UTF-8 text itself for CAST(bytes AS STRING).
func formatter(a arrow.Array, t *types.DataType, display bool) func(int) string {
	switch t.Kind {
	case types.Char, types.Varchar:
		s := a.(*array.String)
		return s.Value
	case types.Boolean:
		b := a.(*array.Boolean)
		return func(i int) string {
			if b.Value(i) {
				return "TRUE"
			}
			return "FALSE"
		}
	case types.Binary, types.Varbinary:
		get := BytesReader(a)
		if display {
			return func(i int) string { return "x'" + hex.EncodeToString(get(i)) + "'" }
		}
		return func(i int) string { return string(get(i)) }
	case types.Decimal:
		d := a.(*array.Decimal128)
		scale := int32(t.Scale)
		return func(i int) string { return decimalString(d.Value(i), scale) }
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		get := IntReader(a)
		return func(i int) string { return strconv.FormatInt(get(i), 10) }
	case types.Float:
		f := a.(*array.Float32)
		return func(i int) string { return javaFloat(float64(f.Value(i)), 32) }
	case types.Double:
		f := a.(*array.Float64)
		return func(i int) string { return javaFloat(f.Value(i), 64) }
	case types.Date:
		d := a.(*array.Date32)
		return func(i int) string { return formatDate(int64(d.Value(i))) }
	case types.Time:
		get := TimeReader(a)
		p := t.Precision
		return func(i int) string { return formatTime(get(i), p) }
	case types.Timestamp, types.TimestampLTZ:
		get := InstantReader(a)
		p := t.Precision
		// The last value's text is kept: a window's rows repeat their
		// window_start and window_end, and formatting a time is most of
		// what writing such a row costs.
		var last calendar.Instant
		var text string
		return func(i int) string {
			if v := get(i); v != last || text == "" {
				last, text = v, formatTimestamp(v, p)
			}
			return text
		}
	case types.Array:
		l := a.(*array.List)
		elem := Formatter(l.ListValues(), t.Elem)
		item := func(b *strings.Builder, _, j int) { b.WriteString(OrNull(elem(j))) }
		return func(i int) string {
			start, end := l.ValueOffsets(i)
			return joinItems('[', ']', i, int(start), int(end), item)
		}
	case types.Map:
		m := a.(*array.Map)
		keys := Formatter(m.Keys(), t.Key)
		vals := Formatter(m.Items(), t.Value)
		item := func(b *strings.Builder, _, j int) {
			b.WriteString(OrNull(keys(j)))
			b.WriteByte('=')
			b.WriteString(OrNull(vals(j)))
		}
		return func(i int) string {
			start, end := m.ValueOffsets(i)
			return joinItems('{', '}', i, int(start), int(end), item)
		}
	case types.Row:
		s := a.(*array.Struct)
		fields := make([]func(int) (string, bool), len(t.Fields))
		for k, f := range t.Fields {
			fields[k] = Formatter(s.Field(k), f.Type)
		}
		item := func(b *strings.Builder, i, k int) { b.WriteString(OrNull(fields[k](i))) }
		return func(i int) string { return joinItems('(', ')', i, 0, len(fields), item) }
	}
	return func(int) string { return "?" }
}

// joinItems renders the items from..to-1 of row i between open and close,
// separated by ", ", as Flink prints ARRAY, MAP and ROW values.
func joinItems(open, close byte, i, from, to int, item func(b *strings.Builder, i, j int)) string {
	var b strings.Builder
	b.WriteByte(open)
	for j := from; j < to; j++ {
		if j > from {
			b.WriteString(", ")
		}
		item(&b, i, j)
	}
	b.WriteByte(close)
	return b.String()
}

// OrNull is a Formatter's text of a value, NULL for a NULL, as Flink
// prints it.
func OrNull(s string, ok bool) string {
	if !ok {
		return "NULL"
	}
	return s
}

// javaFloat renders v as Java's Double.toString (bits 64) or Float.toString
// (bits 32) do, which is what Flink prints: the shortest digits that read
// back as v, plain between 10^-3 and 10^7 and with at least one fractional
// digit (1.0, 0.001), otherwise in scientific notation (1.0E7, 1.5E-4).
func javaFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	case v == 0:
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, bits) // d.ddde+xx or d.ddde-xx
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	mant, expPart, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	abs := math.Abs(v)
	if abs >= 1e-3 && abs < 1e7 {
		if exp >= 0 {
			intLen := exp + 1
			for len(digits) < intLen {
				digits += "0"
			}
			b.WriteString(digits[:intLen])
			b.WriteByte('.')
			if frac := digits[intLen:]; frac != "" {
				b.WriteString(frac)
			} else {
				b.WriteByte('0')
			}
		} else {
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -exp-1))
			b.WriteString(digits)
		}
		return b.String()
	}
	b.WriteByte(digits[0])
	b.WriteByte('.')
	if len(digits) > 1 {
		b.WriteString(digits[1:])
	} else {
		b.WriteByte('0')
	}
	b.WriteByte('E')
	b.WriteString(strconv.Itoa(exp))
	return b.String()
}

// formatDate renders a DATE, days since 1970-01-01, as yyyy-MM-dd.
func formatDate(days int64) string {
	var buf [16]byte
	return string(calendar.AppendDate(buf[:0], days))
}

// formatTime renders a TIME of nanos since midnight with p fractional
// digits; a value beyond a day (no cast or format makes one) wraps around
// as a time of day does.
func formatTime(nanos int64, p int) string {
	var buf [24]byte
	_, nanos = calendar.FloorDiv(nanos, calendar.NanosPerDay)
	return string(calendar.AppendClock(buf[:0], nanos, p))
}

// formatTimestamp renders t as yyyy-MM-dd HH:mm:ss with p fractional
// digits.
func formatTimestamp(t calendar.Instant, p int) string {
	var buf [40]byte
	days, sec := calendar.FloorDiv(t.Sec, calendar.SecsPerDay)
	b := append(calendar.AppendDate(buf[:0], days), ' ')
	return string(calendar.AppendClock(b, sec*calendar.NanosPerSec+t.Nsec, p))
}

// Readers: a function per array that yields its values in one canonical Go
// type per kind of type, so that casts and kernels are written once per kind
// and not once per Arrow type.

// IntReader yields the values of an array of an integer type, TINYINT to
// BIGINT, as int64s; query's casts and kernels read them with it too. Any
// other array is the caller's programming error and panics.
func IntReader(a arrow.Array) func(int) int64 {
	switch a := a.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int16:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int32:
		return func(i int) int64 { return int64(a.Value(i)) }
	case *array.Int64:
		return a.Value
	}
	panic("render: IntReader of " + a.DataType().String())
}

// FloatReader is IntReader for FLOAT and DOUBLE, as float64s.
func FloatReader(a arrow.Array) func(int) float64 {
	switch a := a.(type) {
	case *array.Float32:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Float64:
		return a.Value
	}
	panic("render: FloatReader of " + a.DataType().String())
}

// BytesReader is IntReader for BINARY, VARBINARY and the character types,
// as their bytes.
func BytesReader(a arrow.Array) func(int) []byte {
	switch a := a.(type) {
	case *array.Binary:
		return a.Value
	case *array.FixedSizeBinary:
		return a.Value
	case *array.String:
		return func(i int) []byte { return []byte(a.Value(i)) }
	}
	panic("render: BytesReader of " + a.DataType().String())
}

// TimeReader is IntReader for TIME, as nanoseconds since midnight.
func TimeReader(a arrow.Array) func(int) int64 {
	switch a := a.(type) {
	case *array.Time32:
		mul := int64(a.DataType().(*arrow.Time32Type).Unit.Multiplier())
		return func(i int) int64 { return int64(a.Value(i)) * mul }
	case *array.Time64:
		mul := int64(a.DataType().(*arrow.Time64Type).Unit.Multiplier())
		return func(i int) int64 { return int64(a.Value(i)) * mul }
	}
	panic("render: TimeReader of " + a.DataType().String())
}

// InstantReader is IntReader for TIMESTAMP, TIMESTAMP_LTZ and DATE, as
// the instant of a timestamp (a TIMESTAMP's wall clock read as UTC) or the
// midnight that starts a DATE.
func InstantReader(a arrow.Array) func(int) calendar.Instant {
	switch a := a.(type) {
	case *array.Timestamp:
		mul := int64(a.DataType().(*arrow.TimestampType).Unit.Multiplier())
		per := calendar.NanosPerSec / mul
		return func(i int) calendar.Instant {
			sec, rem := calendar.FloorDiv(int64(a.Value(i)), per)
			return calendar.Instant{Sec: sec, Nsec: rem * mul}
		}
	case *array.Date32:
		return func(i int) calendar.Instant { return calendar.Instant{Sec: int64(a.Value(i)) * calendar.SecsPerDay} }
	}
	panic("render: InstantReader of " + a.DataType().String())
}

// decimalString renders a DECIMAL with all its scale digits, exactly.
func decimalString(n decimal128.Num, scale int32) string {
	var buf [48]byte
	return string(decimal.Append(buf[:0], n, scale, true))
}
