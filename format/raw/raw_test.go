package raw

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRegistered(t *testing.T) {
	formattest.CheckRegistered(t, Format{})
}

func TestErrorKinds(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	vals, err := options.Parse(nil, nil, Options)
	if err != nil {
		t.Fatal(err)
	}
	cols := []types.Column{{Name: "v", Type: types.IntType()}}
	dec, err := Format{}.NewDecoder(cols, vals)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt32Builder(mem)
	defer b.Release()
	n, err := dec.Decode([]byte{1, 2, 3}, []array.Builder{b})
	var de *table.DecodeError
	if n != 0 || !errors.As(err, &de) || de.Field != "v" || de.Msg != "expected INT (4 bytes), got 3 bytes" || b.Len() != 0 {
		t.Errorf("got %d, %#v, %d values", n, err, b.Len())
	}
	_, err = Format{}.NewDecoder([]types.Column{{Name: "offset", Type: types.BigIntType(), Metadata: true}}, vals)
	if err == nil || !strings.Contains(err.Error(), "metadata column") {
		t.Errorf("got %v", err)
	}
}

// FuzzRawDecode decodes arbitrary bytes into every type raw reads, with
// every charset and byte order: no panic, nothing appended on an error,
// valid UTF-8 out of every string column, no leak.
// fuzzCase is the column and the options a fuzz input's first byte picks.
func fuzzCase(sel byte) (string, []options.KV) {
	typeNames := []string{"STRING", "VARCHAR(3) NOT NULL", "CHAR(2)", "BYTES", "VARBINARY(4)", "BINARY(3)", "BOOLEAN",
		"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE NOT NULL"}
	charsets := []string{CharsetUTF8, CharsetASCII, CharsetISO88591, CharsetUTF16BE, CharsetUTF16LE}
	k := int(sel)
	cs := charsets[k/len(typeNames)%len(charsets)]
	order := []string{BigEndian, LittleEndian}[k/len(typeNames)/len(charsets)%2]
	return "v " + typeNames[k%len(typeNames)], []options.KV{{Key: OptCharset, Value: cs}, {Key: OptEndianness, Value: order}}
}

