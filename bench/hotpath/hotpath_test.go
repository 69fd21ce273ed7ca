package hotpath

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/bench/internal/orders"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/format/raw"
	"github.com/kshare/kshare/internal/cputime"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sqlshell"
	"github.com/kshare/kshare/table"
)

// batchRows is the connector's default batch size ('scan.batch-size').
const batchRows = batch.DefaultSize

const ordersCols = "order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)"

// records returns orders 0..n-1 as the records a member polls: the JSON
// as the benchmark loads it, on partition 0 of topic 'orders'.
func records(n int) []*kgo.Record {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: "orders", Offset: int64(i), Timestamp: start.Add(time.Duration(i) * time.Millisecond),
			Value: orders.At(int64(i)).Append(nil)}
	}
	return rs
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
	// memNext, when set, makes the stream's i-th batch (from 0) out of a
	// slice of memBatch, as a source whose time moves on would.
	memNext func(rec arrow.RecordBatch, i int) arrow.RecordBatch
)

func (memConnector) Name() string                  { return "bench-memory" }
func (memConnector) Options() *options.Set         { return &options.Set{Owner: "connector 'bench-memory'"} }
func (memConnector) Metadata() []table.MetadataKey { return nil }
func (memConnector) NewSource(*table.Bound) (flow.Source, error) {
	return memSource{}, nil
}

type memSource struct{}

func (memSource) Open(context.Context, flow.OpenOptions) (flow.Stream, error) {
	return &memStream{left: memRows}, nil
}

type memStream struct{ left, batches int }

func (s *memStream) Schema() *arrow.Schema { return memBatch.Schema() }
func (s *memStream) Stats() flow.Stats     { return flow.Stats{} }
func (s *memStream) Close() error          { return nil }

func (s *memStream) Next(context.Context) (flow.Batch, error) {
	if s.left <= 0 {
		return flow.Batch{}, io.EOF
	}
	n := min(s.left, int(memBatch.NumRows()))
	s.left -= n
	// The reader releases what it gets; the benchmark keeps its own
	// reference.
	rec := memBatch.NewSlice(0, int64(n))
	if memNext != nil {
		next := memNext(rec, s.batches)
		rec.Release()
		rec = next
	}
	s.batches++
	return flow.Batch{Record: rec, Ack: noAck{}}, nil
}

type noAck struct{}

func (noAck) Mark(int, flow.Disposition) {}
func (noAck) Done()                      {}
func (noAck) Abandon()                   {}

// decodeBatch turns recs into one batch of a kafka-sharegroup table of
// columns cols in format, as a member would.
func decodeBatch(tb testing.TB, format, cols string, recs []*kgo.Record) arrow.RecordBatch {
	tb.Helper()
	rb := recordBuilder(tb, format, cols, memory.NewGoAllocator(), len(recs))
	defer rb.Release()
	for _, r := range recs {
		if _, err := rb.Append(r.Value, r); err != nil {
			tb.Fatal(err)
		}
	}
	return rb.NewBatch()
}

// recordBuilder is the builder a member of a kafka-sharegroup table of
// columns cols in format decodes its records with (size 0: the table's
// 'scan.batch-size'). Binding the table does no I/O: no broker is needed.
func recordBuilder(tb testing.TB, format, cols string, alloc memory.Allocator, size int) *kafkarecord.Builder {
	tb.Helper()
	stmts, err := parse.Parse(fmt.Sprintf("CREATE TABLE orders (%s) WITH ('connector' = 'kafka-sharegroup', 'format' = '%s', "+
		"'bootstrap.servers' = '127.0.0.1:9092', 'share-group-id' = 'bench', 'topic' = 'orders')", cols, format))
	if err != nil {
		tb.Fatal(err)
	}
	b, err := table.Bind(stmts[0].(*table.CreateTable).Def)
	if err != nil {
		tb.Fatal(err)
	}
	rb, err := kafkarecord.NewBuilder(b, alloc, size)
	if err != nil {
		tb.Fatal(err)
	}
	return rb
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
	memBatch, memRows, memNext = rec, rows, nil
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
	if c := cputime.Process() - cpu0; c > 0 {
		b.ReportMetric(float64(b.N)/c.Seconds(), "rows/cpu-s")
	}
}

// BenchmarkDecodeJSON is a member's per-record work of a json table:
// decode one record's value into the batch's builders, and cut a batch of
// 'scan.batch-size' rows when it is full.
func BenchmarkDecodeJSON(b *testing.B) {
	benchDecode(b, ordersCols)
}

// BenchmarkDecodeJSONMetadata is BenchmarkDecodeJSON with three metadata
// columns, which the member fills from each record.
func BenchmarkDecodeJSONMetadata(b *testing.B) {
	benchDecode(b, ordersCols+", part INT METADATA FROM 'partition' VIRTUAL, off BIGINT METADATA FROM 'offset' VIRTUAL, "+
		"ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL")
}

