package hotpath

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// windowCols are the orders with their Kafka timestamp as the event-time
// column kts, one millisecond apart, as decodeBatch fills it.
const windowCols = ordersCols + ", kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp'"

// windowTable is the bench-memory table of those columns: kts a column
// with a WATERMARK, as a kafka-sharegroup table would declare it.
const windowTable = ordersCols + ", kts TIMESTAMP_LTZ(3), WATERMARK FOR kts AS kts - INTERVAL '1' SECOND"

// BenchmarkTumbleCountPerCustomer is issue 13's window target on one core:
// a one-minute TUMBLE count per customer over the orders' 999 customers,
// each source batch a batch's span (1,024 ms at the default size) later
// than the one before, so windows open, fill (with early rows, since a
// batch holds more records than 'window.max-held-records') and close as
// on a live stream. Shifting kts costs a copy of one column per batch.
func BenchmarkTumbleCountPerCustomer(b *testing.B) {
	rec := decodeBatch(b, "json", windowCols, records(batchRows))
	defer rec.Release()
	eng := engine(b, rec, windowTable, "json", b.N)
	memNext = shiftTime(rec.Schema().FieldIndices("kts")[0], rec.NumRows())
	sql := "SELECT window_start, customer_id, COUNT(*) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(kts), INTERVAL '1' MINUTE)) " +
		"GROUP BY window_start, window_end, customer_id"
	runEngine(b, eng, sql)
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
