package hotpath

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/query"
)

// windowCols are the orders with their Kafka timestamp as the event-time
// column kts, one millisecond apart, as decodeBatch fills it.
const windowCols = ordersCols + ", kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'"

// windowTable is the bench-memory table of those columns: kts a column
// with a WATERMARK, as a kafka-sharegroup table would declare it.
const windowTable = ordersCols + ", kts TIMESTAMP_LTZ(3), WATERMARK FOR kts AS kts - INTERVAL '1' SECOND"

// BenchmarkTumbleCountPerCustomer is the window target on one core:
// a one-minute TUMBLE count per customer over the orders' 999 customers,
// each source batch a batch's span (1,024 ms at the default size) later
// than the one before, so windows open, fill (with early rows, since a
// batch holds more records than 'window.max-held-records') and close as
// on a live stream. Shifting kts costs a copy of one column per batch.
func BenchmarkTumbleCountPerCustomer(b *testing.B) {
	rec := decodeBatch(b, "json", windowCols, records(batchRows))
	defer rec.Release()
	runEngine(b, tumbleEngine(b, rec, b.N), tumbleSQL)
}

const tumbleSQL = "SELECT window_start, customer_id, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(kts), INTERVAL '1' MINUTE)) " +
	"GROUP BY window_start, window_end, customer_id"

// tumbleEngine is an engine whose table orders hands out rows rows of rec
// (of windowCols), each batch a batch's span later than the one before.
func tumbleEngine(tb testing.TB, rec arrow.RecordBatch, rows int) *kshare.Engine {
	eng := engine(tb, rec, windowTable, "json", rows)
	memNext = shiftTime(rec.Schema().FieldIndices("kts")[0], rec.NumRows())
	return eng
}

// TestTumbleQuery keeps BenchmarkTumbleCountPerCustomer honest in CI: over
// 200 batches (about three and a half minutes of event time) its windows
// move on (four one-minute windows) and each window's last rows count
// every record of it once.
func TestTumbleQuery(t *testing.T) {
	const batches = 200
	rec := decodeBatch(t, "json", windowCols, records(batchRows))
	defer rec.Release()
	eng := tumbleEngine(t, rec, batches*batchRows)
	rows, err := eng.Query(context.Background(), tumbleSQL)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last := map[string]int64{} // window start and customer: count
	for rows.Next() {
		rb := rows.RecordBatch()
		for i := 0; i < int(rb.NumRows()); i++ {
			if op := rows.Op(i); op == query.Insert || op == query.UpdateAfter {
				last[rb.Column(0).ValueStr(i)+" "+rb.Column(1).ValueStr(i)] = rb.Column(2).(*array.Int64).Value(i)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var total int64
	starts := map[string]bool{}
	for k, c := range last {
		total += c
		starts[strings.Fields(k)[0]] = true
	}
	// 204.8 s of event time from midnight: windows from 00:00 to 00:03.
	if total != batches*batchRows || len(starts) != 4 {
		t.Errorf("the last rows count %d records in %d windows %v; want %d in 4", total, len(starts), starts, batches*batchRows)
	}
}

// shiftTime returns a memNext that moves the timestamps of column col on
// by span milliseconds a batch.
func shiftTime(col int, span int64) func(arrow.RecordBatch, int) arrow.RecordBatch {
	return func(rec arrow.RecordBatch, i int) arrow.RecordBatch {
		ts := rec.Column(col).(*array.Timestamp)
		bld := array.NewTimestampBuilder(memory.DefaultAllocator, ts.DataType().(*arrow.TimestampType))
		defer bld.Release()
		bld.Reserve(ts.Len())
		for j := range ts.Len() {
			bld.UnsafeAppend(ts.Value(j) + arrow.Timestamp(int64(i)*span))
		}
		shifted := bld.NewArray()
		defer shifted.Release()
		out, err := rec.SetColumn(col, shifted)
		if err != nil {
			panic(err)
		}
		return out
	}
}
