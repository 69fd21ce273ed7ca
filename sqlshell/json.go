package sqlshell

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// Why an encoder of our own rather than arrow-go's array.RecordToJSON: that
// one writes DECIMAL as a quoted string and timestamps in Go's layout, and it
// knows only the Arrow type, not the Flink type (TIMESTAMP vs TIMESTAMP_LTZ,
// the scale to print). Here each value becomes the JSON a user of the table
// expects:
//
//	BOOLEAN                    true / false
//	TINYINT .. BIGINT          a number
//	FLOAT, DOUBLE              a number; NaN and the infinities, which JSON
//	                           has no number for, as the strings "NaN",
//	                           "Infinity", "-Infinity"
//	DECIMAL                    a number written exactly, every scale digit
//	                           kept (12.50), never through a float
//	CHAR, VARCHAR              a string
//	BINARY, VARBINARY          a base64 string, as Flink's JSON format does
//	DATE, TIME, TIMESTAMP(_LTZ) a string, as the table output shows it
//	ARRAY                      an array
//	MAP                        an object; keys that are not strings are
//	                           rendered as text
//	ROW                        an object of the row's fields
//	NULL                       null

// jsonRow renders the rows of one batch as JSON objects.
type jsonRow struct {
	keys []string // `"name":`, quoted once
	vals []func(b []byte, row int) []byte
}

func newJSONRow(cols []table.Column, rec arrow.RecordBatch) *jsonRow {
	r := &jsonRow{keys: make([]string, len(cols)), vals: make([]func([]byte, int) []byte, len(cols))}
	for k, c := range cols {
		r.keys[k] = string(appendJSONString(nil, c.Name)) + ":"
		r.vals[k] = jsonValue(rec.Column(k), c.Type)
	}
	return r
}

// append adds row i as one object, without a newline.
func (r *jsonRow) append(b []byte, i int) []byte {
	b = append(b, '{')
	for k := range r.keys {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, r.keys[k]...)
		b = r.vals[k](b, i)
	}
	return append(b, '}')
}

// jsonValue returns an appender of a's values, NULL included.
func jsonValue(a arrow.Array, t *table.DataType) func([]byte, int) []byte {
	f := jsonNonNull(a, t)
	return func(b []byte, i int) []byte {
		if a.IsNull(i) {
			return append(b, "null"...)
		}
		return f(b, i)
	}
}

func jsonNonNull(a arrow.Array, t *table.DataType) func([]byte, int) []byte {
	switch t.Kind {
	case table.Boolean:
		v := a.(*array.Boolean)
		return func(b []byte, i int) []byte { return strconv.AppendBool(b, v.Value(i)) }
	case table.TinyInt, table.SmallInt, table.Int, table.BigInt:
		get := intValue(a)
		if get == nil {
			break
		}
		return func(b []byte, i int) []byte { return strconv.AppendInt(b, get(i), 10) }
	case table.Float, table.Double:
		bits := 64
		var get func(int) float64
		switch v := a.(type) {
		case *array.Float32:
			bits, get = 32, func(i int) float64 { return float64(v.Value(i)) }
		case *array.Float64:
			get = v.Value
		default:
			return textValue(a, t)
		}
		return func(b []byte, i int) []byte {
			f := get(i)
			switch {
			case math.IsNaN(f):
				return append(b, `"NaN"`...)
			case math.IsInf(f, 1):
				return append(b, `"Infinity"`...)
			case math.IsInf(f, -1):
				return append(b, `"-Infinity"`...)
			}
			return strconv.AppendFloat(b, f, 'g', -1, bits)
		}
	case table.Decimal:
		// Formatter writes the decimal's exact digits (-12.50), which
		// is valid JSON number syntax as it stands.
		f := query.Formatter(a, t)
		return func(b []byte, i int) []byte {
			s, _ := f(i)
			return append(b, s...)
		}
	case table.Binary, table.Varbinary:
		var get func(int) []byte
		switch v := a.(type) {
		case *array.Binary:
			get = v.Value
		case *array.FixedSizeBinary:
			get = v.Value
		default:
			return textValue(a, t)
		}
		return func(b []byte, i int) []byte {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, get(i))
			return append(b, '"')
		}
	case table.Array:
		l, ok := a.(*array.List)
		if !ok {
			break
		}
		elem := jsonValue(l.ListValues(), t.Elem)
		return func(b []byte, i int) []byte {
			start, end := l.ValueOffsets(i)
			b = append(b, '[')
			for j := start; j < end; j++ {
				if j > start {
					b = append(b, ',')
				}
				b = elem(b, int(j))
			}
			return append(b, ']')
		}
	case table.Map:
		m, ok := a.(*array.Map)
		if !ok {
			break
		}
		var key func([]byte, int) []byte
		if t.Key.Kind == table.Char || t.Key.Kind == table.Varchar {
			key = jsonValue(m.Keys(), t.Key)
		} else {
			// A JSON object's keys are strings: show other keys as the
			// table output does.
			kf := query.Formatter(m.Keys(), t.Key)
			key = func(b []byte, j int) []byte {
				s, ok := kf(j)
				if !ok {
					s = "NULL"
				}
				return appendJSONString(b, s)
			}
		}
		val := jsonValue(m.Items(), t.Value)
		return func(b []byte, i int) []byte {
			start, end := m.ValueOffsets(i)
			b = append(b, '{')
			for j := start; j < end; j++ {
				if j > start {
					b = append(b, ',')
				}
				b = key(b, int(j))
				b = append(b, ':')
				b = val(b, int(j))
			}
			return append(b, '}')
		}
	case table.Row:
		s, ok := a.(*array.Struct)
		if !ok || s.NumField() != len(t.Fields) {
			break
		}
		keys := make([]string, len(t.Fields))
		vals := make([]func([]byte, int) []byte, len(t.Fields))
		for k, f := range t.Fields {
			keys[k] = string(appendJSONString(nil, f.Name)) + ":"
			vals[k] = jsonValue(s.Field(k), f.Type)
		}
		return func(b []byte, i int) []byte {
			b = append(b, '{')
			for k := range keys {
				if k > 0 {
					b = append(b, ',')
				}
				b = append(b, keys[k]...)
				b = vals[k](b, i)
			}
			return append(b, '}')
		}
	}
	// Strings, dates and times, and anything not matched above: the text
	// the table output shows, as a JSON string.
	return textValue(a, t)
}

func textValue(a arrow.Array, t *table.DataType) func([]byte, int) []byte {
	f := query.Formatter(a, t)
	return func(b []byte, i int) []byte {
		s, _ := f(i)
		return appendJSONString(b, s)
	}
}

func intValue(a arrow.Array) func(int) int64 {
	switch v := a.(type) {
	case *array.Int8:
		return func(i int) int64 { return int64(v.Value(i)) }
	case *array.Int16:
		return func(i int) int64 { return int64(v.Value(i)) }
	case *array.Int32:
		return func(i int) int64 { return int64(v.Value(i)) }
	case *array.Int64:
		return v.Value
	}
	return nil
}

// appendJSONString appends s as a JSON string. encoding/json escapes what
// JSON requires, and also <, > and & (harmless, and safe to paste into
// HTML); invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil {
		// A Go string always marshals; keep the line valid regardless.
		return append(b, `""`...)
	}
	return append(b, q...)
}
