package json

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// NewEncoder implements table.EncodingFormat: every type the decoder reads
// can be written.
func (Format) NewEncoder(cols []types.Column, opts options.Values) (table.Encoder, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	cfg.writing = true
	e := &encoder{cfg: encConfig{iso: cfg.iso, plainDecimal: opts.Bool(OptEncodeDecimalAsPlainNumber),
		ignoreNulls: opts.Bool(OptEncodeIgnoreNullFields)}}
	seen := make(map[string]bool, len(cols))
	for _, c := range cols {
		if c.Metadata {
			return nil, fmt.Errorf("format 'json': column %s is a metadata column; the format writes physical columns only", types.QuoteIdent(c.Name))
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("format 'json': column %s appears twice", types.QuoteIdent(c.Name))
		}
		seen[c.Name] = true
		// The decoder's plan checks every type; the encoder writes the
		// same ones.
		if _, err := newNode(c.Name, c.Type, c.Name, &cfg); err != nil {
			return nil, err
		}
		e.cols = append(e.cols, newEnode(c.Name, c.Type))
	}
	e.bound = make([]arrow.Array, len(cols))
	return e, nil
}

type encConfig struct {
	iso          bool
	plainDecimal bool
	ignoreNulls  bool
}

type encoder struct {
	cfg   encConfig
	cols  []*enode
	bound []arrow.Array
}

var _ table.Encoder = (*encoder)(nil)

// An enode writes one type of the schema, as a node reads one. Its arrays
// are bound when the caller passes arrays it has not seen.
type enode struct {
	t    *types.DataType
	kind types.Kind
	name string
	// field is `"name":`, written before the value in an object.
	field          []byte
	elem, key, val *enode
	fields         []*enode
	scale          int32 // DECIMAL
	perUnit        int64 // TIME, TIMESTAMP*: nanoseconds per unit of the array

	arr  arrow.Array
	i8   *array.Int8
	i16  *array.Int16
	i32  *array.Int32
	i64  *array.Int64
	f32  *array.Float32
	f64  *array.Float64
	bl   *array.Boolean
	str  *array.String
	bin  *array.Binary
	fsb  *array.FixedSizeBinary
	dec  *array.Decimal128
	d32  *array.Date32
	t32  *array.Time32
	t64  *array.Time64
	ts   *array.Timestamp
	list *array.List
	mp   *array.Map
	st   *array.Struct
}

func newEnode(name string, t *types.DataType) *enode {
	n := &enode{t: t, kind: t.Kind, name: name}
	n.field = append(appendString(nil, name), ':')
	switch t.Kind {
	case types.Decimal:
		n.scale = int32(t.Scale)
	case types.Time, types.Timestamp, types.TimestampLTZ:
		n.perUnit = int64(types.TimeUnit(t.Precision).Multiplier())
	case types.Array:
		n.elem = newEnode("", t.Elem)
	case types.Map:
		n.key, n.val = newEnode("", t.Key), newEnode("", t.Value)
	case types.Row:
		for _, f := range t.Fields {
			n.fields = append(n.fields, newEnode(f.Name, f.Type))
		}
	}
	return n
}

// bind points the node and its children at a. An array of another type
// than the column's is the caller's programming error (it did not build the
// batch from the table's schema), so it panics, as the decoder's bind does.
func (n *enode) bind(a arrow.Array) {
	if !sameType(a.DataType(), n.t.ArrowType()) {
		panic(fmt.Sprintf("json: a %s array cannot hold %s (build the batch from the table's Arrow schema)", a.DataType(), n.t))
	}
	n.setArray(a)
}

