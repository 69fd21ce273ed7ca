// Package hotpath benchmarks what kshare does per row once a record is out
// of Kafka, stage by stage, on the orders the benchmark suite reads: decode
// the JSON into Arrow, run the query (SELECT *, WHERE quantity > 1), write
// CSV the way `kshare -e ... --output csv` does. No broker is involved: an
// in-memory source hands out already decoded batches, so each figure is the
// CPU cost of one stage. scripts/bench.sh measures the whole path against a
// broker; these tell where its CPU time goes.
//
// One op is one row, so ns/op is per row; rows/s is reported too, and
// rows/cpu-s: rows per second of the process's CPU time (garbage collection
// included), which a shared machine disturbs less than wall-clock time.
//
//	go test -run '^$' -bench . -benchmem ./bench/hotpath
//
// The JSON decoder's own, more detailed benchmarks are in format/json.
package hotpath

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/bench/internal/orders"
	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/format/raw"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
)

// batchRows is the connector's default batch size ('scan.batch-size').
const batchRows = 1024

const ordersCols = "order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)"

// values returns the JSON of orders 0..n-1, as the benchmark loads them.
func values(n int) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = orders.At(int64(i)).Append(nil)
	}
	return vs
}

// memConnector is a source of already decoded batches: a stream of its
// table hands out memBatch rows times over, then ends. It lets the query
// and the output be measured without Kafka or decoding.
type memConnector struct{}

// memBatch is what every memConnector stream hands out; the benchmark sets
// it, with the rows it is to hand out in total, before it opens a stream.
var (
	memBatch arrow.RecordBatch
	memRows  int
)

func (memConnector) Name() string                  { return "bench-memory" }
func (memConnector) Options() *options.Set         { return &options.Set{Owner: "connector 'bench-memory'"} }
func (memConnector) Metadata() []table.MetadataKey { return nil }
func (memConnector) NewSource(*table.Bound) (table.Source, error) {
	return memSource{}, nil
}

type memSource struct{}

func (memSource) Open(context.Context, table.OpenOptions) (table.Stream, error) {
	return &memStream{left: memRows}, nil
}

type memStream struct{ left int }

func (s *memStream) Schema() *arrow.Schema { return memBatch.Schema() }
func (s *memStream) Stats() table.Stats    { return table.Stats{} }
func (s *memStream) Close() error          { return nil }

func (s *memStream) Next(context.Context) (table.Batch, error) {
	if s.left <= 0 {
		return table.Batch{}, io.EOF
	}
	n := min(s.left, int(memBatch.NumRows()))
	s.left -= n
	// The reader releases what it gets; the benchmark keeps its own
	// reference.
	rec := memBatch.NewSlice(0, int64(n))
	return table.Batch{Record: rec, Ack: noAck{}}, nil
}

type noAck struct{}

func (noAck) Mark(int, table.Disposition) {}
func (noAck) Done()                       {}
func (noAck) Abandon()                    {}

// decodeBatch decodes the first batchRows orders with format's decoder
// into a table of columns cols.
func decodeBatch(tb testing.TB, format table.Format, cols string, vals [][]byte) arrow.RecordBatch {
	tb.Helper()
	def, dec := bind(tb, format, cols)
	b := batch.NewBuilder(memory.NewGoAllocator(), def.Schema.Arrow(), nil, dec, len(vals))
	defer b.Release()
	for _, v := range vals {
		if _, err := b.Append(v); err != nil {
			tb.Fatal(err)
		}
	}
	return b.NewBatch()
}

// bind makes a table of cols in format and its decoder.
func bind(tb testing.TB, format table.Format, cols string) (*table.Definition, table.Decoder) {
	tb.Helper()
	stmts, err := parse.Parse(fmt.Sprintf("CREATE TABLE orders (%s) WITH ('connector' = 'bench-memory', 'format' = '%s')", cols, format.Name()))
	if err != nil {
		tb.Fatal(err)
	}
	def := stmts[0].(*table.CreateTable).Def
	phys, _ := def.Schema.Physical()
	// The format's defaults, as a table without format options gets them.
	vals, err := options.Parse(nil, nil, format.Options())
	if err != nil {
		tb.Fatal(err)
	}
	dec, err := format.NewDecoder(phys, vals)
	if err != nil {
		tb.Fatal(err)
	}
	return def, dec
}

func registry() *table.Registry {
	r := table.NewRegistry()
	r.RegisterConnector(memConnector{})
	r.RegisterFormat(json.Format{})
	r.RegisterFormat(raw.Format{})
	return r
}

// engine returns a kshare engine with the orders table over memConnector,
// handing out rows rows of rec.
func engine(tb testing.TB, rec arrow.RecordBatch, cols, format string, rows int) *kshare.Engine {
	tb.Helper()
	memBatch, memRows = rec, rows
	eng := kshare.New(kshare.WithRegistry(registry()))
	if _, err := eng.Exec(context.Background(), fmt.Sprintf("CREATE TABLE orders (%s) WITH ('connector' = 'bench-memory', 'format' = '%s')", cols, format)); err != nil {
		tb.Fatal(err)
	}
	return eng
}

