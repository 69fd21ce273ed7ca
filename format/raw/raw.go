package raw

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Format is the 'raw' format. It registers itself in init.
type Format struct{}

var _ table.EncodingFormat = Format{}

func init() { table.RegisterFormat(Format{}) }

// Name implements table.Format.
func (Format) Name() string { return "raw" }

// Options implements table.Format: the raw.* keys.
func (Format) Options() *options.Set { return Options }

type charset uint8

const (
	utf8Charset charset = iota
	asciiCharset
	latin1Charset
	utf16BECharset
	utf16LECharset
)

// NewDecoder implements table.Format: cols must be exactly one physical
// column of a type raw reads (see CheckColumns).
func (Format) NewDecoder(cols []types.Column, opts options.Values) (table.Decoder, error) {
	c, cd, err := column(cols, opts, "decodes")
	if err != nil {
		return nil, err
	}
	d := &decoder{codec: cd, col: c, t: c.Type, expect: c.Type.WithNotNull(false).String()}
	switch c.Type.Kind {
	case types.TinyInt:
		d.width = 1
	case types.Boolean:
		d.width = 1
	case types.SmallInt:
		d.width = 2
	case types.Int, types.Float:
		d.width = 4
	case types.BigInt, types.Double:
		d.width = 8
	case types.Binary:
		d.width = c.Type.Length
	}
	return d, nil
}

type decoder struct {
	codec
	col    types.Column
	t      *types.DataType
	expect string
	width  int    // the length a value must have; 0 for any
	buf    []byte // transcoded text
}

// codec is what the options say about bytes, both directions.
type codec struct {
	charset charset
	csName  string
	order   byteOrder
}

// byteOrder reads and writes: binary.BigEndian and LittleEndian are both.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// column is the one column of cols, checked for a format that reads or
// writes it (verb), and the options' codec.
func column(cols []types.Column, opts options.Values, verb string) (types.Column, codec, error) {
	if err := CheckColumns(cols); err != nil {
		return types.Column{}, codec{}, err
	}
	c := cols[0]
	if c.Metadata {
		return c, codec{}, fmt.Errorf("format 'raw': column '%s' is a metadata column; the format %s the physical column only", c.Name, verb)
	}
	cd, err := newCodec(opts)
	return c, cd, err
}

func newCodec(opts options.Values) (codec, error) {
	var c codec
	switch cs := opts.String(OptCharset); {
	case cs == "" || strings.EqualFold(cs, CharsetUTF8):
		c.charset = utf8Charset
	case strings.EqualFold(cs, CharsetASCII):
		c.charset = asciiCharset
	case strings.EqualFold(cs, CharsetISO88591):
		c.charset = latin1Charset
	case strings.EqualFold(cs, CharsetUTF16BE):
		c.charset = utf16BECharset
	case strings.EqualFold(cs, CharsetUTF16LE):
		c.charset = utf16LECharset
	default:
		return c, fmt.Errorf("format 'raw': unsupported '%s' value '%s' (supported: %s, %s, %s, %s, %s)",
			OptCharset, cs, CharsetUTF8, CharsetASCII, CharsetISO88591, CharsetUTF16BE, CharsetUTF16LE)
	}
	c.csName = [...]string{CharsetUTF8, CharsetASCII, CharsetISO88591, CharsetUTF16BE, CharsetUTF16LE}[c.charset]
	switch e := opts.String(OptEndianness); {
	case e == "" || strings.EqualFold(e, BigEndian):
		c.order = binary.BigEndian
	case strings.EqualFold(e, LittleEndian):
		c.order = binary.LittleEndian
	default:
		return c, fmt.Errorf("format 'raw': '%s' must be '%s' or '%s', got '%s'", OptEndianness, BigEndian, LittleEndian, e)
	}
	return c, nil
}

var _ table.Decoder = (*decoder)(nil)

func (d *decoder) fail(format string, args ...any) error {
	return &table.DecodeError{Field: d.col.Name, Msg: fmt.Sprintf(format, args...)}
}

