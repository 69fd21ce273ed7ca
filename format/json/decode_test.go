package json

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestDecoder builds a decoder and a record builder over schema, with the
// json options given as key=value pairs, on a checked allocator that must be
// empty when the test ends.
func newTestDecoder(t *testing.T, schema string, kv ...string) (table.Decoder, *array.RecordBuilder) {
	t.Helper()
	mem := tabletest.CheckedAlloc(t)
	var kvs []options.KV
	for _, p := range kv {
		k, v, _ := strings.Cut(p, "=")
		kvs = append(kvs, options.KV{Key: k, Value: v})
	}
	cols, dec := formattest.NewDecoder(t, Format{}, schema, kvs...)
	rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
	t.Cleanup(rb.Release)
	return dec, rb
}

// TestAllOrNothing feeds good and bad values in turn and checks after each
// that a failed value left every builder, children and data buffers
// included, exactly as it was, and that the batch holds the good rows only.
func TestAllOrNothing(t *testing.T) {
	dec, rb := newTestDecoder(t, "id INT, name STRING, items ARRAY<ROW<sku STRING, qty INT>>, attrs MAP<STRING, INT>, r ROW<a ROW<b INT NOT NULL>>")
	values := []struct {
		v    string
		rows int
	}{
		{`{"id":1,"name":"one","items":[{"sku":"a","qty":1}],"attrs":{"k":1},"r":{"a":{"b":1}}}`, 1},
		// The last field fails after every other column has been read.
		{`{"id":2,"name":"two","items":[{"sku":"b","qty":2}],"attrs":{"k":2},"r":{"a":{"b":"x"}}}`, 0},
		// The third element of an array fails after two good ones.
		{`[{"id":3,"name":"three"},{"id":4,"items":[{"sku":"c"}]},{"id":5,"items":[{"sku":"d","qty":1},{"qty":"x"}]}]`, 0},
		// A nested array fails half way through its elements.
		{`{"id":6,"name":"six","items":[{"sku":"e","qty":1},{"sku":"f","qty":2},{"sku":7,"qty":"x"}]}`, 0},
		// A map fails on its third entry.
		{`{"id":7,"name":"seven","attrs":{"a":1,"b":2,"c":"x"}}`, 0},
		// Not JSON after a long good prefix.
		{`{"id":8,"name":"eight","items":[{"sku":"g","qty":1}],"attrs":{"k":1},"r":{"a":{"b":1}}`, 0},
		{`[{"id":9},{"id":10,"items":[{"sku":"h","qty":3}],"attrs":{"z":26}}]`, 2},
	}
	total := 0
	for i, c := range values {
		before := formattest.Lengths(rb.Fields())
		n, err := dec.Decode([]byte(c.v), rb.Fields())
		if n != c.rows {
			t.Fatalf("value %d: %d rows, want %d (err %v)", i, n, c.rows, err)
		}
		if (err != nil) != (c.rows == 0) {
			t.Fatalf("value %d: error %v", i, err)
		}
		if err != nil {
			if after := formattest.Lengths(rb.Fields()); !slices.Equal(before, after) {
				t.Fatalf("value %d: a failed Decode changed the builders: %v -> %v", i, before, after)
			}
		}
		total += n
		if err := formattest.Aligned(rb.Fields(), total); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	var got strings.Builder
	formattest.PrintBatch(&got, rec)
	want := `id | name | items | attrs | r
1 | "one" | [{sku: "a", qty: 1}] | map["k": 1] | {a: {b: 1}}
9 | null | null | null | null
10 | null | [{sku: "h", qty: 3}] | map["z": 26] | null
`
	if got.String() != want {
		t.Errorf("batch:\n%s\nwant:\n%s", got.String(), want)
	}
}

func TestErrorKinds(t *testing.T) {
	dec, rb := newTestDecoder(t, "order_id BIGINT, items ARRAY<ROW<qty INT>>")
	_, err := dec.Decode([]byte(`{"order_id":"two"}`), rb.Fields())
	var de *table.DecodeError
	if !errors.As(err, &de) || de.Field != "order_id" || de.Msg != `expected BIGINT, got "two"` {
		t.Errorf("got %#v", err)
	}
	if errors.Is(err, table.ErrSkipped) {
		t.Errorf("a decode error must not be ErrSkipped")
	}
	_, err = dec.Decode([]byte(`{"items":[{"qty":1},{"qty":1.5e}]}`), rb.Fields())
	if !errors.As(err, &de) || de.Field != "" || !strings.HasPrefix(de.Msg, "invalid JSON at byte 31 of the value") {
		t.Errorf("got %#v", err)
	}
	_, err = dec.Decode([]byte(`{"items":[{"qty":1},{"qty":{}}]}`), rb.Fields())
	if !errors.As(err, &de) || de.Field != "items[1].qty" || de.Msg != "expected INT, got an object" {
		t.Errorf("got %#v", err)
	}

	dec, rb = newTestDecoder(t, "a INT NOT NULL", "json.ignore-parse-errors=true")
	for _, v := range []string{`nope`, `{"a":"x"}`, `{"a":null}`, `{}`} {
		n, err := dec.Decode([]byte(v), rb.Fields())
		if n != 0 || !errors.Is(err, table.ErrSkipped) {
			t.Errorf("%s: %d, %v: want ErrSkipped", v, n, err)
		}
		// The reason stays reachable for the connector's log.
		if !errors.As(err, &de) {
			t.Errorf("%s: %v does not carry a DecodeError", v, err)
		}
	}
}

func TestNewDecoderErrors(t *testing.T) {
	vals, err := options.Parse(nil, nil, Options)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cols []types.Column
		want string
	}{
		{[]types.Column{{Name: "m", Type: types.MapType(&types.DataType{Kind: types.Array, Elem: types.IntType()}, types.IntType())}},
			"format 'json' cannot decode column `m` of type MAP<ARRAY<INT>, INT>: a JSON object's keys are strings, which cannot be read as ARRAY<INT>"},
		{[]types.Column{{Name: "a", Type: types.IntType()}, {Name: "a", Type: types.IntType()}},
			"format 'json': column `a` appears twice"},
		{[]types.Column{{Name: "offset", Type: types.BigIntType(), Metadata: true}},
			"format 'json': column `offset` is a metadata column; the format decodes physical columns only"},
		{[]types.Column{{Name: "d", Type: types.DecimalType(40, 2)}},
			"format 'json' cannot decode column `d` of type DECIMAL(40, 2): DECIMAL needs 1 <= precision <= 38 and 0 <= scale <= precision"},
		{[]types.Column{{Name: "t", Type: &types.DataType{Kind: types.Timestamp, Precision: 12}}},
			"format 'json' cannot decode column `t` of type TIMESTAMP(12): the precision must be between 0 and 9"},
	} {
		_, err := Format{}.NewDecoder(c.cols, vals)
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v\nwant %s", err, c.want)
		}
	}
}

