package state_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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
// batch is accepted): the cost the directory adds to the query.
func BenchmarkGroupByState(b *testing.B) {
	benchState(b, `CREATE TABLE orders (customer STRING, qty BIGINT, price DECIMAL(10, 2)) WITH ('connector' = 'test', 'format' = 'test')`,
		"SELECT customer, COUNT(*), SUM(qty), MAX(price) FROM orders GROUP BY customer",
		func(i int) string {
			return fmt.Sprintf(`{"customer": "c%03d", "qty": %d, "price": "%d.%02d"}`, i*7%1000, i%9, i%300, i%100)
		}, query.Options{})
}

// BenchmarkWindowState is a one-minute TUMBLE count and sum per customer
// (100 customers, 50 records a second of event time) over batches of 500
// records, its windows in memory (accepted once folded, as the shell runs
// it) and kept in a state directory (each batch's windows, watermark and
// records stored before the batch is accepted, and each window's groups
// deleted once its row is out).
func BenchmarkWindowState(b *testing.B) {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	benchState(b, `CREATE TABLE orders (customer STRING, qty BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'test', 'format' = 'test')`,
		"SELECT window_start, customer, COUNT(*), SUM(qty) FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, customer",
		func(i int) string {
			return fmt.Sprintf(`{"customer": "c%02d", "qty": %d, "ts": %q}`, i*7%100, i%9, base.Add(time.Duration(i)*20*time.Millisecond).Format("2006-01-02 15:04:05.000"))
		}, query.Options{AcceptFolded: true})
}

// benchState runs sql over 64 batches of 500 records (line(i) the JSON of
// record i) of the table ddl declares, with mem as its options in memory,
// and with a state directory. b.N counts runs; records/s is reported.
func benchState(b *testing.B, ddl, sql string, line func(int) string, mem query.Options) {
	const batch, batches = 500, 64
	conn := &tabletest.Connector{Kind: "test"}
	cat := table.NewCatalogWith(tabletest.Registry(conn, "test"))
	sts, err := parse.Parse(ddl)
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
		lines = append(lines, line(i))
	}
	src.Batches = tabletest.FromJSON(b, memory.DefaultAllocator, src.Schema, batch, lines...)
	defer src.Release()
	p, err := query.Prepare(sql, cat)
	if err != nil {
		b.Fatal(err)
	}
	for _, kept := range []string{"memory", "dir"} {
		b.Run(kept, func(b *testing.B) {
			records := 0
			for b.Loop() {
				o := query.Options{}
				if kept == "memory" {
					o = mem
				}
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
