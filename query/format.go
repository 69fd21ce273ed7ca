package query

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/table"
)

// Formatter returns a function that renders the values of col (whose type is
// t) as Flink renders them: DECIMAL with all its scale digits, DOUBLE as Java
// does (1.0, 1.0E10), BOOLEAN as TRUE/FALSE, TIMESTAMP(3) as
// 2024-01-02 03:04:05.678 (TIMESTAMP_LTZ in UTC, kshare's session time zone),
// BYTES as x'0a1b', ARRAY as [1, 2], MAP as {k=v}, ROW as (1, a). ok is false
// for a NULL. The function reads col; it is valid while col is.
func Formatter(col arrow.Array, t *table.DataType) func(row int) (s string, ok bool) {
	f := formatter(col, t, true)
	return func(i int) (string, bool) {
		if col.IsNull(i) {
			return "", false
		}
		return f(i), true
	}
}

// formatter renders non-null values. display selects how bytes look: x'..'
// for people, the UTF-8 text itself for CAST(bytes AS STRING).
func formatter(a arrow.Array, t *table.DataType, display bool) func(int) string {
	switch t.Kind {
	case table.Char, table.Varchar:
		s := a.(*array.String)
		return s.Value
	case table.Boolean:
		b := a.(*array.Boolean)
		return func(i int) string {
			if b.Value(i) {
				return "TRUE"
			}
			return "FALSE"
		}
	case table.Binary, table.Varbinary:
		get := bytesReader(a)
		if display {
			return func(i int) string { return "x'" + hex.EncodeToString(get(i)) + "'" }
		}
		return func(i int) string { return string(get(i)) }
	case table.Decimal:
		d := a.(*array.Decimal128)
		scale := int32(t.Scale)
		return func(i int) string { return decimalString(d.Value(i), scale) }
	case table.TinyInt, table.SmallInt, table.Int, table.BigInt:
		get := IntReader(a)
		return func(i int) string { return strconv.FormatInt(get(i), 10) }
	case table.Float:
		f := a.(*array.Float32)
		return func(i int) string { return javaFloat(float64(f.Value(i)), 32) }
	case table.Double:
		f := a.(*array.Float64)
		return func(i int) string { return javaFloat(f.Value(i), 64) }
	case table.Date:
		d := a.(*array.Date32)
		return func(i int) string { return formatDate(int64(d.Value(i))) }
	case table.Time:
		get := timeReader(a)
		p := t.Precision
		return func(i int) string { return formatTime(get(i), p) }
	case table.Timestamp, table.TimestampLTZ:
		get := instantReader(a)
		p := t.Precision
		// The last value's text is kept: a window's rows repeat their
		// window_start and window_end, and formatting a time is most of
		// what writing such a row costs.
		var last instant
		var text string
		return func(i int) string {
			if v := get(i); v != last || text == "" {
				last, text = v, formatTimestamp(v, p)
			}
			return text
		}
	case table.Array:
		l := a.(*array.List)
		elem := Formatter(l.ListValues(), t.Elem)
		item := func(b *strings.Builder, _, j int) { b.WriteString(orNull(elem(j))) }
		return func(i int) string {
			start, end := l.ValueOffsets(i)
			return joinItems('[', ']', i, int(start), int(end), item)
		}
	case table.Map:
		m := a.(*array.Map)
		keys := Formatter(m.Keys(), t.Key)
		vals := Formatter(m.Items(), t.Value)
		item := func(b *strings.Builder, _, j int) {
			b.WriteString(orNull(keys(j)))
			b.WriteByte('=')
			b.WriteString(orNull(vals(j)))
		}
		return func(i int) string {
			start, end := m.ValueOffsets(i)
			return joinItems('{', '}', i, int(start), int(end), item)
		}
	case table.Row:
		s := a.(*array.Struct)
		fields := make([]func(int) (string, bool), len(t.Fields))
		for k, f := range t.Fields {
			fields[k] = Formatter(s.Field(k), f.Type)
		}
		item := func(b *strings.Builder, i, k int) { b.WriteString(orNull(fields[k](i))) }
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

func orNull(s string, ok bool) string {
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

const (
	nanosPerSec = int64(time.Second)
	secsPerDay  = int64(24 * 60 * 60)
	nanosPerDay = secsPerDay * nanosPerSec
)

// instant is a point on the UTC time line: seconds since the epoch and the
// nanoseconds within that second (0 <= nsec < 1e9). It holds every value of
// every timestamp unit, which a single int64 of nanoseconds would not.
type instant struct {
	sec  int64
	nsec int64
}

func formatDate(days int64) string {
	return time.Unix(days*secsPerDay, 0).UTC().Format("2006-01-02")
}

// fraction renders the first p digits of nsec, with a leading dot; nothing
// for p = 0.
func fraction(nsec int64, p int) string {
	if p == 0 {
		return ""
	}
	s := strconv.FormatInt(nsec+nanosPerSec, 10)[1:] // 9 digits, zero padded
	return "." + s[:p]
}

func formatTime(nanos int64, p int) string {
	sec := nanos / nanosPerSec
	return time.Unix(sec, 0).UTC().Format("15:04:05") + fraction(nanos%nanosPerSec, p)
}

func formatTimestamp(t instant, p int) string {
	return time.Unix(t.sec, 0).UTC().Format("2006-01-02 15:04:05") + fraction(t.nsec, p)
}

// Readers: a function per array that yields its values in one canonical Go
// type per kind of type, so that casts and kernels are written once per kind
// and not once per Arrow type.

// IntReader yields the values of an array of an integer type, TINYINT to
// BIGINT, as int64s; the shell's JSON output reads them with it too. Any
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
	panic("query: IntReader of " + a.DataType().String())
}

// FloatReader is IntReader for FLOAT and DOUBLE, as float64s.
func FloatReader(a arrow.Array) func(int) float64 {
	switch a := a.(type) {
	case *array.Float32:
		return func(i int) float64 { return float64(a.Value(i)) }
	case *array.Float64:
		return a.Value
	}
	panic("query: FloatReader of " + a.DataType().String())
}

func bytesReader(a arrow.Array) func(int) []byte {
	switch a := a.(type) {
	case *array.Binary:
		return a.Value
	case *array.FixedSizeBinary:
		return a.Value
	case *array.String:
		return func(i int) []byte { return []byte(a.Value(i)) }
	}
	panic("query: bytesReader of " + a.DataType().String())
}

// timeReader yields nanoseconds since midnight.
func timeReader(a arrow.Array) func(int) int64 {
	switch a := a.(type) {
	case *array.Time32:
		mul := unitNanos(a.DataType().(*arrow.Time32Type).Unit)
		return func(i int) int64 { return int64(a.Value(i)) * mul }
	case *array.Time64:
		mul := unitNanos(a.DataType().(*arrow.Time64Type).Unit)
		return func(i int) int64 { return int64(a.Value(i)) * mul }
	}
	panic("query: timeReader of " + a.DataType().String())
}

// instantReader yields the instant of a timestamp (a TIMESTAMP's wall clock
// read as UTC) or the midnight that starts a DATE.
func instantReader(a arrow.Array) func(int) instant {
	switch a := a.(type) {
	case *array.Timestamp:
		per := nanosPerSec / unitNanos(a.DataType().(*arrow.TimestampType).Unit)
		mul := unitNanos(a.DataType().(*arrow.TimestampType).Unit)
		return func(i int) instant {
			v := int64(a.Value(i))
			sec, rem := floorDiv(v, per)
			return instant{sec: sec, nsec: rem * mul}
		}
	case *array.Date32:
		return func(i int) instant { return instant{sec: int64(a.Value(i)) * secsPerDay} }
	}
	panic("query: instantReader of " + a.DataType().String())
}

func unitNanos(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return nanosPerSec
	case arrow.Millisecond:
		return int64(time.Millisecond)
	case arrow.Microsecond:
		return int64(time.Microsecond)
	}
	return 1
}

// floorDiv divides rounding toward negative infinity, so that instants
// before 1970 keep a non-negative fraction.
func floorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// decimalString is decimal128.Num.ToString without math/big for the values
// that fit in an int64 (every DECIMAL(p <= 18) and most others): formatting
// through big.Int cost most of the shell's allocations per CSV row.
func decimalString(n decimal128.Num, scale int32) string {
	hi, lo := n.HighBits(), n.LowBits()
	if !(hi == 0 && lo>>63 == 0) && !(hi == -1 && lo>>63 == 1) || scale < 0 || scale > 38 {
		return n.ToString(scale)
	}
	v := int64(lo)
	neg := v < 0
	u := uint64(v)
	if neg {
		u = -u
	}
	var buf [64]byte
	digits := strconv.AppendUint(buf[:0], u, 10)
	out := make([]byte, 0, len(digits)+int(scale)+3)
	if neg {
		out = append(out, '-')
	}
	if scale == 0 {
		return string(append(out, digits...))
	}
	if pad := int(scale) + 1 - len(digits); pad > 0 {
		out = append(out, "0."...)
		for ; pad > 1; pad-- {
			out = append(out, '0')
		}
		return string(append(out, digits...))
	}
	cut := len(digits) - int(scale)
	out = append(out, digits[:cut]...)
	out = append(out, '.')
	return string(append(out, digits[cut:]...))
}