// perRow reports rows/s and rows/cpu-s for b.N rows done since start and
// cpu0.
func perRow(b *testing.B, start time.Time, cpu0 time.Duration) {
	b.StopTimer()
	if d := time.Since(start); d > 0 {
		b.ReportMetric(float64(b.N)/d.Seconds(), "rows/s")
	}
	if c := processCPU() - cpu0; c > 0 {
		b.ReportMetric(float64(b.N)/c.Seconds(), "rows/cpu-s")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeJSON is the connector's per-record work of a json table:
// decode one value into the batch's builders.
func BenchmarkDecodeJSON(b *testing.B) {
	vals := values(batchRows)
	def, dec := bind(b, json.Format{}, ordersCols)
	bb := batch.NewBuilder(memory.NewGoAllocator(), def.Schema.Arrow(), nil, dec, batchRows)
	defer bb.Release()
	b.ReportAllocs()
	cpu0, start := processCPU(), time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := bb.Append(vals[i%batchRows]); err != nil {
			b.Fatal(err)
		}
		if bb.Full() {
			bb.NewBatch().Release()
		}
	}
	perRow(b, start, cpu0)
}

// runQuery runs sql over b.N rows of rec and reads every result batch.
func runQuery(b *testing.B, rec arrow.RecordBatch, cols, format, sql string) {
	eng := engine(b, rec, cols, format, b.N)
	b.ReportAllocs()
	cpu0, start := processCPU(), time.Now()
	b.ResetTimer()
	rows, err := eng.Query(context.Background(), sql)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	rows.Close()
	perRow(b, start, cpu0)
}

// BenchmarkSelectStar is the query layer's cost when it has nothing to do
// but hand batches on and settle them.
func BenchmarkSelectStar(b *testing.B) {
	rec := decodeBatch(b, json.Format{}, ordersCols, values(batchRows))
	defer rec.Release()
	runQuery(b, rec, ordersCols, "json", "SELECT * FROM orders")
}

// BenchmarkWhereQuantity is the filter of the suite's WHERE contestant,
// which keeps about 4 rows in 5.
func BenchmarkWhereQuantity(b *testing.B) {
	rec := decodeBatch(b, json.Format{}, ordersCols, values(batchRows))
	defer rec.Release()
	runQuery(b, rec, ordersCols, "json", "SELECT * FROM orders WHERE quantity > 1")
}

// shellCSV runs the shell's CSV output of sql over b.N rows of rec into
// io.Discard: what `kshare -e ... --output csv > /dev/null` does per row
// after the source.
func shellCSV(b *testing.B, rec arrow.RecordBatch, cols, format, sql string) {
	eng := engine(b, rec, cols, format, b.N)
	sh := sqlshell.New(shellEngine{eng}, sqlshell.Config{Stdout: io.Discard, Stderr: io.Discard})
	if err := sh.Run(context.Background(), "SET 'output' = 'csv'"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0, start := processCPU(), time.Now()
	b.ResetTimer()
	if err := sh.Run(context.Background(), sql); err != nil {
		b.Fatal(err)
	}
	perRow(b, start, cpu0)
}

// shellEngine adapts kshare.Engine to the shell, as cmd/kshare does: the
// shell's Query takes no options.
type shellEngine struct{ *kshare.Engine }

func (e shellEngine) Query(ctx context.Context, sql string) (*query.Rows, error) {
	return e.Engine.Query(ctx, sql)
}

// BenchmarkCSVOrders writes the orders' four columns (BIGINT, STRING, INT,
// DECIMAL(10, 2)) as CSV.
func BenchmarkCSVOrders(b *testing.B) {
	rec := decodeBatch(b, json.Format{}, ordersCols, values(batchRows))
	defer rec.Release()
	shellCSV(b, rec, ordersCols, "json", "SELECT * FROM orders")
}

// BenchmarkCSVRaw writes the raw contestant's one STRING column, the whole
// JSON value, which CSV has to quote and whose quotes it doubles.
func BenchmarkCSVRaw(b *testing.B) {
	rec := decodeBatch(b, raw.Format{}, "line STRING", values(batchRows))
	defer rec.Release()
	shellCSV(b, rec, "line STRING", "raw", "SELECT * FROM orders")
}

// TestMemorySourceRunsQueries keeps the benchmarks' plumbing honest in CI,
// where benchmarks do not run: every row of the source comes out of a
// query, and the filter keeps the rows it should.
func TestMemorySourceRunsQueries(t *testing.T) {
	vals := values(batchRows)
	rec := decodeBatch(t, json.Format{}, ordersCols, vals)
	defer rec.Release()
	for _, c := range []struct {
		sql  string
		want int64
	}{
		{"SELECT * FROM orders", 3 * batchRows},
		{"SELECT * FROM orders WHERE quantity > 1", 3 * orders.CountQuantityAbove(batchRows, 1)},
	} {
		eng := engine(t, rec, ordersCols, "json", 3*batchRows)
		rows, err := eng.Query(context.Background(), c.sql)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		for rows.Next() {
			got += rows.RecordBatch().NumRows()
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if got != c.want {
			t.Errorf("%s: %d rows, want %d", c.sql, got, c.want)
		}
	}
}