func benchDecode(b *testing.B, cols string) {
	recs := records(batchRows)
	rb := recordBuilder(b, "json", cols, memory.NewGoAllocator(), 0)
	defer rb.Release()
	b.ReportAllocs()
	cpu0, start := cputime.Process(), time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := recs[i%batchRows]
		if _, err := rb.Append(r.Value, r); err != nil {
			b.Fatal(err)
		}
		if rb.Full() {
			rb.NewBatch().Release()
		}
	}
	perRow(b, start, cpu0)
}

// runQuery runs sql over b.N rows of rec and reads every result batch.
func runQuery(b *testing.B, rec arrow.RecordBatch, cols, format, sql string) {
	runEngine(b, engine(b, rec, cols, format, b.N), sql)
}

// runEngine runs sql on eng and reads every result batch.
func runEngine(b *testing.B, eng *kshare.Engine, sql string) {
	b.ReportAllocs()
	cpu0, start := cputime.Process(), time.Now()
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
	queryOrders(b, batchRows, "SELECT * FROM orders")
}

// queryOrders runs sql over b.N orders in json, decoded in batches of size.
func queryOrders(b *testing.B, size int, sql string) {
	rec := decodeBatch(b, "json", ordersCols, records(size))
	defer rec.Release()
	runQuery(b, rec, ordersCols, "json", sql)
}

// BenchmarkWhereQuantity is the filter of the suite's WHERE contestant,
// which keeps about 4 rows in 5.
func BenchmarkWhereQuantity(b *testing.B) {
	queryOrders(b, batchRows, "SELECT * FROM orders WHERE quantity > 1")
}

// BenchmarkGroupByCustomer is the aggregation target: a
// count and a DECIMAL sum per customer over the orders' 999 customers. Each
// source batch is folded into the groups and gives one batch of the
// changes of the groups it touched (a -U and a +U each): at the default
// 1,024 rows a batch touches about 640 groups, so the changes outnumber
// the rows; at 8,192 rows ('scan.batch-size') they are a quarter of them.
func BenchmarkGroupByCustomer(b *testing.B) {
	for _, size := range []int{batchRows, 4 * batchRows, 8 * batchRows} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			queryOrders(b, size, "SELECT customer_id, COUNT(*), SUM(price) FROM orders GROUP BY customer_id")
		})
	}
}

// BenchmarkCountStar is SELECT COUNT(*): one group, one change per batch.
func BenchmarkCountStar(b *testing.B) {
	queryOrders(b, batchRows, "SELECT COUNT(*) FROM orders")
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
	cpu0, start := cputime.Process(), time.Now()
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
	rec := decodeBatch(b, "json", ordersCols, records(batchRows))
	defer rec.Release()
	shellCSV(b, rec, ordersCols, "json", "SELECT * FROM orders")
}

// BenchmarkCSVRaw writes the raw contestant's one STRING column, the whole
// JSON value, which CSV has to quote and whose quotes it doubles.
func BenchmarkCSVRaw(b *testing.B) {
	rec := decodeBatch(b, "raw", "line STRING", records(batchRows))
	defer rec.Release()
	shellCSV(b, rec, "line STRING", "raw", "SELECT * FROM orders")
}

// TestMemorySourceRunsQueries keeps the benchmarks' plumbing honest in CI,
// where benchmarks do not run: every row of the source comes out of a
// query, and the filter keeps the rows it should.
func TestMemorySourceRunsQueries(t *testing.T) {
	rec := decodeBatch(t, "json", ordersCols, records(batchRows))
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

// TestRecordBuilderRows keeps BenchmarkDecodeJSONMetadata honest: the
// builder it measures gives a row per record with its metadata, cuts
// batches at 'scan.batch-size', and frees all it allocated.
func TestRecordBuilderRows(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	rb := recordBuilder(t, "json", ordersCols+", off BIGINT METADATA FROM 'offset' VIRTUAL", mem, 0)
	defer rb.Release()
	if rb.Size() != batchRows {
		t.Errorf("batch size %d, want the declared 'scan.batch-size' %d", rb.Size(), batchRows)
	}
	recs := records(3)
	for _, r := range recs {
		if _, err := rb.Append(r.Value, r); err != nil {
			t.Fatal(err)
		}
	}
	rec := rb.NewBatch()
	defer rec.Release()
	if rec.NumRows() != 3 || rec.NumCols() != 5 {
		t.Fatalf("batch of %d rows and %d columns, want 3 and 5", rec.NumRows(), rec.NumCols())
	}
	if got := fmt.Sprint(rec.Column(0), rec.Column(4)); got != fmt.Sprintf("[%d %d %d] [0 1 2]", orders.FirstID, orders.FirstID+1, orders.FirstID+2) {
		t.Errorf("order_id and offset columns: %s", got)
	}
}