func TestRegistered(t *testing.T) {
	formattest.CheckRegistered(t, Format{})
}

// TestRebind moves a decoder between record builders, as a caller that
// replaces its builder would.
func TestRebind(t *testing.T) {
	dec, rb1 := newTestDecoder(t, "a INT, r ROW<s STRING>")
	mem := tabletest.CheckedAlloc(t)
	rb2 := array.NewRecordBuilder(mem, rb1.Schema())
	defer rb2.Release()
	for i, rb := range []*array.RecordBuilder{rb1, rb2, rb1} {
		if _, err := dec.Decode([]byte(`{"a":1,"r":{"s":"x"}}`), rb.Fields()); err != nil {
			t.Fatal(i, err)
		}
	}
	if rb1.Field(0).Len() != 2 || rb2.Field(0).Len() != 1 {
		t.Errorf("lengths %d and %d", rb1.Field(0).Len(), rb2.Field(0).Len())
	}
}

// TestWrongBuilders: builders that do not match the schema are the caller's
// bug, reported by a panic that says what went wrong.
func TestWrongBuilders(t *testing.T) {
	dec, _ := newTestDecoder(t, "a INT")
	mem := tabletest.CheckedAlloc(t)
	b := array.NewStringBuilder(mem)
	defer b.Release()
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.Contains(s, "cannot hold INT") {
			t.Errorf("recovered %v", r)
		}
	}()
	dec.Decode([]byte(`{"a":1}`), []array.Builder{b})
}
