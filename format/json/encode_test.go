package json

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// encodeOne builds one row of schema with fill, encodes it with options
// kvs, and returns the value or the error.
func encodeOne(t *testing.T, schema string, fill func(rb *array.RecordBuilder), kvs ...options.KV) (string, error) {
	t.Helper()
	cols, err := formattest.ParseColumns(schema)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := options.Parse(kvs, nil, Options)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Format{}.NewEncoder(cols, vals)
	if err != nil {
		t.Fatal(err)
	}
	rb := array.NewRecordBuilder(tabletest.CheckedAlloc(t), (&types.Schema{Columns: cols}).Arrow())
	defer rb.Release()
	fill(rb)
	rec := rb.NewRecordBatch()
	defer rec.Release()
	out, null, err := enc.Encode([]byte("x"), rec.Columns(), 0)
	if null {
		t.Errorf("a JSON value is never null")
	}
	if err != nil && string(out) != "x" {
		t.Errorf("a failed Encode left %q in the buffer", out)
	}
	return string(out[1:]), err
}

// TestGolden runs testdata/*.txt (values in, rows or errors out) and
// testdata/encode/*.txt (rows decoded, encoded and decoded back).
func TestGolden(t *testing.T) { formattest.RunGoldens(t, Format{}) }

// TestEncodeRefuses covers rows that no JSON value decodes to, so that the
// goldens cannot hold them: the encoder says what it cannot write, with the
// path of the value, rather than write what would not read back.
func TestEncodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		fill         func(rb *array.RecordBuilder)
		kvs          []options.KV
		field, want  string // want: the error's message, or the value
	}{
		{name: "date after 9999", schema: "d DATE", fill: func(rb *array.RecordBuilder) {
			rb.Field(0).(*array.Date32Builder).Append(arrow.Date32(calendar.DaysFromCivil(10000, 1, 1)))
		}, field: "d", want: "the year 10000 is outside 0000..9999, the years a JSON date is written with"},
		{name: "timestamp before year 0", schema: "r ROW<ts TIMESTAMP(3)>", fill: func(rb *array.RecordBuilder) {
			st := rb.Field(0).(*array.StructBuilder)
			st.Append(true)
			st.FieldBuilder(0).(*array.TimestampBuilder).Append(arrow.Timestamp((calendar.DaysFromCivil(0, 1, 1)*86400 - 1) * 1000))
		}, field: "r.ts", want: "the year -1 is outside 0000..9999, the years a JSON date is written with"},
		{name: "time beyond a day", schema: "t TIME(0)", fill: func(rb *array.RecordBuilder) {
			rb.Field(0).(*array.Time32Builder).Append(86400)
		}, field: "t", want: "the TIME value 86400 (in units of 1000000000ns) is outside one day"},
		{name: "invalid UTF-8", schema: "l ARRAY<STRING>", fill: func(rb *array.RecordBuilder) {
			lb := rb.Field(0).(*array.ListBuilder)
			lb.Append(true)
			sb := lb.ValueBuilder().(*array.StringBuilder)
			sb.Append("ok")
			sb.BinaryBuilder.Append([]byte("a\xffb"))
		}, field: "l[1]", want: "a string holds invalid UTF-8 at byte 1 (0xff); JSON text is UTF-8"},
		{name: "bad value names its key", schema: "m MAP<INT, DATE>", fill: func(rb *array.RecordBuilder) {
			mb := rb.Field(0).(*array.MapBuilder)
			mb.Append(true)
			mb.KeyBuilder().(*array.Int32Builder).Append(7)
			mb.ItemBuilder().(*array.Date32Builder).Append(arrow.Date32(calendar.DaysFromCivil(12000, 1, 1)))
		}, field: `m["7"]`, want: "the year 12000 is outside 0000..9999, the years a JSON date is written with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := encodeOne(t, tc.schema, tc.fill, tc.kvs...)
			if tc.field == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %s, %v; want %s", got, err, tc.want)
				}
				return
			}
			var ee *table.EncodeError
			if !errors.As(err, &ee) {
				t.Fatalf("got %q, error %v; want a *table.EncodeError", got, err)
			}
			if ee.Field != tc.field || ee.Msg != tc.want {
				t.Errorf("got field %q: %s\nwant field %q: %s", ee.Field, ee.Msg, tc.field, tc.want)
			}
		})
	}
}

