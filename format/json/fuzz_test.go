package json

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

var fuzzSchemas = []string{
	ordersSchema,
	"b BOOLEAN NOT NULL, i8 TINYINT, i16 SMALLINT, i32 INT, f FLOAT, d DOUBLE, dec DECIMAL(38, 10), dec2 DECIMAL(5, 2) NOT NULL, " +
		"dt DATE, t0 TIME(0), t3 TIME(3), t9 TIME(9), ts TIMESTAMP(9), ltz TIMESTAMP_LTZ(3), ts0 TIMESTAMP(0)",
	"items ARRAY<ROW<sku STRING, qty INT NOT NULL, tags ARRAY<STRING NOT NULL>>>, attrs MAP<STRING, ARRAY<INT NOT NULL>>, " +
		"r ROW<a ROW<b INT NOT NULL>, c MAP<INT, STRING>> NOT NULL",
	"s STRING, c CHAR(3) NOT NULL, bin BYTES, fix BINARY(2), m MAP<DATE, DECIMAL(5, 2)>, m2 MAP<BOOLEAN, BYTES NOT NULL>, ts TIMESTAMP_LTZ(6)",
}

var fuzzOptions = [][]options.KV{
	nil,
	{{Key: OptIgnoreParseErrors, Value: "true"}},
	{{Key: OptFailOnMissingField, Value: "true"}},
	{{Key: OptTimestampStandard, Value: TimestampISO8601}, {Key: OptIgnoreParseErrors, Value: "true"}},
}

// FuzzJSONDecode feeds arbitrary values to the decoder. The first byte picks
// a schema and options; the rest is split on newlines into values, decoded
// one after another into the same builders. The decoder must never panic,
// must append all of a value or nothing, must keep the builders aligned,
// must return only the errors its contract names, must build batches that
// arrow-go validates, and must not leak.
func FuzzJSONDecode(f *testing.F) {
	for _, s := range []string{
		"\x00" + `{"order_id":1001,"customer_id":"C001","quantity":2,"price":25.50}`,
		"\x04" + `{"order_id":1,"quantity":"two"}` + "\n" + `[{"order_id":2},{"price":1e-3}]`,
		"\x01" + `{"b":true,"i8":-128,"dec":"12345678901234567890.0123456789","dec2":999.995,"dt":"2026-12-02","t3":"10:15:30.123","ts":"2026-12-02 10:15:30.123456789","ltz":"2026-12-02 10:15:30.123Z"}`,
		"\x02" + `{"items":[{"sku":"a","qty":1,"tags":["x"]},null],"attrs":{"k":[1,2]},"r":{"a":{"b":1},"c":{"1":"one"}}}`,
		"\x06" + `{"items":[{"sku":"a","qty":"x"}],"r":{"a":null,"c":{"x":"y"}}}`,
		"\x03" + `{"s":"\ud83d\ude00\n","c":"abc","bin":"AAE=","fix":"AAE=","m":{"2026-12-02":1.5},"m2":{"true":"AA=="},"ts":"2026-12-02 10:15:30.123456+01:00"}`,
		"\x0b" + `{"s":"x","c":"y","ts":"2026-12-02T10:15:30Z"}` + "\n" + `not json` + "\n" + `[1,{"s":2}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		schema := fuzzSchemas[int(data[0])%len(fuzzSchemas)]
		kvs := fuzzOptions[int(data[0])/len(fuzzSchemas)%len(fuzzOptions)]
		cols, dec := formattest.NewDecoder(t, Format{}, schema, kvs...)
		skips := slices.Contains(kvs, options.KV{Key: OptIgnoreParseErrors, Value: "true"})
		mem := tabletest.CheckedAlloc(t)
		rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
		defer rb.Release()
		rows := 0
		for k, v := range bytes.Split(data[1:], []byte("\n")) {
			before := formattest.Lengths(rb.Fields())
			n, err := dec.Decode(v, rb.Fields())
			if err != nil {
				if err := formattest.CheckRefused(err, n, before, rb.Fields()); err != nil {
					t.Fatalf("value %d: %v", k, err)
				}
				if errors.Is(err, table.ErrSkipped) != skips {
					t.Fatalf("value %d: skipped is %v with options %v: %v", k, errors.Is(err, table.ErrSkipped), kvs, err)
				}
			}
			rows += n
			if err := formattest.Aligned(rb.Fields(), rows); err != nil {
				t.Fatalf("value %d: %v", k, err)
			}
			if k%3 == 2 {
				checkFuzzBatch(t, rb, cols)
				rows = 0
			}
		}
		checkFuzzBatch(t, rb, cols)
	})
}

func checkFuzzBatch(t *testing.T, rb *array.RecordBuilder, cols []types.Column) {
	t.Helper()
	rec := rb.NewRecordBatch()
	defer rec.Release()
	if err := formattest.CheckBatch(rec, cols); err != nil {
		t.Fatal(err)
	}
}
