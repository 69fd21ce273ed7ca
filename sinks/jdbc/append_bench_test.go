package jdbc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kshare/kshare/flow"
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
//
// The exactly-once cases write by COPY too, and store each row's record
// in the records table: "once" as records come the first time (no lookup),
// "once-again" as records delivered again, each looked up (and, the
// records being new, written). The same server, -benchtime 3s -count 2,
// one run:
//
//	copy        135,000-143,000 rows/s
//	once         91,000- 92,000 rows/s
//	once-again   69,000- 70,000 rows/s
//
// once was 0.46x of copy with a primary key of the table's, group's and
// topic's names and a COPY of the identities (a round trip more: pgx
// describes the table first); 0.66x with a key of three numbers stored by
// one prepared INSERT of arrays (once.go). once-again was 21,000 rows/s
// before its lookup was a LATERAL subquery.
//
// "upsert" writes the same 500 keys again in every batch, as +U rows
// (INSERT ... ON CONFLICT DO UPDATE, each row an update of a row that
// is there): 92,000-95,000 rows/s, against 299,000-302,000 for copy in the
// same run (-bench 'BenchmarkAppend/(copy|upsert)$' -benchtime 3s -count 2).
func BenchmarkAppend(b *testing.B) {
	const batchRows = 500
	for _, c := range []struct {
		name       string
		byCopy     bool
		once       bool
		deliveries int32
		upsert     bool
	}{
		{"copy", true, false, 0, false},
		{"insert", false, false, 0, false},
		{"once", true, true, 1, false},
		{"once-again", true, true, 2, false},
		{"upsert", false, false, 0, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			cols, key := "id bigint, name text, amount numeric(10, 2), at timestamptz, ok boolean", ""
			if c.upsert {
				cols, key = "id bigint PRIMARY KEY, name text, amount numeric(10, 2), at timestamptz, ok boolean", ", PRIMARY KEY (id) NOT ENFORCED"
			}
			pg := pgtest.Table(b, cols)
			u, user, password := jdbcURL(b)
			extra := ""
			if c.once {
				recs := recordsTable(b)
				extra = ", 'sink.delivery-guarantee' = 'exactly-once', 'sink.exactly-once.table' = '" + recs + "'"
			}
			s, err := sinkOf(b, fmt.Sprintf("CREATE TABLE out (id BIGINT, name STRING, amount DECIMAL(10, 2), at TIMESTAMP_LTZ(3), ok BOOLEAN%s) "+
				"WITH ('connector' = 'jdbc', 'url' = '%s', 'table-name' = '%s', 'username' = '%s', 'password' = '%s'%s)", key, u, pg, user, password, extra))
			if err != nil {
				b.Fatal(err)
			}
			w, err := s.Open(pgtest.Context(b))
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if !c.once && !c.upsert {
				jdbc.AppendByCopy(w, c.byCopy)
			}
			// The upserts: every batch the same 500 keys again, as +U.
			kinds := make([]flow.RowKind, batchRows)
			for i := range kinds {
				kinds[i] = flow.KindUpdateAfter
			}
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
			origins := make([]flow.Origin, batchRows)
			b.ResetTimer()
			for n := range b.N {
				var err error
				if c.once {
					// Each batch's records are new ones.
					for i := range origins {
						origins[i] = flow.Origin{Group: "g", Topic: "orders", Offset: int64(n*batchRows + i), DeliveryCount: c.deliveries}
					}
					err = w.(flow.OriginWriter).WriteFrom(pgtest.Context(b), rec, origins, func(err error) { errs <- err })
				} else if c.upsert {
					err = w.(flow.ChangelogWriter).WriteChanges(pgtest.Context(b), rec, kinds, func(err error) { errs <- err })
				} else {
					err = w.Write(pgtest.Context(b), rec, func(err error) { errs <- err })
				}
				if err != nil {
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