// fuzzEncodeOptions are the writing options the round trip is tried with;
// each is added to the reading options fuzzOptions picks.
var fuzzEncodeOptions = [][]options.KV{
	nil,
	{{Key: OptEncodeDecimalAsPlainNumber, Value: "true"}},
	{{Key: OptEncodeIgnoreNullFields, Value: "true"}},
}

// FuzzRoundTrip decodes arbitrary values; every row that decodes must
// encode, and the encoded value must decode to the same row. The first
// byte picks the schema and the options, as in FuzzJSONDecode; the rest is
// split on newlines into values.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{
		"\x00" + `{"order_id":1001,"customer_id":"C001","quantity":2,"price":25.50}`,
		"\x01" + `{"b":true,"i8":-128,"dec":"12345678901234567890.0123456789","dec2":999.99,"dt":"0000-01-01","t9":"23:59:59.999999999","ts":"2262-04-11 23:47:16.854775807","ltz":"2026-12-02 10:15:30.123+01:00","f":"NaN","d":-0.0}`,
		"\x0e" + `{"items":[{"sku":"a\u0000\"","qty":1,"tags":["x"]},null],"attrs":{"k":[1,2],"":null},"r":{"a":{"b":1},"c":{"-1":"one"}}}`,
		"\x13" + `{"s":{"nested":[1,"\ud83d\ude00"]},"c":"abc","bin":"AAE","fix":"AAE=","m":{"2026-12-02":1e-2},"m2":{"TRUE":"AA=="},"ts":"2026-12-02T10:15:30.123456Z"}` + "\n" + `[{"s":1},null,{"s":true}]`,
		"\x1d" + `{"dec":0.0000000001,"dec2":-0.01,"t0":"00:00","ts0":"1969-12-31 23:59:59"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		k := int(data[0])
		schema := fuzzSchemas[k%len(fuzzSchemas)]
		kvs := fuzzOptions[k/len(fuzzSchemas)%len(fuzzOptions)]
		ekvs := fuzzEncodeOptions[k/(len(fuzzSchemas)*len(fuzzOptions))%len(fuzzEncodeOptions)]
		if slices.Contains(kvs, options.KV{Key: OptFailOnMissingField, Value: "true"}) &&
			slices.Contains(ekvs, options.KV{Key: OptEncodeIgnoreNullFields, Value: "true"}) {
			// A field left out for being NULL is missing to a reader that
			// fails on missing fields: the pair does not round-trip, by design.
			ekvs = nil
		}
		cols, dec, enc := formattest.NewCodec(t, Format{}, schema, append(slices.Clone(kvs), ekvs...)...)
		mem := tabletest.CheckedAlloc(t)
		for _, v := range bytes.Split(data[1:], []byte("\n")) {
			rec, err := formattest.DecodeAll(mem, dec, cols, [][]byte{v})
			if err != nil {
				continue
			}
			_, err = formattest.RoundTrip(mem, enc, dec, cols, rec, func(row int, v []byte, err error) {
				if err != nil {
					t.Errorf("row %d decoded from the value but does not encode: %v", row, err)
				}
			})
			rec.Release()
			if err != nil {
				t.Fatalf("value %q: %v", v, err)
			}
		}
	})
}

// TestEncodeKeyFields is how 'key.format' with 'key.fields' will use an
// encoder: built over the key columns alone, and given those columns'
// arrays picked out of the batch, in the order 'key.fields' names them.
func TestEncodeKeyFields(t *testing.T) {
	cols, dec := formattest.NewDecoder(t, Format{}, ordersSchema)
	mem := tabletest.CheckedAlloc(t)
	rec, err := formattest.DecodeAll(mem, dec, cols, [][]byte{[]byte(`{"order_id":1001,"customer_id":"C042","quantity":2,"price":25.50}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	vals, err := options.Parse(nil, nil, Options)
	if err != nil {
		t.Fatal(err)
	}
	key, err := table.NewEncoder(Format{}, []types.Column{cols[1], cols[0]}, vals)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := key.Encode(nil, []arrow.Array{rec.Column(1), rec.Column(0)}, 0)
	if want := `{"customer_id":"C042","order_id":1001}`; err != nil || string(out) != want {
		t.Errorf("got %s, %v; want %s", out, err, want)
	}
}
