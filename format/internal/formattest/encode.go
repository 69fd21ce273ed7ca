package formattest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Round-trip golden files (testdata/encode/*.txt) are written as the
// decoder's, and read the other way: the case's values are decoded into
// rows, every row is encoded, and the output is the encoded values, one a
// line in the syntax of a value line ("!nil" for a null value, "!hex .."
// for bytes a line cannot hold), or "row N: error" for a row the encoder
// refuses. The encoded values must decode to the same rows: a difference
// fails the test, whatever the golden output says.

// RunGoldens runs a format's golden files: the decoding scenarios
// (RunGolden) and, if f writes, the round trips (RunEncodeGolden). Run
// with -rewrite to regenerate the expected output.
func RunGoldens(t *testing.T, f table.Format) {
	t.Run("decode", func(t *testing.T) { RunGolden(t, f) })
	if _, ok := f.(table.EncodingFormat); ok {
		t.Run("encode", func(t *testing.T) { RunEncodeGolden(t, f) })
	}
}

// RunEncodeGolden runs every testdata/encode/*.txt file against format f,
// which must be a table.EncodingFormat.
func RunEncodeGolden(t *testing.T, f table.Format) {
	RunFiles(t, "encode", func(t *testing.T, c *Case) string { return encodeCase(t, f, c) })
}

func encodeCase(t *testing.T, f table.Format, c *Case) string {
	t.Helper()
	cols, err := ParseColumns(c.Schema)
	if err != nil {
		t.Fatalf("line %d: schema: %v", c.line, err)
	}
	vals, err := options.Parse(c.Options, nil, f.Options())
	if err != nil {
		return fmt.Sprintf("options error: %v\n", err)
	}
	enc, err := table.NewEncoder(f, cols, vals)
	if err != nil {
		return fmt.Sprintf("error: %v\n", err)
	}
	dec, err := f.NewDecoder(cols, vals)
	if err != nil {
		t.Fatalf("line %d: decoder: %v", c.line, err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec, err := DecodeAll(mem, dec, cols, c.Values)
	if err != nil {
		t.Fatalf("line %d: the case's values must decode: %v", c.line, err)
	}
	defer rec.Release()
	var out strings.Builder
	encoded, err := RoundTrip(mem, enc, dec, cols, rec, func(row int, v []byte, err error) {
		if err != nil {
			var ee *table.EncodeError
			if !errors.As(err, &ee) {
				t.Errorf("line %d: row %d: error %T is not a *table.EncodeError: %v", c.line, row, err, err)
			}
			fmt.Fprintf(&out, "row %d: %v\n", row, err)
			return
		}
		out.WriteString(ValueLine(v))
		out.WriteByte('\n')
	})
	if err != nil {
		t.Errorf("line %d: %v", c.line, err)
	}
	if encoded == 0 && out.Len() == 0 {
		out.WriteString("(no rows)\n")
	}
	return out.String()
}

// DecodeAll decodes values with dec into one batch of cols; a value that
// fails is an error.
func DecodeAll(mem memory.Allocator, dec table.Decoder, cols []types.Column, values [][]byte) (arrow.RecordBatch, error) {
	rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
	defer rb.Release()
	for k, v := range values {
		if _, err := dec.Decode(v, rb.Fields()); err != nil {
			return nil, fmt.Errorf("value %d: %w", k, err)
		}
	}
	return rb.NewRecordBatch(), nil
}

// RoundTrip encodes every row of rec with enc, each into a buffer that
// already holds bytes (a sink appends to the buffer it reuses), calls each
// with the value or the error, then decodes the values with dec and checks
// that the rows that encoded come back as they were: the same values, as
// Value prints them. It returns how many rows encoded. A nil value (the
// encoder's null) is decoded as the connector hands a tombstone over.
func RoundTrip(mem memory.Allocator, enc table.Encoder, dec table.Decoder, cols []types.Column, rec arrow.RecordBatch,
	each func(row int, v []byte, err error)) (int, error) {
	arrs := rec.Columns()
	const pad = "prefix"
	var values [][]byte
	var rows []int
	for r := 0; r < int(rec.NumRows()); r++ {
		buf, null, err := enc.Encode([]byte(pad), arrs, r)
		if err != nil {
			if string(buf) != pad {
				return 0, fmt.Errorf("row %d: a failed Encode changed the buffer to %q", r, buf)
			}
			each(r, nil, err)
			continue
		}
		if string(buf[:len(pad)]) != pad {
			return 0, fmt.Errorf("row %d: Encode overwrote the buffer's bytes: %q", r, buf)
		}
		var v []byte
		if !null {
			v = buf[len(pad):]
		} else if len(buf) != len(pad) {
			return 0, fmt.Errorf("row %d: Encode reported null and appended %q", r, buf[len(pad):])
		}
		if out, n2, _ := enc.Encode(nil, arrs, r); !null && !n2 && out == nil {
			return 0, fmt.Errorf("row %d: Encode into a nil buffer returned nil for a value that is not null", r)
		}
		each(r, v, nil)
		values = append(values, v)
		rows = append(rows, r)
	}
	back, err := DecodeAll(mem, dec, cols, values)
	if err != nil {
		return 0, fmt.Errorf("an encoded value does not decode: %w", err)
	}
	defer back.Release()
	if int(back.NumRows()) != len(rows) {
		return 0, fmt.Errorf("%d encoded rows decode to %d rows", len(rows), back.NumRows())
	}
	for k, r := range rows {
		for c := range arrs {
			want, got := Value(arrs[c], r), Value(back.Column(c), k)
			if want != got {
				return 0, fmt.Errorf("row %d column %s: encoded as %s, decodes to %s, want %s", r, cols[c].Name, ValueLine(values[k]), got, want)
			}
		}
	}
	return len(rows), nil
}

// ValueLine writes v in the syntax of a golden file's value line.
func ValueLine(v []byte) string {
	switch {
	case v == nil:
		return "!nil"
	case len(v) == 0:
		return "!empty"
	}
	ascii := true
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return "!hex " + hex.EncodeToString(v)
		}
		ascii = ascii && c < 0x80
	}
	if !utf8.Valid(v) {
		return "!hex " + hex.EncodeToString(v)
	}
	if !ascii || v[0] == '!' || strings.TrimSpace(string(v)) != string(v) {
		return "!q " + strconv.QuoteToASCII(string(v))
	}
	return string(v)
}
