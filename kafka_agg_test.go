package kshare_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/query"
)

// An aggregate accepts exactly the records its delivered rows reflect: a
// query stopped after two batches of changes leaves every other record in
// the group, so a second query's count and sum make up the rest, each
// record counted once.
func TestKafkaAggregateAcceptsWhatItReflects(t *testing.T) {
	const n = 500
	eng := kafkaEngine(t, numbers(n)...)
	const sql = "SELECT COUNT(*), SUM(CAST(v AS BIGINT)) FROM t"
	// total runs sql until done says to stop after a batch.
	total := func(done func(batches int, count int64) bool, opts ...kshare.QueryOption) (count, sum int64) {
		t.Helper()
		rows, err := eng.Query(kafkatest.Context(t), sql, opts...)
		if err != nil {
			t.Fatal(err)
		}
		batches := 0
		for rows.Next() {
			rec := rows.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				if op := rows.Op(i); op == query.Insert || op == query.UpdateAfter {
					count = rec.Column(0).(*array.Int64).Value(i)
					sum = rec.Column(1).(*array.Int64).Value(i)
				}
			}
			if batches++; done(batches, count) {
				break
			}
		}
		// Close settles the batch shown as delivered: its records, and
		// those of the batches before, are accepted; the rest go back.
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return count, sum
	}
	c1, s1 := total(func(batches int, _ int64) bool { return batches == 2 }, kshare.BatchSize(50))
	if c1 <= 0 || c1 > 100 {
		t.Fatalf("first query counted %d records in two batches of at most 50", c1)
	}
	// The rest, or less if some never come back (the idle timeout, long
	// enough to join the group on a real broker, then ends the query).
	c2, s2 := total(func(_ int, count int64) bool { return c1+count >= n }, kshare.IdleTimeout(10*time.Second))
	if c1+c2 != n || s1+s2 != n*(n-1)/2 {
		t.Errorf("the queries counted %d + %d records summing to %d + %d; want %d records summing to %d",
			c1, c2, s1, s2, n, n*(n-1)/2)
	}
}
