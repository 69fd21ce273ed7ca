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

// jsonRow renders the rows of one batch, or of one ROW column, as JSON
// objects.
type jsonRow struct {
	keys []string // `"name":`, quoted once
	vals []func(b []byte, row int) []byte
}

func newJSONRow(cols []table.Column, rec arrow.RecordBatch) *jsonRow {
	return newJSONObject(cols, rec.Column)
}

// newJSONObject renders fields as the members of an object; column(k) is the
// array of field k.
func newJSONObject(fields []table.Column, column func(k int) arrow.Array) *jsonRow {
	r := &jsonRow{keys: make([]string, len(fields)), vals: make([]func([]byte, int) []byte, len(fields))}
	for k, f := range fields {
		r.keys[k] = string(appendJSONString(nil, f.Name)) + ":"
		r.vals[k] = jsonValue(column(k), f.Type)
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
		get := query.IntReader(a)
		return func(b []byte, i int) []byte { return strconv.AppendInt(b, get(i), 10) }
	case table.Float, table.Double:
		get := query.FloatReader(a)
		bits := 64
		if t.Kind == table.Float {
			bits = 32
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
			return appendMembers(b, '[', ']', int(start), int(end), elem)
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
		entry := func(b []byte, j int) []byte {
			b = key(b, j)
			b = append(b, ':')
			return val(b, j)
		}
		return func(b []byte, i int) []byte {
			start, end := m.ValueOffsets(i)
			return appendMembers(b, '{', '}', int(start), int(end), entry)
		}
	case table.Row:
		s, ok := a.(*array.Struct)
		if !ok || s.NumField() != len(t.Fields) {
			break
		}
		fields := make([]table.Column, len(t.Fields))
		for k, f := range t.Fields {
			fields[k] = table.Column{Name: f.Name, Type: f.Type}
		}
		return newJSONObject(fields, s.Field).append
	}
	// Strings, dates and times, and anything not matched above: the text
	// the table output shows, as a JSON string.
	return textValue(a, t)
}

// appendMembers appends the members from..to-1 of an ARRAY or MAP value
// between open and close, separated by commas.
func appendMembers(b []byte, open, close byte, from, to int, member func(b []byte, j int) []byte) []byte {
	b = append(b, open)
	for j := from; j < to; j++ {
		if j > from {
			b = append(b, ',')
		}
		b = member(b, j)
	}
	return append(b, close)
}

func textValue(a arrow.Array, t *table.DataType) func([]byte, int) []byte {
	f := query.Formatter(a, t)
	return func(b []byte, i int) []byte {
		s, _ := f(i)
		return appendJSONString(b, s)
	}
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

// JSONRows returns an encoder of rec's rows, each as the JSON object that
// --output json prints for it (without a newline), for callers that hand
// rows on one at a time (kshare work).
func JSONRows(cols []table.Column, rec arrow.RecordBatch) func(b []byte, i int) []byte {
	return newJSONRow(cols, rec).append
}