// sameType reports whether arrays of type a can be read as type b: the
// same types, nullability aside (a query's output may say a field can be
// null where the table says NOT NULL, and the values are what count), and
// fields taken by position.
func sameType(a, b arrow.DataType) bool {
	switch a := a.(type) {
	case *arrow.ListType:
		l, ok := b.(*arrow.ListType)
		return ok && sameType(a.Elem(), l.Elem())
	case *arrow.MapType:
		m, ok := b.(*arrow.MapType)
		return ok && sameType(a.KeyType(), m.KeyType()) && sameType(a.ItemType(), m.ItemType())
	case *arrow.StructType:
		st, ok := b.(*arrow.StructType)
		if !ok || a.NumFields() != st.NumFields() {
			return false
		}
		for i := range a.NumFields() {
			if !sameType(a.Field(i).Type, st.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return arrow.TypeEqual(a, b)
}

// setArray keeps the typed view of a, which has the node's type.
func (n *enode) setArray(a arrow.Array) {
	n.arr = a
	switch a := a.(type) {
	case *array.Int8:
		n.i8 = a
	case *array.Int16:
		n.i16 = a
	case *array.Int32:
		n.i32 = a
	case *array.Int64:
		n.i64 = a
	case *array.Float32:
		n.f32 = a
	case *array.Float64:
		n.f64 = a
	case *array.Boolean:
		n.bl = a
	case *array.String:
		n.str = a
	case *array.Binary:
		n.bin = a
	case *array.FixedSizeBinary:
		n.fsb = a
	case *array.Decimal128:
		n.dec = a
	case *array.Date32:
		n.d32 = a
	case *array.Time32:
		n.t32 = a
	case *array.Time64:
		n.t64 = a
	case *array.Timestamp:
		n.ts = a
	case *array.List:
		n.list = a
		n.elem.setArray(a.ListValues())
	case *array.Map:
		n.mp = a
		n.key.setArray(a.Keys())
		n.val.setArray(a.Items())
	case *array.Struct:
		n.st = a
		for i, f := range n.fields {
			f.setArray(a.Field(i))
		}
	}
}

// Encode implements table.Encoder: the row as one JSON object, the columns
// as its fields in order. A JSON value is never null as a whole.
func (e *encoder) Encode(dst []byte, cols []arrow.Array, row int) ([]byte, bool, error) {
	if len(cols) != len(e.cols) {
		panic(fmt.Sprintf("json: Encode given %d arrays for %d columns", len(cols), len(e.cols)))
	}
	for k, a := range cols {
		if a != e.bound[k] {
			e.cols[k].bind(a)
			e.bound[k] = a
		}
	}
	out, err := e.object(dst, e.cols, row)
	if err != nil {
		return dst, false, err
	}
	return out, false, nil
}

// object writes fields' values at row i as one object.
func (e *encoder) object(b []byte, fields []*enode, i int) ([]byte, *table.EncodeError) {
	b = append(b, '{')
	first := true
	for _, f := range fields {
		if e.cfg.ignoreNulls && f.arr.IsNull(i) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, f.field...)
		var err *table.EncodeError
		if b, err = e.value(b, f, i); err != nil {
			return b, at(err, f.name)
		}
	}
	return append(b, '}'), nil
}

// at puts a path element before an error's path: a field name, or "[i]".
func at(err *table.EncodeError, elem string) *table.EncodeError {
	switch {
	case err.Field == "":
		err.Field = elem
	case err.Field[0] == '[':
		err.Field = elem + err.Field
	default:
		err.Field = elem + "." + err.Field
	}
	return err
}

func failf(format string, args ...any) *table.EncodeError {
	return &table.EncodeError{Msg: fmt.Sprintf(format, args...)}
}

// value writes n's value at row i.
func (e *encoder) value(b []byte, n *enode, i int) ([]byte, *table.EncodeError) {
	if n.arr.IsNull(i) {
		return append(b, "null"...), nil
	}
	switch n.kind {
	case types.TinyInt:
		return strconv.AppendInt(b, int64(n.i8.Value(i)), 10), nil
	case types.SmallInt:
		return strconv.AppendInt(b, int64(n.i16.Value(i)), 10), nil
	case types.Int:
		return strconv.AppendInt(b, int64(n.i32.Value(i)), 10), nil
	case types.BigInt:
		return strconv.AppendInt(b, n.i64.Value(i), 10), nil
	case types.Float:
		return appendFloat(b, float64(n.f32.Value(i)), 32), nil
	case types.Double:
		return appendFloat(b, n.f64.Value(i), 64), nil
	case types.Boolean:
		return strconv.AppendBool(b, n.bl.Value(i)), nil
	case types.Char, types.Varchar:
		return appendCheckedString(b, n.str.Value(i))
	case types.Varbinary:
		return appendBase64(b, n.bin.Value(i)), nil
	case types.Binary:
		return appendBase64(b, n.fsb.Value(i)), nil
	case types.Decimal:
		return decimal.Append(b, n.dec.Value(i), n.scale, e.cfg.plainDecimal), nil
	case types.Date:
		b = append(b, '"')
		b, err := appendDate(b, int64(n.d32.Value(i)))
		return append(b, '"'), err
	case types.Time:
		return e.time(b, n, i)
	case types.Timestamp, types.TimestampLTZ:
		return e.timestamp(b, n, int64(n.ts.Value(i)))
	case types.Array:
		start, end := n.list.ValueOffsets(i)
		b = append(b, '[')
		for j := start; j < end; j++ {
			if j > start {
				b = append(b, ',')
			}
			var err *table.EncodeError
			if b, err = e.value(b, n.elem, int(j)); err != nil {
				return b, at(err, "["+strconv.FormatInt(j-start, 10)+"]")
			}
		}
		return append(b, ']'), nil
	case types.Map:
		return e.mapValue(b, n, i)
	case types.Row:
		return e.object(b, n.fields, i)
	}
	return b, failf("cannot write %s", n.t)
}

// mapValue writes a MAP as an object. A JSON key is a string, so each key
// is the text its value would have, quoted once.
func (e *encoder) mapValue(b []byte, n *enode, i int) ([]byte, *table.EncodeError) {
	start, end := n.mp.ValueOffsets(i)
	b = append(b, '{')
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			b = append(b, ',')
		}
		k0 := len(b)
		// Arrow's maps hold no NULL key, so 'json.map-null-key.mode' has
		// nothing to decide.
		var err *table.EncodeError
		if b, err = e.mapKey(b, n.key, j); err != nil {
			return b, at(err, "[key]")
		}
		k1 := len(b)
		b = append(b, ':')
		if b, err = e.value(b, n.val, j); err != nil {
			// The path names the entry by its key as written: attrs["color"].
			return b, at(err, "["+string(b[k0:k1])+"]")
		}
	}
	return append(b, '}'), nil
}

