package jdbc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kshare/kshare/internal/pgtest"
	"github.com/kshare/kshare/sinks/jdbc"
)

// BenchmarkAppend writes batches of 500 rows (the default flush, one
// share-group poll) of a five-column row into an unindexed table, by COPY
// and by pipelined INSERTs, and reports rows/s. Each batch is one flush,
// one transaction. On the test server (scripts/postgres.sh: fsync off,
// loopback, 2 shared cores, PostgreSQL 15) it measured, with -benchtime 3s:
//
//	copy    278,000 rows/s (1.8 ms a flush)
//	insert   98,000 rows/s (5.1 ms a flush)
//
// so appends go by COPY (writer.appendRows).
func BenchmarkAppend(b *testing.B) {
	const batchRows = 500
	for _, byCopy := range []bool{true, false} {
		name := "insert"
		if byCopy {
			name = "copy"
		}
		b.Run(name, func(b *testing.B) {
			pg := pgtest.Table(b, "id bigint, name text, amount numeric(10, 2), at timestamptz, ok boolean")
			u, user, password := jdbcURL(b)
			s, err := sinkOf(b, fmt.Sprintf("CREATE TABLE out (id BIGINT, name STRING, amount DECIMAL(10, 2), at TIMESTAMP_LTZ(3), ok BOOLEAN) "+
				"WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = '%s', 'username' = '%s', 'password' = '%s')", u, pg, user, password))
			if err != nil {
				b.Fatal(err)
			}
			w, err := s.Open(pgtest.Context(b))
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			jdbc.AppendByCopy(w, byCopy)
			var rows strings.Builder
			rows.WriteString("[")
			for i := range batchRows {
				if i > 0 {
					rows.WriteString(",")
				}
				fmt.Fprintf(&rows, `{"id": %d, "name": "customer-%d", "amount": "%d.25", "at": 1704164645678, "ok": true}`, i, i%97, i)
			}
			rows.WriteString("]")
			rec := record(b, s, rows.String())
			errs := make(chan error, 1)
			b.ResetTimer()
			for range b.N {
				if err := w.Write(pgtest.Context(b), rec, func(err error) { errs <- err }); err != nil {
					b.Fatal(err)
				}
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batchRows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
