package hotpath

import (
	"bytes"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/cputime"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// encodeTarget is the target for BenchmarkEncodeJSON: rows/s on one
// core.
const encodeTarget = 5_000_000

// ordersEncoder is the encoder a sink of the orders table in format gets:
// the table bound as any table is, the format's encoder of its physical
// columns with its options, as a sink will call table.NewEncoder.
func ordersEncoder(tb testing.TB, format string) table.Encoder {
	tb.Helper()
	stmts, err := parse.Parse("CREATE TABLE orders (" + ordersCols + ") WITH ('connector' = 'kafka-sharegroup', 'format' = '" + format + "', " +
		"'bootstrap.servers' = '127.0.0.1:9092', 'share-group-id' = 'bench', 'topic' = 'orders')")
	if err != nil {
		tb.Fatal(err)
	}
	b, err := table.Bind(stmts[0].(*table.CreateTable).Def)
	if err != nil {
		tb.Fatal(err)
	}
	cols, _ := b.Def.Schema.Physical()
	enc, err := table.NewEncoder(b.Format, cols, b.Options)
	if err != nil {
		tb.Fatal(err)
	}
	return enc
}

// BenchmarkEncodeJSON is a sink's per-row work for a json table: write one
// row of a decoded batch of orders as its record value, into a buffer the
// sink reuses. x-target is rows/cpu-s over encodeTarget (5M rows/s on one
// core); compare with BenchmarkDecodeJSON of the same run:
//
//	go test -run '^$' -bench 'JSON$' -benchmem ./bench/hotpath
func BenchmarkEncodeJSON(b *testing.B) {
	rec := decodeBatch(b, "json", ordersCols, records(batchRows))
	defer rec.Release()
	enc := ordersEncoder(b, "json")
	cols := rec.Columns()
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	cpu0, start := cputime.Process(), time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, _, err = enc.Encode(buf[:0], cols, i%batchRows); err != nil {
			b.Fatal(err)
		}
	}
	perRow(b, start, cpu0)
	// One core's worth: CPU time, which a shared machine disturbs less
	// than the wall clock.
	if c := cputime.Process() - cpu0; c > 0 {
		b.ReportMetric(float64(b.N)/c.Seconds()/encodeTarget, "x-target")
	}
}

// TestEncodeOrders keeps BenchmarkEncodeJSON honest: it writes what the
// benchmark's producer wrote, byte for byte, so the figure is for the
// whole value.
func TestEncodeOrders(t *testing.T) {
	recs := records(batchRows)
	rec := decodeBatch(t, "json", ordersCols, recs)
	defer rec.Release()
	enc := ordersEncoder(t, "json")
	var buf []byte
	for i, r := range recs {
		var err error
		buf, _, err = enc.Encode(buf[:0], rec.Columns(), i)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, r.Value) {
			t.Fatalf("row %d: encoded %s, the producer wrote %s", i, buf, r.Value)
		}
	}
}
