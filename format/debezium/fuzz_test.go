package debezium

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

var fuzzSchemas = []string{
	"id INT NOT NULL, name STRING, price DECIMAL(10, 2)",
	"b BOOLEAN NOT NULL, i8 TINYINT, i64 BIGINT, d DOUBLE, dec DECIMAL(38, 10), dt DATE, t3 TIME(3), ts TIMESTAMP(9), ltz TIMESTAMP_LTZ(3), bin BYTES",
	"items ARRAY<ROW<sku STRING, qty INT NOT NULL>>, attrs MAP<STRING, INT>, r ROW<a ROW<b INT NOT NULL>> NOT NULL",
}

var fuzzOptions = [][]options.KV{
	nil,
	{{Key: OptIgnoreParseErrors, Value: "true"}},
	{{Key: OptSchemaInclude, Value: "true"}},
	{{Key: OptSchemaInclude, Value: "true"}, {Key: OptIgnoreParseErrors, Value: "true"}, {Key: OptTimestampStandard, Value: "ISO-8601"}},
}

// FuzzDecode feeds arbitrary values to the decoder. The first byte picks a
// schema and options (testdata/fuzz/FuzzDecode holds the seeds); the rest
// is split on newlines into values, decoded one after another into the
// same builders. DecodeChanges must never panic; on an error it appends
// nothing, neither rows nor kinds, and returns a *table.DecodeError (with
// ErrSkipped exactly when the options say to skip); otherwise it appends
// n kinds for n rows (+I or -D alone, or -U then +U) and the builders grew
// by n rows. Every batch must hold what its columns promise, and its rows
// must write and read back.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		k := int(data[0])
		schema := fuzzSchemas[k%len(fuzzSchemas)]
		kvs := fuzzOptions[k/len(fuzzSchemas)%len(fuzzOptions)]
		skips := slices.Contains(kvs, options.KV{Key: OptIgnoreParseErrors, Value: "true"})
		cols, dec := formattest.NewDecoder(t, Format{}, schema, kvs...)
		changes := dec.(table.ChangeDecoder)
		// The rows are written without a schema, and read back so.
		var wkvs []options.KV
		for _, kv := range kvs {
			if kv.Key != OptSchemaInclude {
				wkvs = append(wkvs, kv)
			}
		}
		wvals, err := options.Parse(wkvs, nil, Options)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := table.NewEncoder(Format{}, cols, wvals)
		if err != nil {
			t.Fatal(err)
		}
		mem := tabletest.CheckedAlloc(t)
		rb := array.NewRecordBuilder(mem, (&types.Schema{Columns: cols}).Arrow())
		defer rb.Release()
		var kinds []flow.RowKind
		rows := 0
		check := func() {
			rec := rb.NewRecordBatch()
			defer rec.Release()
			if err := formattest.CheckBatch(rec, cols); err != nil {
				t.Fatal(err)
			}
			roundTrip(t, mem, enc, cols, wvals, rec, kinds, func(row int, v []byte, err error) {
				if err != nil {
					t.Errorf("row %d decoded but does not encode: %v", row, err)
				}
			})
			kinds, rows = kinds[:0], 0
		}
		for i, v := range bytes.Split(data[1:], []byte("\n")) {
			before := formattest.Lengths(rb.Fields())
			had := slices.Clone(kinds)
			n, out, err := changes.DecodeChanges(v, rb.Fields(), kinds)
			if err != nil {
				if err := formattest.CheckRefused(err, n, before, rb.Fields()); err != nil {
					t.Fatalf("value %d: %v", i, err)
				}
				if errors.Is(err, table.ErrSkipped) != skips {
					t.Fatalf("value %d: skipped is %v with options %v: %v", i, errors.Is(err, table.ErrSkipped), kvs, err)
				}
				if !slices.Equal(out, had) {
					t.Fatalf("value %d: kinds %v -> %v with an error", i, had, out)
				}
				continue
			}
			if len(out) != len(had)+n || !slices.Equal(out[:len(had)], had) {
				t.Fatalf("value %d: %d rows, kinds %v -> %v", i, n, had, out)
			}
			switch added := out[len(had):]; {
			case n == 0,
				n == 1 && (added[0] == flow.KindInsert || added[0] == flow.KindDelete),
				n == 2 && added[0] == flow.KindUpdateBefore && added[1] == flow.KindUpdateAfter:
			default:
				t.Fatalf("value %d: a change gave the rows %v", i, added)
			}
			kinds = out
			rows += n
			if err := formattest.Aligned(rb.Fields(), rows); err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			if i%3 == 2 {
				check()
			}
		}
		check()
	})
}
