package state_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/state"
	"github.com/kshare/kshare/table"
)

// BenchmarkGroupByState is a GROUP BY of 1,000 customers over batches of
// 500 records, its groups in memory only and kept in a state directory
// (each batch's touched groups and records stored, synced, before the
// batch is accepted): the cost the directory adds to the query. b.N counts
// records.
func BenchmarkGroupByState(b *testing.B) {
	const batch, batches = 500, 64
	conn := &tabletest.Connector{Kind: "test"}
	cat := table.NewCatalogWith(tabletest.Registry(conn, "test"))
	sts, err := parse.Parse(`CREATE TABLE orders (customer STRING, qty BIGINT, price DECIMAL(10, 2)) WITH ('connector' = 'test', 'format' = 'test')`)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cat.Exec(sts[0]); err != nil {
		b.Fatal(err)
	}
	tbl, err := cat.Lookup("orders")
	if err != nil {
		b.Fatal(err)
	}
	src := tbl.Source.(*tabletest.Source)
	src.Topic, src.Quiet = "orders", true
	var lines []string
	for i := range batch * batches {
		lines = append(lines, fmt.Sprintf(`{"customer": "c%03d", "qty": %d, "price": "%d.%02d"}`, i*7%1000, i%9, i%300, i%100))
	}
	src.Batches = tabletest.FromJSON(b, memory.DefaultAllocator, src.Schema, batch, lines...)
	defer src.Release()
	p, err := query.Prepare("SELECT customer, COUNT(*), SUM(qty), MAX(price) FROM orders GROUP BY customer", cat)
	if err != nil {
		b.Fatal(err)
	}
	for _, kept := range []string{"memory", "dir"} {
		b.Run(kept, func(b *testing.B) {
			records := 0
			for b.Loop() {
				o := query.Options{}
				var st *state.Store
				if kept == "dir" {
					b.StopTimer()
					if st, err = state.Open(b.TempDir(), "bench", nil); err != nil {
						b.Fatal(err)
					}
					o.State = st
					b.StartTimer()
				}
				r, err := query.Run(context.Background(), p, o)
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
				}
				if err := r.Close(); err != nil || r.Err() != nil {
					b.Fatal(err, r.Err())
				}
				records += batch * batches
				if st != nil {
					b.StopTimer()
					st.Close()
					b.StartTimer()
				}
			}
			b.ReportMetric(float64(records)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