// Decode implements table.Decoder: one row per value. Nothing is appended
// before the value has been checked, so an error leaves the builder as it
// was.
func (d *decoder) Decode(value []byte, cols []array.Builder) (int, error) {
	if len(cols) != 1 {
		panic(fmt.Sprintf("raw: Decode given %d builders for 1 physical column", len(cols)))
	}
	b := cols[0]
	if value == nil {
		if d.t.NotNull {
			return 0, d.fail("expected %s, got a null value", d.t)
		}
		b.AppendNull()
		return 1, nil
	}
	if d.width > 0 && len(value) != d.width {
		return 0, d.fail("expected %s (%d %s), got %d %s", d.expect, d.width, plural(d.width, "byte"), len(value), plural(len(value), "byte"))
	}
	ok := true
	switch d.t.Kind {
	case types.Char, types.Varchar:
		text, err := d.text(value)
		if err != nil {
			return 0, err
		}
		var sb *array.StringBuilder
		if sb, ok = b.(*array.StringBuilder); ok {
			sb.BinaryBuilder.Append(text)
		}
	case types.Varbinary:
		ok = appendTo[*array.BinaryBuilder](b, value)
	case types.Binary:
		ok = appendTo[*array.FixedSizeBinaryBuilder](b, value)
	case types.Boolean:
		ok = appendTo[*array.BooleanBuilder](b, value[0] != 0)
	case types.TinyInt:
		ok = appendTo[*array.Int8Builder](b, int8(value[0]))
	case types.SmallInt:
		ok = appendTo[*array.Int16Builder](b, int16(d.order.Uint16(value)))
	case types.Int:
		ok = appendTo[*array.Int32Builder](b, int32(d.order.Uint32(value)))
	case types.BigInt:
		ok = appendTo[*array.Int64Builder](b, int64(d.order.Uint64(value)))
	case types.Float:
		ok = appendTo[*array.Float32Builder](b, math.Float32frombits(d.order.Uint32(value)))
	case types.Double:
		ok = appendTo[*array.Float64Builder](b, math.Float64frombits(d.order.Uint64(value)))
	}
	if !ok {
		// The caller did not build the batch from the table's schema: a
		// programming error, not a bad record.
		panic(fmt.Sprintf("raw: a %T cannot hold %s", b, d.t))
	}
	return 1, nil
}

// appendTo appends v to b if b is a B, and reports whether it was.
func appendTo[B interface{ Append(V) }, V any](b array.Builder, v V) bool {
	tb, ok := b.(B)
	if ok {
		tb.Append(v)
	}
	return ok
}

// text returns value as UTF-8: value itself when the charset is UTF-8 or
// US-ASCII (checked, not copied), else transcoded into scratch.
func (d *decoder) text(value []byte) ([]byte, error) {
	switch d.charset {
	case utf8Charset:
		if utf8.Valid(value) {
			return value, nil
		}
		for i := 0; i < len(value); {
			r, size := utf8.DecodeRune(value[i:])
			if r == utf8.RuneError && size == 1 {
				return nil, d.fail("expected %s as UTF-8, got invalid UTF-8 at byte %d of the value (0x%02x)", d.expect, i, value[i])
			}
			i += size
		}
	case asciiCharset:
		for i, c := range value {
			if c >= 0x80 {
				return nil, d.fail("expected %s as US-ASCII, got byte 0x%02x at byte %d of the value", d.expect, c, i)
			}
		}
		return value, nil
	case latin1Charset:
		buf := d.buf[:0]
		for _, c := range value {
			buf = utf8.AppendRune(buf, rune(c))
		}
		d.buf = buf
		return buf, nil
	case utf16BECharset, utf16LECharset:
		if len(value)%2 != 0 {
			return nil, d.fail("expected %s as %s, got %d bytes (UTF-16 needs an even number)", d.expect, d.csName, len(value))
		}
		order := binary.ByteOrder(binary.BigEndian)
		if d.charset == utf16LECharset {
			order = binary.LittleEndian
		}
		buf := d.buf[:0]
		for i := 0; i < len(value); i += 2 {
			r := rune(order.Uint16(value[i:]))
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00 && i+4 <= len(value):
				lo := rune(order.Uint16(value[i+2:]))
				if lo < 0xdc00 || lo > 0xdfff {
					return nil, d.fail("expected %s as %s, got an unpaired surrogate 0x%04x at byte %d of the value", d.expect, d.csName, r, i)
				}
				r = utf16.DecodeRune(r, lo)
				i += 2
			case utf16.IsSurrogate(r):
				return nil, d.fail("expected %s as %s, got an unpaired surrogate 0x%04x at byte %d of the value", d.expect, d.csName, r, i)
			}
			buf = utf8.AppendRune(buf, r)
		}
		d.buf = buf
		return buf, nil
	}
	return nil, d.fail("expected %s as UTF-8, got invalid UTF-8", d.expect)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// NewEncoder implements table.EncodingFormat: cols must be exactly one
