package hotpath

import (
	"context"
	"testing"
)

// The scalar functions' benchmarks: the query layer's cost per row for a
// simple function over the orders (the target: 20M rows/s on one
// core), each against BenchmarkSelectStar's cost of handing batches on.

// BenchmarkUpper is UPPER over the STRING customer_id.
func BenchmarkUpper(b *testing.B) {
	benchOrders(b, "SELECT UPPER(customer_id) FROM orders")
}

// BenchmarkUpperUnicode is UPPER over text that is not all ASCII (each
// customer_id with a sharp s after it), which the byte-wise path cannot
// map; CONCAT's cost is in it too.
func BenchmarkUpperUnicode(b *testing.B) {
	benchOrders(b, "SELECT UPPER(CONCAT(customer_id, '\u00df')) FROM orders")
}

// BenchmarkCoalesce is COALESCE of a column that has no NULLs, the common
// case, which hands the column on.
func BenchmarkCoalesce(b *testing.B) {
	benchOrders(b, "SELECT COALESCE(customer_id, 'none') FROM orders")
}

// BenchmarkCoalesceNulls is COALESCE where about one row in five is NULL
// (NULLIF makes them): the result is put together from both arguments.
func BenchmarkCoalesceNulls(b *testing.B) {
	benchOrders(b, "SELECT COALESCE(NULLIF(quantity, 1), 0) FROM orders")
}

// BenchmarkArithmetic is BIGINT + INT, which widens the INT first.
func BenchmarkArithmetic(b *testing.B) {
	benchOrders(b, "SELECT order_id + quantity FROM orders")
}

func benchOrders(b *testing.B, sql string) {
	rec := decodeBatch(b, "json", ordersCols, records(batchRows))
	defer rec.Release()
	runQuery(b, rec, ordersCols, "json", sql)
}

// TestFunctionQueries keeps the function benchmarks honest in CI: each
// query gives the values it should on the benchmark's rows.
func TestFunctionQueries(t *testing.T) {
	rec := decodeBatch(t, "json", ordersCols, records(batchRows))
	defer rec.Release()
	// Each query's two columns must agree on every row.
	for _, sql := range []string{
		"SELECT UPPER(customer_id), customer_id FROM orders",
		"SELECT LOWER(UPPER(customer_id)), LOWER(customer_id) FROM orders",
		"SELECT UPPER(CONCAT(customer_id, '\u00df')), CONCAT(UPPER(customer_id), 'SS') FROM orders",
		"SELECT COALESCE(customer_id, 'none'), customer_id FROM orders",
		"SELECT COALESCE(NULLIF(quantity, 1), 0), CASE WHEN quantity = 1 THEN 0 ELSE quantity END FROM orders",
		"SELECT order_id + quantity, CAST(order_id AS DECIMAL(20, 0)) + quantity FROM orders",
	} {
		eng := engine(t, rec, ordersCols, "json", 2*batchRows)
		rows, err := eng.Query(context.Background(), sql)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			rb := rows.RecordBatch()
			for i := 0; i < int(rb.NumRows()); i++ {
				if got, want := rb.Column(0).ValueStr(i), rb.Column(1).ValueStr(i); got != want {
					t.Fatalf("%s: row %d gives %s, want %s", sql, n, got, want)
				}
				n++
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if n != 2*batchRows {
			t.Errorf("%s: %d rows, want %d", sql, n, 2*batchRows)
		}
	}
}
