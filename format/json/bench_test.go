package json

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/types"
)

// The benchmarks come in pairs over the same rows: ours (Decode, one value
// per record as the connector calls it, through batch.Builder) and arrow-go's array.NewJSONReader
// over the rows joined by newlines. One op is one row, so ns/op and
// allocs/op are per row; rows/s and allocs/row (exact, not rounded) are
// reported as metrics, and so is rows/cpu-s: rows per second of CPU time of
// the benchmark's own thread, which a machine shared with other work
// disturbs far less than wall-clock time (it leaves out the garbage
// collector's background workers, for both decoders alike). Run them
// together to compare within one run:
//
//	go test -run '^$' -bench . -benchmem ./format/...

const benchBatch = 1024

const ordersSchema = "order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)"

func orderRows(n int) [][]byte {
	rows := make([][]byte, n)
	for i := range rows {
		rows[i] = fmt.Appendf(nil, `{"order_id":%d,"customer_id":"C%03d","quantity":%d,"price":%d.%02d}`,
			1001+i, i%1000, 1+i%9, 5+i*7%200, i*13%100)
	}
	return rows
}

const nestedSchema = "id BIGINT, items ARRAY<ROW<sku STRING, qty INT, price DECIMAL(10, 2)>>, attrs MAP<STRING, STRING>"

// nestedRows returns the rows in Flink's JSON (maps as objects) and, for
// arrow-go's reader, the same data with maps as arrays of key/value
// objects, the only shape that reader takes for a map.
func nestedRows(n int) (ours, arrows [][]byte) {
	for i := range n {
		items := fmt.Sprintf(`[{"sku":"A%d","qty":%d,"price":%d.%02d},{"sku":"B%d","qty":%d,"price":%d.5}]`,
			i%100, 1+i%5, 1+i%50, i%100, i%37, 1+i%3, 10+i%20)
		ours = append(ours, fmt.Appendf(nil, `{"id":%d,"items":%s,"attrs":{"channel":"web","region":"eu-%d"}}`, i, items, i%4))
		arrows = append(arrows, fmt.Appendf(nil, `{"id":%d,"items":%s,"attrs":[{"key":"channel","value":"web"},{"key":"region","value":"eu-%d"}]}`, i, items, i%4))
	}
	return ours, arrows
}

const eventsSchema = "id BIGINT, d DATE, t TIME(3), ts TIMESTAMP(3), lt TIMESTAMP_LTZ(6), amount DECIMAL(20, 4)"

// eventRows holds a value of every temporal type a row, and a DECIMAL with
// more fractional digits than its scale: rounding it takes the exact
// decimal parser, not the fast path the orders' prices take.
func eventRows(n int) [][]byte {
	rows := make([][]byte, n)
	for i := range rows {
		d := fmt.Sprintf("20%02d-%02d-%02d", 10+i%20, 1+i%12, 1+i%28)
		c := fmt.Sprintf("%02d:%02d:%02d", i%24, i%60, i*7%60)
		rows[i] = fmt.Appendf(nil, `{"id":%d,"d":"%s","t":"%s.%03d","ts":"%s %s.%03d","lt":"%s %s.%06dZ","amount":%d.%06d}`,
			i, d, c, i%1000, d, c, i*3%1000, d, c, i*7919%1000000, i%100000, i*31%1000000)
	}
	return rows
}

func BenchmarkDecodeOrders(b *testing.B) {
	benchDecode(b, ordersSchema, orderRows(4096))
}

func BenchmarkArrowJSONReaderOrders(b *testing.B) {
	benchArrowReader(b, ordersSchema, orderRows(4096))
}

func BenchmarkDecodeNested(b *testing.B) {
	ours, _ := nestedRows(4096)
	benchDecode(b, nestedSchema, ours)
}

func BenchmarkArrowJSONReaderNested(b *testing.B) {
	_, arrows := nestedRows(4096)
	benchArrowReader(b, nestedSchema, arrows)
}

func BenchmarkDecodeEvents(b *testing.B) {
	benchDecode(b, eventsSchema, eventRows(4096))
}

