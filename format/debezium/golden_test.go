package debezium

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// The golden files of this package are written as formattest's (cases
// separated by blank lines; "schema:", "options:", then one value a line,
// "!nil", "!empty", "!hex ..", "!q ..." for the bytes a line cannot hold;
// "----", then the output), with outputs that show what formattest's do
// not: each row's kind of change.
//
//	testdata/decode/*.txt   values in; each failed value ("value N: error"),
//	                        then the rows with their kinds
//	testdata/encode/*.txt   values in, decoded into rows with their kinds;
//	                        each row encoded as a change of its kind, one
//	                        line each ("-U {...}"), and the encoded values
//	                        must decode to the same rows (see roundTrip)
//
// formattest.RunFiles runs them; run with -rewrite (formattest's flag) to
// regenerate the outputs.

// setup parses a case's columns and options: the error text when the
// format refuses them.
func setup(t *testing.T, c *formattest.Case) ([]types.Column, options.Values, string) {
	t.Helper()
	cols, err := formattest.ParseColumns(c.Schema)
	if err != nil {
		t.Fatalf("line %d: schema: %v", c.Line(), err)
	}
	vals, err := options.Parse(c.Options, nil, Options)
	if err != nil {
		return nil, vals, fmt.Sprintf("options error: %v\n", err)
	}
	return cols, vals, ""
}

// decodeChanges decodes values into one batch with their kinds, checking
// the contract of every call: a failed one appends nothing, neither rows
// nor kinds, and returns an error of the kinds the contract names; a good
// one appends as many kinds as rows. each is told every value's outcome.
// Plain Decode, through a decoder of its own, must give the same rows.
func decodeChanges(t *testing.T, mem memory.Allocator, f table.Format, cols []types.Column, vals options.Values, values [][]byte,
	each func(k int, err error)) (arrow.RecordBatch, []flow.RowKind) {
	t.Helper()
	dec, err := f.NewDecoder(cols, vals)
	if err != nil {
		t.Fatalf("decoder: %v", err)
	}
	plain, err := f.NewDecoder(cols, vals)
	if err != nil {
		t.Fatal(err)
	}
	schema := (&types.Schema{Columns: cols}).Arrow()
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	prb := array.NewRecordBuilder(mem, schema)
	defer prb.Release()
	changes := dec.(table.ChangeDecoder)
	var kinds []flow.RowKind
	rows := 0
	for k, v := range values {
		before := formattest.Lengths(rb.Fields())
		kindsBefore := slices.Clone(kinds)
		n, out, err := changes.DecodeChanges(v, rb.Fields(), kinds)
		pn, perr := plain.Decode(v, prb.Fields())
		if pn != n || (perr == nil) != (err == nil) || (err != nil && perr.Error() != err.Error()) {
			t.Errorf("value %d: Decode gives %d, %v; DecodeChanges %d, %v", k, pn, perr, n, err)
		}
		if err != nil {
			if err := formattest.CheckRefused(err, n, before, rb.Fields()); err != nil {
				t.Errorf("value %d: %v", k, err)
			}
			if !slices.Equal(out, kindsBefore) || len(out) != len(kinds) {
				t.Errorf("value %d: a failed DecodeChanges changed the kinds: %v -> %v", k, kindsBefore, out)
			}
		} else if len(out) != len(kinds)+n || !slices.Equal(out[:len(kinds)], kindsBefore) {
			t.Errorf("value %d: %d rows and kinds %v -> %v", k, n, kindsBefore, out)
		}
		kinds = out
		rows += n
		if err := formattest.Aligned(rb.Fields(), rows); err != nil {
			t.Errorf("value %d: %v", k, err)
		}
		each(k, err)
	}
	rec := rb.NewRecordBatch()
	prec := prb.NewRecordBatch()
	defer prec.Release()
	if err := formattest.CheckBatch(rec, cols); err != nil {
		t.Error(err)
	}
	var a, b strings.Builder
	formattest.PrintBatch(&a, rec)
	formattest.PrintBatch(&b, prec)
	if a.String() != b.String() {
		t.Errorf("Decode and DecodeChanges give other rows:\n%s\n%s", b.String(), a.String())
	}
	return rec, kinds
}

// printChanges writes rec's rows, each after its kind.
func printChanges(out *strings.Builder, rec arrow.RecordBatch, kinds []flow.RowKind) {
	if rec.NumRows() == 0 {
		out.WriteString("(no rows)\n")
		return
	}
	names := []string{"kind"}
	for _, f := range rec.Schema().Fields() {
		names = append(names, f.Name)
	}
	out.WriteString(strings.Join(names, " | ") + "\n")
	for r := 0; r < int(rec.NumRows()); r++ {
		out.WriteString(kinds[r].String())
		for c := 0; c < int(rec.NumCols()); c++ {
			out.WriteString(" | " + formattest.Value(rec.Column(c), r))
		}
		out.WriteByte('\n')
	}
}

