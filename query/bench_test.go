package query

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
)

// BenchmarkQuery runs statements over orders.
func BenchmarkQuery(b *testing.B) {
	const ddl = `CREATE TABLE orders (
  id BIGINT NOT NULL, product STRING, price DECIMAL(10, 2), quantity INT, score DOUBLE
) WITH ('connector' = 'test', 'format' = 'test')`
	var lines []string
	for i := 0; i < 1024; i++ {
		lines = append(lines, fmt.Sprintf(`{"id": %d, "product": "p%d", "price": "%d.%02d", "quantity": %d, "score": %d.5}`, i, i%7, i%50, i%100, i%5, i))
	}
	benchQueries(b, ddl, "orders", lines,
		"SELECT * FROM orders",
		"SELECT id, quantity * 2 + 1 FROM orders WHERE quantity > 1",
		"SELECT id, score / 3 FROM orders WHERE product LIKE 'p1%' OR id IN (1, 2, 3)",
		"SELECT id, price * quantity FROM orders WHERE price > 10",
		"SELECT CAST(id AS STRING), CAST(price AS DOUBLE) FROM orders",
	)
}

// BenchmarkCastText casts text to dates, times and decimals, and doubles to
// decimals: the casts that read calendar and decimal text. b.N counts rows.
func BenchmarkCastText(b *testing.B) {
	const ddl = `CREATE TABLE texts (
  d STRING, t STRING, ts STRING, amount STRING, score DOUBLE
) WITH ('connector' = 'test', 'format' = 'test')`
	var lines []string
	for i := 0; i < 1024; i++ {
		d := fmt.Sprintf("20%02d-%d-%02d", 10+i%20, 1+i%12, 1+i%28)
		c := fmt.Sprintf("%02d:%02d:%02d.%03d", i%24, i%60, i*7%60, i%1000)
		lines = append(lines, fmt.Sprintf(`{"d": "%s", "t": "%s", "ts": "%s %s", "amount": "%d.%06d", "score": %d.125}`, d, c, d, c, i, i*31%1000000, i))
	}
	benchQueries(b, ddl, "texts", lines,
		"SELECT CAST(d AS DATE), CAST(t AS TIME(3)), CAST(ts AS TIMESTAMP(3)) FROM texts",
		"SELECT CAST(amount AS DECIMAL(12, 4)), CAST(score AS DECIMAL(12, 2)) FROM texts",
	)
}

// benchQueries runs each statement over 64 copies of one batch of lines
// (1024 rows of table name, created by ddl); b.N counts rows, so ns/op is
// the cost of one row.
func benchQueries(b *testing.B, ddl, name string, lines []string, sqls ...string) {
	for _, sql := range sqls {
		b.Run(sql, func(b *testing.B) {
			mem := memory.NewGoAllocator()
			cat := newCatalog(b, ddl)
			src := sourceOf(b, cat, name)
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

// BenchmarkWindowWatermark runs a one-minute TUMBLE count over 64 batches
// of 1,024 rows, from a source that cannot tell the rows' partitions (one
// watermark) and from one whose rows come from four partitions it names
// (the watermark per partition: a partition looked up per row). b.N counts
// source rows.
func BenchmarkWindowWatermark(b *testing.B) {
	const ddl = `CREATE TABLE ev (id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
		WITH ('connector' = 'test', 'format' = 'test')`
	for _, parts := range []int{0, 4} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			mem := memory.NewGoAllocator()
			cat := newCatalog(b, ddl)
			src := sourceOf(b, cat, "ev")
			src.Quiet = true
			if parts > 0 {
				src.Topic = "ev"
				for p := range parts {
					src.Named = append(src.Named, int32(p))
				}
			}
			const batches, per = 64, 1024
			for k := range batches {
				var lines []string
				for i := range per {
					n := k*per + i
					lines = append(lines, fmt.Sprintf(`{"id": %d, "ts": "2024-01-01 %02d:%02d:%02d.%03d"}`, n, n/3600000%24, n/60000%60, n/1000%60, n%1000))
				}
				src.Batches = append(src.Batches, tabletest.FromJSON(b, mem, src.Schema, 0, lines...)...)
				if parts > 0 {
					src.BatchPartition = append(src.BatchPartition, int32(k%parts))
				}
			}
			defer src.Release()
			p, err := Prepare("SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end", cat)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for rows := 0; rows < b.N; rows += batches * per {
				r, err := Run(context.Background(), p, Options{Alloc: mem, AcceptFolded: true})
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
				}
				if r.Err() != nil {
					b.Fatal(r.Err())
				}
				r.Close()
			}
		})
	}
}

// BenchmarkIntervalJoin joins two streams of 16 batches of 1,024 rows each
// (a shipment a second after each order, 4,096 keys), in a state in
// memory: the cost of keeping each row (its Arrow IPC form for the state)
// and of making its pair. b.N counts the rows of both sides.
func BenchmarkIntervalJoin(b *testing.B) {
	mem := memory.NewGoAllocator()
	cat := newCatalog(b, joinDDL)
	const batches, per = 16, 1024
	for k, name := range []string{"orders", "shipments"} {
		src := sourceOf(b, cat, name)
		src.Quiet, src.Topic = true, name
		var rows []joinRow
		for i := range batches * per {
			rows = append(rows, joinRow{id: i, key: i % 4096, t: int64(i)*10 + int64(k)*1000})
		}
		src.Batches = tabletest.FromJSON(b, mem, src.Schema, per, joinJSON(rows, []string{"oid", "sid"}[k], "k")...)
		defer src.Release()
	}
	p, err := Prepare("SELECT o.oid, s.sid FROM orders o JOIN shipments s ON o.k = s.k AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '2' SECOND", cat)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	pairs := 0
	for rows := 0; rows < b.N; rows += 2 * batches * per {
		r, err := Run(context.Background(), p, Options{Alloc: mem, State: newMemState()})
		if err != nil {
			b.Fatal(err)
		}
		for r.Next() {
			pairs += int(r.RecordBatch().NumRows())
		}
		if r.Err() != nil {
			b.Fatal(r.Err())
		}
		r.Close()
	}
	if pairs == 0 {
		b.Fatal("no pairs")
	}
}