// The encoding benchmarks write the rows the decoding ones read, one row per
// op, as a sink calls the encoder: into a buffer it reuses, the columns of
// one decoded batch.
func BenchmarkEncodeOrders(b *testing.B) {
	benchEncode(b, ordersSchema, orderRows(benchBatch))
}

func BenchmarkEncodeNested(b *testing.B) {
	ours, _ := nestedRows(benchBatch)
	benchEncode(b, nestedSchema, ours)
}

func BenchmarkEncodeEvents(b *testing.B) {
	benchEncode(b, eventsSchema, eventRows(benchBatch))
}

func benchEncode(b *testing.B, schema string, rows [][]byte) {
	cols, dec, enc := formattest.NewCodec(b, Format{}, schema)
	rec, err := formattest.DecodeAll(memory.NewGoAllocator(), dec, cols, rows)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	arrs := rec.Columns()
	buf := make([]byte, 0, 512)
	var bytesOut int64
	for i := range rows {
		if buf, _, err = enc.Encode(buf[:0], arrs, i); err != nil {
			b.Fatal(err)
		}
		bytesOut += int64(len(buf))
	}
	b.SetBytes(bytesOut / int64(len(rows)))
	m := startMeasure(b)
	for i := 0; i < b.N; i++ {
		if buf, _, err = enc.Encode(buf[:0], arrs, i%len(rows)); err != nil {
			b.Fatal(err)
		}
	}
	m.stop(b.N)
}

func benchSchema(b *testing.B, schema string) ([]types.Column, *arrow.Schema) {
	cols, err := formattest.ParseColumns(schema)
	if err != nil {
		b.Fatal(err)
	}
	return cols, (&types.Schema{Columns: cols}).Arrow()
}

func benchDecode(b *testing.B, schema string, rows [][]byte) {
	cols, dec := formattest.NewDecoder(b, Format{}, schema)
	as := (&types.Schema{Columns: cols}).Arrow()
	// batch.Builder is how values meet a decoder outside the connector; like
	// the connector it reserves a batch's worth of rows up front.
	bb := batch.NewBuilder(memory.NewGoAllocator(), as, nil, dec, benchBatch)
	defer bb.Release()
	var bytesIn int64
	for _, r := range rows {
		bytesIn += int64(len(r))
	}
	b.SetBytes(bytesIn / int64(len(rows)))
	m := startMeasure(b)
	for i := 0; i < b.N; i++ {
		if _, err := bb.Append(rows[i%len(rows)]); err != nil {
			b.Fatal(err)
		}
		if bb.Full() {
			bb.NewBatch().Release()
		}
	}
	m.stop(b.N)
}

func benchArrowReader(b *testing.B, schema string, rows [][]byte) {
	_, as := benchSchema(b, schema)
	data := bytes.Join(rows, []byte("\n"))
	mem := memory.NewGoAllocator()
	b.SetBytes(int64(len(data)) / int64(len(rows)))
	m := startMeasure(b)
	n := 0
	for n < b.N {
		r := array.NewJSONReader(bytes.NewReader(data), as, array.WithChunk(benchBatch), array.WithAllocator(mem))
		for n < b.N && r.Next() {
			n += int(r.RecordBatch().NumRows())
		}
		if err := r.Err(); err != nil {
			b.Fatal(err)
		}
		r.Release()
	}
	m.stop(n)
}

type measure struct {
	b       *testing.B
	mallocs uint64
	cpu     time.Duration
}

// startMeasure pins the benchmark to its thread, so that the thread's CPU
// time is the decoder's, and resets the timer.
func startMeasure(b *testing.B) *measure {
	runtime.LockOSThread()
	b.ReportAllocs()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := &measure{b: b, mallocs: ms.Mallocs}
	b.ResetTimer()
	m.cpu = threadCPU()
	return m
}

func (m *measure) stop(rows int) {
	cpu := threadCPU() - m.cpu
	m.b.StopTimer()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.UnlockOSThread()
	m.b.ReportMetric(float64(rows)/m.b.Elapsed().Seconds(), "rows/s")
	if cpu > 0 {
		m.b.ReportMetric(float64(rows)/cpu.Seconds(), "rows/cpu-s")
	}
	m.b.ReportMetric(float64(ms.Mallocs-m.mallocs)/float64(rows), "allocs/row")
}