// TestDecodeGolden runs testdata/decode/*.txt: every op, the schema
// envelope, tombstones, every error, ignore-parse-errors.
func TestDecodeGolden(t *testing.T) {
	formattest.RunFiles(t, "decode", func(t *testing.T, c *formattest.Case) string {
		cols, vals, msg := setup(t, c)
		if msg != "" {
			return msg
		}
		if _, err := (Format{}).NewDecoder(cols, vals); err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		var out strings.Builder
		rec, kinds := decodeChanges(t, mem, Format{}, cols, vals, c.Values, func(k int, err error) {
			if err != nil {
				fmt.Fprintf(&out, "value %d: %v\n", k, err)
			}
		})
		defer rec.Release()
		printChanges(&out, rec, kinds)
		return out.String()
	})
}

// written is the kind a row comes back as once written: Flink's
// debezium-json writes an update's rows as a delete and a create.
func written(k flow.RowKind) flow.RowKind {
	switch k {
	case flow.KindUpdateBefore:
		return flow.KindDelete
	case flow.KindUpdateAfter:
		return flow.KindInsert
	}
	return k
}

// TestEncodeGolden runs testdata/encode/*.txt: each kind of change written,
// and the round trip of every type the json format reads.
func TestEncodeGolden(t *testing.T) {
	formattest.RunFiles(t, "encode", func(t *testing.T, c *formattest.Case) string {
		cols, vals, msg := setup(t, c)
		if msg != "" {
			return msg
		}
		enc, err := table.NewEncoder(Format{}, cols, vals)
		if err != nil {
			return fmt.Sprintf("error: %v\n", err)
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rec, kinds := decodeChanges(t, mem, Format{}, cols, vals, c.Values, func(k int, err error) {
			if err != nil {
				t.Fatalf("line %d: value %d must decode: %v", c.Line(), k, err)
			}
		})
		defer rec.Release()
		var out strings.Builder
		roundTrip(t, mem, enc, cols, vals, rec, kinds, func(row int, v []byte, err error) {
			if err != nil {
				fmt.Fprintf(&out, "row %d: %v\n", row, err)
				return
			}
			fmt.Fprintf(&out, "%s %s\n", kinds[row], formattest.ValueLine(v))
		})
		if rec.NumRows() == 0 {
			out.WriteString("(no rows)\n")
		}
		return out.String()
	})
}

// roundTrip encodes every row of rec as a change of its kind, each into a
// buffer that holds bytes already (as a sink's does), tells each the
// value or the error, then decodes the values and checks that the rows
// come back the same, each with the kind it was written as (see written).
// An insert written with Encode must be what EncodeChange writes.
func roundTrip(t *testing.T, mem memory.Allocator, enc table.Encoder, cols []types.Column, vals options.Values,
	rec arrow.RecordBatch, kinds []flow.RowKind, each func(row int, v []byte, err error)) {
	t.Helper()
	ce := enc.(table.ChangeEncoder)
	arrs := rec.Columns()
	const pad = "prefix"
	var values [][]byte
	var rows []int
	for r := 0; r < int(rec.NumRows()); r++ {
		buf, null, err := ce.EncodeChange([]byte(pad), arrs, r, kinds[r])
		if null {
			t.Fatalf("row %d: a change is never a null value", r)
		}
		if err != nil {
			var ee *table.EncodeError
			if !errors.As(err, &ee) {
				t.Errorf("row %d: error %T is not a *table.EncodeError: %v", r, err, err)
			}
			if string(buf) != pad {
				t.Errorf("row %d: a failed EncodeChange changed the buffer to %q", r, buf)
			}
			each(r, nil, err)
			continue
		}
		if !strings.HasPrefix(string(buf), pad) {
			t.Fatalf("row %d: EncodeChange overwrote the buffer: %q", r, buf)
		}
		v := buf[len(pad):]
		if kinds[r] == flow.KindInsert {
			if plain, _, err := enc.Encode(nil, arrs, r); err != nil || string(plain) != string(v) {
				t.Errorf("row %d: Encode gives %s, %v; EncodeChange +I %s", r, plain, err, v)
			}
		}
		each(r, v, nil)
		values = append(values, v)
		rows = append(rows, r)
	}
	back, backKinds := decodeChanges(t, mem, Format{}, cols, vals, values, func(k int, err error) {
		if err != nil {
			t.Errorf("encoded value %d does not decode: %v: %s", k, err, values[k])
		}
	})
	defer back.Release()
	if int(back.NumRows()) != len(rows) {
		t.Fatalf("%d encoded rows decode to %d rows", len(rows), back.NumRows())
	}
	for k, r := range rows {
		if want := written(kinds[r]); backKinds[k] != want {
			t.Errorf("row %d: %s written, decodes as %s, want %s", r, kinds[r], backKinds[k], want)
		}
		for c := range arrs {
			if want, got := formattest.Value(arrs[c], r), formattest.Value(back.Column(c), k); want != got {
				t.Errorf("row %d column %s: written as %s, decodes to %s, want %s", r, cols[c].Name, values[k], got, want)
			}
		}
	}
}
