package query

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
)

// BenchmarkQuery runs statements over 64 batches of 1024 rows; b.N counts
// rows, so ns/op is the cost of one row.
func BenchmarkQuery(b *testing.B) {
	const ddl = `CREATE TABLE orders (
  id BIGINT NOT NULL, product STRING, price DECIMAL(10, 2), quantity INT, score DOUBLE
) WITH ('connector' = 'test', 'format' = 'test')`
	var lines []string
	for i := 0; i < 1024; i++ {
		lines = append(lines, fmt.Sprintf(`{"id": %d, "product": "p%d", "price": "%d.%02d", "quantity": %d, "score": %d.5}`, i, i%7, i%50, i%100, i%5, i))
	}
	for _, sql := range []string{
		"SELECT * FROM orders",
		"SELECT id, quantity * 2 + 1 FROM orders WHERE quantity > 1",
		"SELECT id, score / 3 FROM orders WHERE product LIKE 'p1%' OR id IN (1, 2, 3)",
		"SELECT id, price * quantity FROM orders WHERE price > 10",
		"SELECT CAST(id AS STRING), CAST(price AS DOUBLE) FROM orders",
	} {
		b.Run(sql, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			cat := newCatalog(b, ddl)
			src := sourceOf(b, cat, "orders")
			src.Quiet = true
			one := tabletest.FromJSON(b, mem, src.Schema, 0, lines...)[0]
			defer one.Release()
			for i := 0; i < 64; i++ {
				one.Retain()
				src.Batches = append(src.Batches, one)
			}
			defer src.Release()
			p, err := Prepare(sql, cat)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			rows := 0
			for rows < b.N {
				r, err := Run(context.Background(), p, Options{Alloc: mem})
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					rows += 1024
				}
				if r.Err() != nil {
					b.Fatal(r.Err())
				}
				r.Close()
			}
		})
	}
}