// physical column of a type raw reads (see CheckColumns).
func (Format) NewEncoder(cols []types.Column, opts options.Values) (table.Encoder, error) {
	c, cd, err := column(cols, opts, "writes")
	if err != nil {
		return nil, err
	}
	return &encoder{codec: cd, col: c}, nil
}

type encoder struct {
	codec
	col   types.Column
	bound arrow.Array // the last array checked against the column's type
}

var _ table.Encoder = (*encoder)(nil)

func (e *encoder) fail(format string, args ...any) error {
	return &table.EncodeError{Field: e.col.Name, Msg: fmt.Sprintf(format, args...)}
}

// Encode implements table.Encoder.
func (e *encoder) Encode(dst []byte, cols []arrow.Array, row int) ([]byte, bool, error) {
	if len(cols) != 1 {
		panic(fmt.Sprintf("raw: Encode given %d arrays for 1 column", len(cols)))
	}
	if a := cols[0]; a != e.bound {
		// An array of another type would be written in another width: the
		// caller's programming error, as a wrong builder is the decoder's.
		if !arrow.TypeEqual(a.DataType(), e.col.Type.ArrowType()) {
			panic(fmt.Sprintf("raw: a %s array cannot hold %s (build the batch from the table's Arrow schema)", a.DataType(), e.col.Type))
		}
		e.bound = a
	}
	if cols[0].IsNull(row) {
		return dst, true, nil
	}
	out, err := e.value(dst, cols[0], row)
	if out == nil && err == nil {
		// An empty string or byte string appended to a nil buffer: a
		// value all the same, which a nil slice would turn into a
		// tombstone.
		out = []byte{}
	}
	return out, false, err
}

func (e *encoder) value(dst []byte, a arrow.Array, row int) ([]byte, error) {
	o := e.order
	switch a := a.(type) {
	case *array.String:
		return e.text(dst, a.Value(row))
	case *array.Binary:
		return append(dst, a.Value(row)...), nil
	case *array.FixedSizeBinary:
		return append(dst, a.Value(row)...), nil
	case *array.Boolean:
		if a.Value(row) {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case *array.Int8:
		return append(dst, byte(a.Value(row))), nil
	case *array.Int16:
		return o.AppendUint16(dst, uint16(a.Value(row))), nil
	case *array.Int32:
		return o.AppendUint32(dst, uint32(a.Value(row))), nil
	case *array.Int64:
		return o.AppendUint64(dst, uint64(a.Value(row))), nil
	case *array.Float32:
		return o.AppendUint32(dst, math.Float32bits(a.Value(row))), nil
	case *array.Float64:
		return o.AppendUint64(dst, math.Float64bits(a.Value(row))), nil
	}
	// The caller did not build the batch from the table's schema: a
	// programming error, not a bad row.
	panic(fmt.Sprintf("raw: a %T cannot hold %s", a, e.col.Type))
}

// text writes the UTF-8 string s in the charset.
func (e *encoder) text(dst []byte, s string) ([]byte, error) {
	if e.charset == utf8Charset && utf8.ValidString(s) {
		return append(dst, s...), nil
	}
	out := dst
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst, e.fail("a string holds invalid UTF-8 at byte %d (0x%02x)", i, s[i])
		}
		switch e.charset {
		case utf8Charset:
			out = append(out, s[i:i+size]...)
		case asciiCharset, latin1Charset:
			if r >= 0x80 && (e.charset == asciiCharset || r > 0xff) {
				return dst, e.fail("%U at byte %d of the string is not in %s", r, i, e.csName)
			}
			out = append(out, byte(r))
		case utf16BECharset, utf16LECharset:
			order := byteOrder(binary.BigEndian)
			if e.charset == utf16LECharset {
				order = binary.LittleEndian
			}
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = order.AppendUint16(out, uint16(r1))
				out = order.AppendUint16(out, uint16(r2))
			} else {
				out = order.AppendUint16(out, uint16(r))
			}
		}
		i += size
	}
	return out, nil
}
