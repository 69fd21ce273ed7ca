package jdbc

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// reader yields row i of an Arrow column as the Go value pgx encodes into
// the PostgreSQL column: nil for NULL. Values are copies: a buffered row
// outlives the batch it came from, whose buffers the caller releases.
type reader func(i int) any

// newReader reads column a of kshare type t for a PostgreSQL column that
// takes it natively (asJSON false) or as jsonb / json (asJSON true).
func newReader(a arrow.Array, t *types.DataType, asJSON bool) reader {
	var f func(int) any
	if asJSON {
		v := jsonValue(a, t)
		f = func(i int) any {
			b, err := json.Marshal(v(i))
			if err != nil {
				// Every value jsonValue makes marshals; a failure is a bug.
				panic(fmt.Sprintf("jdbc: marshalling a %s value: %v", t, err))
			}
			return json.RawMessage(b)
		}
	} else {
		f = nativeValue(a, t)
	}
	return func(i int) any {
		if a.IsNull(i) {
			return nil
		}
		return f(i)
	}
}

// nativeValue reads non-null values of a column whose PostgreSQL type is
// the kshare type's own (see pgTypes): pgx encodes int64 into int2, int4
// and int8 alike (refusing a value out of range), float64 into float4 and
// float8, and time.Time into date, timestamp and timestamptz.
func nativeValue(a arrow.Array, t *types.DataType) func(int) any {
	switch t.Kind {
	case types.Boolean:
		b := a.(*array.Boolean)
		return func(i int) any { return b.Value(i) }
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		get := render.IntReader(a)
		return func(i int) any { return get(i) }
	case types.Float, types.Double:
		get := render.FloatReader(a)
		return func(i int) any { return get(i) }
	case types.Decimal:
		d := a.(*array.Decimal128)
		scale := int32(t.Scale)
		return func(i int) any { return pgtype.Numeric{Int: d.Value(i).BigInt(), Exp: -scale, Valid: true} }
	case types.Char, types.Varchar:
		s := a.(*array.String)
		// Arrow's strings alias its buffers.
		return func(i int) any { return strings.Clone(s.Value(i)) }
	case types.Binary, types.Varbinary:
		get := render.BytesReader(a)
		return func(i int) any { return append([]byte(nil), get(i)...) }
	case types.Date, types.Timestamp, types.TimestampLTZ:
		// A TIMESTAMP's wall clock, read as UTC, is what pgx writes
		// into a timestamp column: it drops the zone, keeping the clock.
		get := render.InstantReader(a)
		return func(i int) any {
			in := get(i)
			return time.Unix(in.Sec, in.Nsec).UTC()
		}
	case types.Time:
		get := render.TimeReader(a)
		return func(i int) any { return pgtype.Time{Microseconds: get(i) / 1000, Valid: true} }
	case types.Array:
		l := a.(*array.List)
		elem := newReader(l.ListValues(), t.Elem, false)
		return func(i int) any {
			start, end := l.ValueOffsets(i)
			out := make([]any, 0, end-start)
			for k := start; k < end; k++ {
				out = append(out, elem(int(k)))
			}
			return out
		}
	}
	// pgTypes maps no PostgreSQL type but jsonb to the others (MAP, ROW).
	panic(fmt.Sprintf("jdbc: no native PostgreSQL value for %s", t))
}

// jsonValue reads values as encoding/json marshals them into jsonb: numbers
// as JSON numbers (DECIMAL exact, with its scale), BYTES as base64,
// dates and times as Flink renders them ('2024-01-02 03:04:05.678'), ARRAY
// as a list, MAP as an object (keys rendered as text), ROW as an object of
// its fields.
func jsonValue(a arrow.Array, t *types.DataType) func(int) any {
	nullable := func(f func(int) any) func(int) any {
		return func(i int) any {
			if a.IsNull(i) {
				return nil
			}
			return f(i)
		}
	}
	switch t.Kind {
	case types.Boolean, types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double,
		types.Char, types.Varchar, types.Binary, types.Varbinary:
		return nullable(nativeValue(a, t))
	case types.Decimal:
		s := render.CastString(a, t)
		return nullable(func(i int) any { return json.Number(s(i)) })
	case types.Date, types.Time, types.Timestamp, types.TimestampLTZ:
		s := render.CastString(a, t)
		return nullable(func(i int) any { return s(i) })
	case types.Array:
		l := a.(*array.List)
		elem := jsonValue(l.ListValues(), t.Elem)
		return nullable(func(i int) any {
			start, end := l.ValueOffsets(i)
			out := make([]any, 0, end-start)
			for k := start; k < end; k++ {
				out = append(out, elem(int(k)))
			}
			return out
		})
	case types.Map:
		m := a.(*array.Map)
		key := render.CastString(m.Keys(), t.Key)
		val := jsonValue(m.Items(), t.Value)
		return nullable(func(i int) any {
			start, end := m.ValueOffsets(i)
			out := make(map[string]any, end-start)
			for k := start; k < end; k++ {
				out[key(int(k))] = val(int(k))
			}
			return out
		})
	case types.Row:
		s := a.(*array.Struct)
		fields := make([]func(int) any, len(t.Fields))
		for k, f := range t.Fields {
			fields[k] = jsonValue(s.Field(k), f.Type)
		}
		return nullable(func(i int) any {
			out := make(map[string]any, len(fields))
			for k, f := range fields {
				out[t.Fields[k].Name] = f(i)
			}
			return out
		})
	}
	panic(fmt.Sprintf("jdbc: no JSON value for %s", t))
}

// keyString is a key's values as one comparable string, so that the
// changes of one key within a flush can be found: values of one column
// always have one Go type, so equal strings mean equal values.
func keyString(vals []any) string {
	var b strings.Builder
	for _, v := range vals {
		switch v := v.(type) {
		case nil:
			b.WriteString("N")
		case pgtype.Numeric:
			b.WriteString(v.Int.String())
			fmt.Fprintf(&b, "e%d", v.Exp)
		case time.Time:
			b.WriteString(v.Format(time.RFC3339Nano))
		case []byte:
			b.WriteString(fmt.Sprintf("%q", v))
		case string:
			b.WriteString(fmt.Sprintf("%q", v))
		case []any:
			b.WriteString("[" + keyString(v) + "]")
		default:
			fmt.Fprintf(&b, "%v", v)
		}
		b.WriteByte(0)
	}
	return b.String()
}
