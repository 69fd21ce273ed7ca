package formattest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// PrintBatch writes a batch as text for golden files: a header of column
// names, then one line per row, values separated by " | ".
func PrintBatch(b *strings.Builder, rec arrow.RecordBatch) {
	if rec.NumCols() == 0 {
		// Blank lines would end a golden case's output.
		fmt.Fprintf(b, "(no columns)\n")
		for range rec.NumRows() {
			b.WriteString("()\n")
		}
		return
	}
	names := make([]string, rec.NumCols())
	for i, f := range rec.Schema().Fields() {
		names[i] = f.Name
	}
	b.WriteString(strings.Join(names, " | "))
	b.WriteByte('\n')
	for r := 0; r < int(rec.NumRows()); r++ {
		for c := 0; c < int(rec.NumCols()); c++ {
			if c > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(Value(rec.Column(c), r))
		}
		b.WriteByte('\n')
	}
}

// Value renders element i of arr, ASCII only: strings Go-quoted, bytes as
// x'..', decimals at their scale, temporal values in SQL form with a Z for
// those in UTC, lists [..], maps map[k: v], structs {name: v}.
func Value(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "null"
	}
	switch a := arr.(type) {
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.String:
		return strconv.QuoteToASCII(a.Value(i))
	case *array.Binary:
		return fmt.Sprintf("x'%x'", a.Value(i))
	case *array.FixedSizeBinary:
		return fmt.Sprintf("x'%x'", a.Value(i))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Date32:
		return a.Value(i).ToTime().Format("2006-01-02")
	case *array.Time32:
		u := a.DataType().(*arrow.Time32Type).Unit
		return clock(time.Unix(0, int64(a.Value(i))*int64(u.Multiplier())).UTC(), u)
	case *array.Time64:
		u := a.DataType().(*arrow.Time64Type).Unit
		return clock(time.Unix(0, int64(a.Value(i))*int64(u.Multiplier())).UTC(), u)
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		t := timeOf(int64(a.Value(i)), tt.Unit)
		s := t.Format("2006-01-02 ") + clock(t, tt.Unit)
		if tt.TimeZone != "" {
			s += "Z"
		}
		return s
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			parts = append(parts, Value(keys, int(j))+": "+Value(items, int(j)))
		}
		return "map[" + strings.Join(parts, ", ") + "]"
	case *array.List:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			parts = append(parts, Value(vals, int(j)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		parts := make([]string, a.NumField())
		for f := range parts {
			parts[f] = st.Field(f).Name + ": " + Value(a.Field(f), i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprintf("<%s %s>", arr.DataType(), arr.ValueStr(i))
}

// timeOf is v units after the epoch, split as time.UnixMilli splits it so
// that no unit overflows int64 nanoseconds.
func timeOf(v int64, u arrow.TimeUnit) time.Time {
	per := int64(time.Second / u.Multiplier())
	return time.Unix(v/per, v%per*int64(u.Multiplier())).UTC()
}

// clock prints the time of day with as many fractional digits as the unit
// holds, so that the golden output shows the stored resolution.
func clock(t time.Time, u arrow.TimeUnit) string {
	switch u {
	case arrow.Millisecond:
		return t.Format("15:04:05.000")
	case arrow.Microsecond:
		return t.Format("15:04:05.000000")
	case arrow.Nanosecond:
		return t.Format("15:04:05.000000000")
	}
	return t.Format("15:04:05")
}