func FuzzRawDecode(f *testing.F) {
	for _, s := range []string{"\x00hello", "\x05\xc3\xa9\xff", "\x09\x00\x00\x01\x02", "\x11\x3f\xf8\x00\x00\x00\x00\x00\x00", "\x03\xd8\x3d\xde\x00", "\x0a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		schema, kvs := fuzzCase(data[0])
		cols, dec := formattest.NewDecoder(t, Format{}, schema, kvs...)
		mem := tabletest.CheckedAlloc(t)
		bb := batch.NewBuilder(mem, (&types.Schema{Columns: cols}).Arrow(), nil, dec, 0)
		defer bb.Release()
		rest := data[1:]
		// The whole value, its halves, and a tombstone when the input is a
		// single byte.
		values := [][]byte{rest, rest[:len(rest)/2], rest[len(rest)/2:]}
		if len(rest) == 0 {
			values = append(values, nil)
		}
		rows := 0
		for k, v := range values {
			before := formattest.Lengths([]array.Builder{bb.Field(0)})
			n, err := bb.Append(v)
			if err != nil {
				if err := formattest.CheckRefused(err, n, before, []array.Builder{bb.Field(0)}); err != nil {
					t.Fatalf("value %d: %v", k, err)
				}
			} else if n != 1 {
				t.Fatalf("value %d: %d rows", k, n)
			}
			rows += n
			if bb.Len() != rows || bb.Field(0).Len() != rows {
				t.Fatalf("value %d: %d rows counted, %d in the builder, want %d", k, bb.Len(), bb.Field(0).Len(), rows)
			}
		}
		rec := bb.NewBatch()
		defer rec.Release()
		if err := formattest.CheckBatch(rec, cols); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkDecodeRawString(b *testing.B) {
	benchRaw(b, "STRING", nil, []byte(`{"order_id":1001,"customer_id":"C001","quantity":2,"price":25.50}`))
}

func BenchmarkDecodeRawBigInt(b *testing.B) {
	benchRaw(b, "BIGINT", []options.KV{{Key: OptEndianness, Value: LittleEndian}}, []byte{1, 2, 3, 4, 5, 6, 7, 8})
}

func benchRaw(b *testing.B, typ string, kvs []options.KV, value []byte) {
	cols, dec := formattest.NewDecoder(b, Format{}, "v "+typ, kvs...)
	bb := batch.NewBuilder(memory.NewGoAllocator(), (&types.Schema{Columns: cols}).Arrow(), nil, dec, 1024)
	defer bb.Release()
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := bb.Append(value); err != nil {
			b.Fatal(err)
		}
		if bb.Full() {
			bb.NewBatch().Release()
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestGolden runs testdata/*.txt (values in, rows or errors out) and
// testdata/encode/*.txt (rows decoded, encoded and decoded back).
func TestGolden(t *testing.T) { formattest.RunGoldens(t, Format{}) }

// TestEncodeRefuses covers text the charset cannot hold: an error naming
// the character, never Java's silent '?'.
func TestEncodeRefuses(t *testing.T) {
	for _, tc := range []struct{ charset, value, want string }{
		{CharsetASCII, "caf\u00e9", "U+00E9 at byte 3 of the string is not in US-ASCII"},
		{CharsetISO88591, "\u00e9\u4e2d", "U+4E2D at byte 2 of the string is not in ISO-8859-1"},
		{CharsetUTF16BE, "a\xffb", "a string holds invalid UTF-8 at byte 1 (0xff)"},
		{CharsetUTF8, "a\xffb", "a string holds invalid UTF-8 at byte 1 (0xff)"},
	} {
		cols, err := formattest.ParseColumns("v STRING")
		if err != nil {
			t.Fatal(err)
		}
		vals, err := options.Parse([]options.KV{{Key: OptCharset, Value: tc.charset}}, nil, Options)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := table.NewEncoder(Format{}, cols, vals)
		if err != nil {
			t.Fatal(err)
		}
		sb := array.NewStringBuilder(tabletest.CheckedAlloc(t))
		sb.BinaryBuilder.Append([]byte(tc.value))
		arr := sb.NewArray()
		sb.Release()
		out, null, err := enc.Encode([]byte("x"), []arrow.Array{arr}, 0)
		arr.Release()
		var ee *table.EncodeError
		if !errors.As(err, &ee) || ee.Field != "v" || ee.Msg != tc.want || null || string(out) != "x" {
			t.Errorf("%s %q: got %q, %v, %v; want field \"v\": %s and the buffer as it was", tc.charset, tc.value, out, null, err, tc.want)
		}
	}
}

// FuzzRoundTrip decodes an arbitrary value (the first byte picks the
// column and the options, as in FuzzRawDecode); a value that decodes must
// encode, and decode again to the same row.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"\x00hello", "\x0e\xc3\xa9", "\x1a\xff", "\x06\x07", "\x35\xd8\x3d\xde\x00", "\x47\x00\x01\x02\x03", "\x0b\x7f\xc0\x00\x01", "\x03"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		schema, kvs := fuzzCase(data[0])
		cols, dec, enc := formattest.NewCodec(t, Format{}, schema, kvs...)
		value := data[1:]
		if len(value) == 0 {
			value = nil // a tombstone, a NULL
		}
		mem := tabletest.CheckedAlloc(t)
		rec, err := formattest.DecodeAll(mem, dec, cols, [][]byte{value})
		if err != nil {
			return
		}
		defer rec.Release()
		_, err = formattest.RoundTrip(mem, enc, dec, cols, rec, func(row int, v []byte, err error) {
			if err != nil {
				t.Errorf("the value decoded but does not encode: %v", err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