// mapKey writes a key's text as a JSON string: strings, dates, times and
// binary are strings already; numbers and booleans get quotes.
func (e *encoder) mapKey(b []byte, k *enode, j int) ([]byte, *table.EncodeError) {
	start := len(b)
	b, err := e.value(b, k, j)
	if err != nil || b[start] == '"' {
		return b, err
	}
	// A scalar written bare ("1.5", "true") holds nothing to escape.
	b = append(b, '"')
	copy(b[start+1:], b[start:len(b)-1])
	b[start] = '"'
	return append(b, '"'), nil
}

// appendFloat writes f as the shortest text that reads back as f, in the
// number form JSON allows (encoding/json's choice of exponent form).
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, nonFinite(f)...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// 1e-07 is 1e-7: the exponent needs no padding.
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// nonFinite is the JSON text of NaN or an infinity: a string, since JSON
// numbers cannot say them.
func nonFinite(f float64) string {
	if math.IsNaN(f) {
		return `"NaN"`
	}
	if f > 0 {
		return `"Infinity"`
	}
	return `"-Infinity"`
}

func appendBase64(b, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Control characters are escaped
// (\n, \t ... or \u00XX), as are the quote and the backslash; everything
// else is written as it is, UTF-8.
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain[c] || c >= 0x80 {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendCheckedString is appendString for a column's value, which must be
// UTF-8: JSON text is, and the decoder refuses anything else.
func appendCheckedString(b []byte, s string) ([]byte, *table.EncodeError) {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x80 {
			continue
		}
		if !utf8.ValidString(s[i:]) {
			for j := i; j < len(s); {
				r, size := utf8.DecodeRuneInString(s[j:])
				if r == utf8.RuneError && size == 1 {
					return b, failf("a string holds invalid UTF-8 at byte %d (0x%02x); JSON text is UTF-8", j, s[j])
				}
				j += size
			}
		}
		break
	}
	return appendString(b, s), nil
}
