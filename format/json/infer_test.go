package json

import (
	"bytes"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// TestInfer checks the type proposed for each kind of sample, and that the
// decoder then decodes every sample with the proposed columns and options:
// a proposal the format cannot read would be worse than none.
func TestInfer(t *testing.T) {
	cases := []struct {
		name    string
		values  []string
		schema  string // the proposed columns, as CREATE TABLE writes them
		opts    string // the proposed options, key=value
		rows    int
		skipped int
	}{
		{"scalars", []string{
			`{"id": 1, "ok": true, "name": "a", "price": 12.5, "ratio": 0.123456, "big": 12345678901234567890, "e": 1e3, "n": null}`,
			`{"id": -2, "ok": false, "name": "b", "price": 3.25, "ratio": 2, "big": 1, "e": 2, "n": null}`,
		}, "`id` BIGINT, `ok` BOOLEAN, `name` STRING, `price` DECIMAL(10, 2), `ratio` DOUBLE, `big` DECIMAL(38, 0), `e` DOUBLE, `n` STRING", "", 2, 0},
		{"times", []string{
			`{"d": "2026-12-01", "ts": "2026-12-01 10:00:00.123", "ltz": "2026-12-01 10:00:00Z", "us": "2026-12-01 10:00:00.123456", "mixed": "2026-12-01"}`,
			`{"d": "2026-12-02", "ts": "2026-12-01 10:00:01", "ltz": "2026-12-01 10:00:00+02:00", "us": "2026-12-01 10:00:00", "mixed": "soon"}`,
		}, "`d` DATE, `ts` TIMESTAMP(3), `ltz` TIMESTAMP_LTZ(3), `us` TIMESTAMP(6), `mixed` STRING", "", 2, 0},
		{"iso wins, the other style is a string", []string{
			`{"a": "2026-12-01T10:00:00", "b": "2026-12-01T10:00:00.5Z", "c": "2026-12-01 10:00:00"}`,
		}, "`a` TIMESTAMP(3), `b` TIMESTAMP_LTZ(3), `c` STRING", OptTimestampStandard + "=" + TimestampISO8601, 1, 0},
		{"nested", []string{
			`{"user": {"id": 7, "tags": ["x", "y"]}, "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2, "gift": true}], "attrs": {"17": 1.5, "42": 2}}`,
			`{"user": {"id": 8, "tags": []}, "items": [], "attrs": {}}`,
		}, "`user` ROW<`id` BIGINT, `tags` ARRAY<STRING>>, `items` ARRAY<ROW<`sku` STRING, `qty` BIGINT, `gift` BOOLEAN>>, `attrs` MAP<STRING, DECIMAL(9, 1)>", "", 2, 0},
		{"a mix is a string", []string{`{"v": 1}`, `{"v": "one"}`, `{"v": {"x": 1}}`}, "`v` STRING", "", 3, 0},
		{"arrays of objects, skips", []string{`[{"a": 1}, {"a": 2}]`, `not json`, ``, `null`, `[1, 2]`, `{"a": 3} {"a": 4}`},
			"`a` BIGINT", "", 2, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			values := make([][]byte, len(c.values))
			for i, v := range c.values {
				values[i] = []byte(v)
			}
			inf := Infer(values)
			var got []string
			for _, col := range inf.Columns {
				got = append(got, col.String())
			}
			if g := strings.Join(got, ", "); g != c.schema {
				t.Errorf("columns:\n got %s\nwant %s", g, c.schema)
			}
			var opts []string
			for k, v := range inf.Options {
				opts = append(opts, k+"="+v)
			}
			if g := strings.Join(opts, ","); g != c.opts {
				t.Errorf("options: got %q, want %q", g, c.opts)
			}
			if inf.Rows != c.rows || inf.Skipped != c.skipped {
				t.Errorf("rows %d skipped %d, want %d and %d", inf.Rows, inf.Skipped, c.rows, c.skipped)
			}
			decodeAll(t, inf, values)
		})
	}
}

// inferredDecoder builds a decoder of the inferred columns and options and
// a record builder for them on a checked allocator, released and checked
// when the test ends.
func inferredDecoder(t *testing.T, inf Inferred) (table.Decoder, *array.RecordBuilder) {
	t.Helper()
	var kvs []options.KV
	for k, v := range inf.Options {
		kvs = append(kvs, options.KV{Key: k, Value: v})
	}
	vals, err := options.Parse(kvs, nil, Options)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Format{}.NewDecoder(inf.Columns, vals)
	if err != nil {
		t.Fatalf("the inferred columns make no decoder: %v", err)
	}
	mem := tabletest.CheckedAlloc(t)
	rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: inf.Columns}).Arrow())
	t.Cleanup(rb.Release)
	return dec, rb
}

// decodeAll decodes every value that Infer counted with the inferred columns
// and options, and fails on any error or a row count other than inf.Rows.
func decodeAll(t *testing.T, inf Inferred, values [][]byte) {
	t.Helper()
	dec, rb := inferredDecoder(t, inf)
	rows := 0
	for _, v := range values {
		n, err := dec.Decode(v, rb.Fields())
		if err == nil {
			rows += n
		}
	}
	if rows != inf.Rows {
		t.Errorf("the decoder read %d rows of the samples with the proposed columns, Infer counted %d", rows, inf.Rows)
	}
}

// FuzzInfer feeds arbitrary values, one per line, to Infer. Whatever they
// are, the proposal must be a valid table whose DDL parses back to itself,
// and the decoder must read every row Infer counted, with no error on a
// value Infer took.
func FuzzInfer(f *testing.F) {
	for _, s := range []string{
		`{"id": 1, "ok": true, "price": 12.5, "ts": "2026-12-01 10:00:00.123", "u": {"a": [1, 2]}, "m": {"1": 2}}`,
		`{"a": "2026-12-01T10:00:00Z", "b": "2026-12-01"}` + "\n" + `[{"a": null}, {"A": 1, "": 2}]`,
		`{"x": 1, "x": "one"}` + "\n" + `{"y": {}}` + "\n" + `{"z": 1e400, "w": 123456789012345678901234567890}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		values := bytes.Split(data, []byte("\n"))
		inf := Infer(values)
		if len(inf.Columns) == 0 {
			return
		}
		def := table.NewDefinition("t", inf.Columns, inf.Options)
		if err := def.Validate(); err != nil {
			t.Fatalf("inferred an invalid table: %v\n%s", err, def.DDL(nil))
		}
		sts, err := parse.Parse(def.DDL(nil))
		if err != nil {
			t.Fatalf("the inferred DDL does not parse: %v\n%s", err, def.DDL(nil))
		}
		if ct, ok := sts[0].(*table.CreateTable); len(sts) != 1 || !ok || !ct.Def.Equal(def) {
			t.Fatalf("the inferred DDL parses to something else: %v", sts)
		}
		dec, rb := inferredDecoder(t, inf)
		for i, v := range values {
			want := Infer([][]byte{v}).Rows
			n, err := dec.Decode(v, rb.Fields())
			if want > 0 && (err != nil || n != want) {
				t.Fatalf("value %d (%q): decoded %d rows, error %v; Infer counted %d", i, v, n, err, want)
			}
		}
	})
}
