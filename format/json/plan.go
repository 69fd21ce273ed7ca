package json

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/types"
)

// A node decodes one type of the schema: a column, a field of a ROW, the
// element of an ARRAY, the key or value of a MAP. The tree is built once by
// NewDecoder; the builders it appends to are bound on the first Decode and
// again only when the caller passes different ones.
//
// A type occurs once in the tree, and a value of a type never contains
// another value of the same node (types are not recursive), so each node
// can keep its own scratch space without a stack.
type node struct {
	t       *types.DataType
	kind    types.Kind
	notNull bool
	// scalar is every kind but ARRAY, MAP and ROW.
	scalar bool
	// name is the column's or field's name, for error paths.
	name string
	// expect is the type as an error message names it, without NOT NULL.
	expect string

	elem, key, val *node
	fields         []*node
	names          fieldNames

	fast     fastPath
	min, max int64 // TINYINT..BIGINT

	prec, scale int   // DECIMAL
	width       int   // BINARY(n)
	perUnit     int64 // TIME, TIMESTAMP*: nanoseconds per unit of the Arrow type

	// Scratch, reused from value to value.
	sc    scalar
	esc   []byte // unescaped string content
	bin   []byte // base64-decoded bytes
	gen   uint32 // ROW: generation of the object being scanned
	dup   uint32 // ROW: the decoder's gen when a check saw a field twice
	seen  []uint32
	spans []int

	b    array.Builder
	i8   *array.Int8Builder
	i16  *array.Int16Builder
	i32  *array.Int32Builder
	i64  *array.Int64Builder
	f32  *array.Float32Builder
	f64  *array.Float64Builder
	bl   *array.BooleanBuilder
	bb   *array.BinaryBuilder
	fsb  *array.FixedSizeBinaryBuilder
	dec  *array.Decimal128Builder
	d32  *array.Date32Builder
	t32  *array.Time32Builder
	t64  *array.Time64Builder
	ts   *array.TimestampBuilder
	list *array.ListBuilder
	mp   *array.MapBuilder
	st   *array.StructBuilder
}

// fastPath names the shape decoder.quick reads for a column.
type fastPath uint8

const (
	fastNone fastPath = iota
	fastInt
	fastDecimal
	fastString
)

// scalar holds one decoded scalar between parsing and appending.
type scalar struct {
	i int64 // integers, DATE days, TIME and TIMESTAMP in the column's unit
	f float64
	d decimal128.Num
	b []byte // CHAR, VARCHAR, BINARY, VARBINARY: in the value or in scratch
	t bool
}

// planError is a NewDecoder error: at CREATE TABLE time, so it names the
// column and its type.
func (cfg *config) planError(col string, t *types.DataType, why string) error {
	verb := "decode"
	if cfg.writing {
		verb = "write"
	}
	return fmt.Errorf("format 'json' cannot %s column %s of type %s: %s", verb, types.QuoteIdent(col), t, why)
}

func newNode(name string, t *types.DataType, col string, cfg *config) (*node, error) {
	if t == nil {
		return nil, fmt.Errorf("format 'json': column %s has no type", types.QuoteIdent(col))
	}
	n := &node{t: t, kind: t.Kind, notNull: t.NotNull, name: name, expect: t.WithNotNull(false).String(), scalar: true}
	switch t.Kind {
	case types.Char, types.Varchar:
		n.fast = fastString
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		n.fast = fastInt
		n.min, n.max = types.IntRange(t.Kind)
	case types.Boolean, types.Float, types.Double:
	case types.Varbinary:
		n.expect += " as base64"
	case types.Date:
		n.expect += " as yyyy-MM-dd"
	case types.Binary:
		if t.Length < 1 {
			return nil, cfg.planError(col, t, "BINARY needs a length of at least 1")
		}
		n.width = t.Length
		n.expect += " as base64"
	case types.Decimal:
		if t.Precision < 1 || t.Precision > types.MaxDecimalPrecision || t.Scale < 0 || t.Scale > t.Precision {
			return nil, cfg.planError(col, t, fmt.Sprintf("DECIMAL needs 1 <= precision <= %d and 0 <= scale <= precision", types.MaxDecimalPrecision))
		}
		n.prec, n.scale = t.Precision, t.Scale
		n.fast = fastDecimal
	case types.Time, types.Timestamp, types.TimestampLTZ:
		if t.Precision < 0 || t.Precision > types.MaxTimePrecision {
			return nil, cfg.planError(col, t, fmt.Sprintf("the precision must be between 0 and %d", types.MaxTimePrecision))
		}
		n.perUnit = int64(types.TimeUnit(t.Precision).Multiplier())
		n.expect += " as " + layout(t, cfg.iso)
	case types.Array:
		n.scalar = false
		e, err := newNode("", t.Elem, col, cfg)
		if err != nil {
			return nil, err
		}
		n.elem = e
	case types.Map:
		n.scalar = false
		if t.Key == nil || t.Value == nil {
			return nil, cfg.planError(col, t, "MAP needs a key and a value type")
		}
		k, err := newNode("", t.Key, col, cfg)
		if err != nil {
			return nil, err
		}
		if !k.scalar {
			return nil, cfg.planError(col, t, fmt.Sprintf("a JSON object's keys are strings, which cannot be read as %s", t.Key))
		}
		// A key that does not fit says so: the path alone, attrs['x'],
		// does not tell a bad key from a bad value.
		k.expect = "map key " + k.expect
		v, err := newNode("", t.Value, col, cfg)
		if err != nil {
			return nil, err
		}
		n.key, n.val = k, v
	case types.Row:
		n.scalar = false
		n.names.index = make(map[string]int, len(t.Fields))
		for _, f := range t.Fields {
			if _, dup := n.names.index[f.Name]; dup {
				return nil, cfg.planError(col, t, fmt.Sprintf("field %s appears twice", types.QuoteIdent(f.Name)))
			}
			fn, err := newNode(f.Name, f.Type, col, cfg)
			if err != nil {
				return nil, err
			}
			n.names.add(f.Name)
			n.fields = append(n.fields, fn)
		}
		n.seen = make([]uint32, len(n.fields))
		n.spans = make([]int, len(n.fields))
	default:
		return nil, cfg.planError(col, t, "the type is not supported")
	}
	return n, nil
}

// layout is the text a temporal column expects, for error messages.
func layout(t *types.DataType, iso bool) string {
	frac := ""
	if t.Precision > 0 {
		frac = "[." + "fffffffff"[:t.Precision] + "]"
	}
	sep, std := " ", "SQL"
	if iso {
		sep, std = "T", "ISO-8601"
	}
	switch t.Kind {
	case types.Time:
		return "HH:mm:ss" + frac
	case types.Timestamp:
		return fmt.Sprintf("yyyy-MM-dd%sHH:mm:ss%s ('json.timestamp-format.standard' is '%s')", sep, frac, std)
	case types.TimestampLTZ:
		return fmt.Sprintf("yyyy-MM-dd%sHH:mm:ss%sZ ('json.timestamp-format.standard' is '%s')", sep, frac, std)
	}
	return ""
}

// bind points the node and its children at b. A builder of the wrong type
// is the caller's programming error (it did not build the batch from the
// table's schema), so it panics rather than returning a DecodeError.
func (n *node) bind(b array.Builder) {
	n.b = b
	ok := true
	switch n.kind {
	case types.TinyInt:
		n.i8, ok = b.(*array.Int8Builder)
	case types.SmallInt:
		n.i16, ok = b.(*array.Int16Builder)
	case types.Int:
		n.i32, ok = b.(*array.Int32Builder)
	case types.BigInt:
		n.i64, ok = b.(*array.Int64Builder)
	case types.Float:
		n.f32, ok = b.(*array.Float32Builder)
	case types.Double:
		n.f64, ok = b.(*array.Float64Builder)
	case types.Boolean:
		n.bl, ok = b.(*array.BooleanBuilder)
	case types.Char, types.Varchar:
		var sb *array.StringBuilder
		if sb, ok = b.(*array.StringBuilder); ok {
			n.bb = sb.BinaryBuilder
		}
	case types.Varbinary:
		n.bb, ok = b.(*array.BinaryBuilder)
	case types.Binary:
		n.fsb, ok = b.(*array.FixedSizeBinaryBuilder)
	case types.Decimal:
		n.dec, ok = b.(*array.Decimal128Builder)
	case types.Date:
		n.d32, ok = b.(*array.Date32Builder)
	case types.Time:
		if n.t.Precision <= 3 {
			n.t32, ok = b.(*array.Time32Builder)
		} else {
			n.t64, ok = b.(*array.Time64Builder)
		}
	case types.Timestamp, types.TimestampLTZ:
		n.ts, ok = b.(*array.TimestampBuilder)
	case types.Array:
		if n.list, ok = b.(*array.ListBuilder); ok {
			n.elem.bind(n.list.ValueBuilder())
		}
	case types.Map:
		if n.mp, ok = b.(*array.MapBuilder); ok {
			n.key.bind(n.mp.KeyBuilder())
			n.val.bind(n.mp.ItemBuilder())
		}
	case types.Row:
		if n.st, ok = b.(*array.StructBuilder); ok && n.st.NumField() == len(n.fields) {
			for i, f := range n.fields {
				f.bind(n.st.FieldBuilder(i))
			}
		} else {
			ok = false
		}
	}
	if !ok {
		panic(fmt.Sprintf("json: a %T cannot hold %s (build the batch from the table's Arrow schema)", b, n.t))
	}
}
