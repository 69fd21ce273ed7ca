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

// A window aggregation that holds its records until a delivered row
// reflects them (a pipeline's: query.Options.AcceptFolded off), over the
// records' Kafka timestamps, whose one-hour window stays open: only early
// firing (window.max-held-records) delivers rows, and each delivered row's
// count is exactly what the query accepted, so a second query counts the
// rest, each record once.
func TestKafkaWindowEarlyFireAcceptsWhatItReflects(t *testing.T) {
	const n = 2000
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	var vs [][]byte
	for _, v := range numbers(n) {
		vs = append(vs, []byte(v))
	}
	kafkatest.Produce(t, addr, topic, vs...)
	eng := windowEngine(t, addr, topic, kafkatest.GroupName(t), "")
	const sql = "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(kts), INTERVAL '1' HOUR)) GROUP BY window_start, window_end"
	maxHeld := func(o *query.Options) { o.MaxHeld, o.AcceptFolded = 300, false }
	// count runs sql until done says to stop; it returns the records the
	// delivered rows count, over every window.
	count := func(done func(count int64) bool, opts ...kshare.QueryOption) int64 {
		t.Helper()
		rows, err := eng.Query(kafkatest.Context(t), sql, opts...)
		if err != nil {
			t.Fatal(err)
		}
		per := map[int64]int64{}
		total := func() (s int64) {
			for _, c := range per {
				s += c
			}
			return s
		}
		for rows.Next() {
			rec := rows.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				if op := rows.Op(i); op == query.Insert || op == query.UpdateAfter {
					per[int64(rec.Column(0).(*array.Timestamp).Value(i))] = rec.Column(1).(*array.Int64).Value(i)
				}
			}
			if done(total()) {
				break
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return total()
	}
	c1 := count(func(c int64) bool { return c >= n/2 }, kshare.BatchSize(100), maxHeld)
	if c1 < n/2 || c1 >= n {
		t.Fatalf("first query's rows counted %d records; want early rows up to at least %d and the query stopped before %d", c1, n/2, n)
	}
	c2 := count(func(c int64) bool { return c1+c >= n }, kshare.IdleTimeout(10*time.Second), maxHeld)
	if c1+c2 != n {
		t.Errorf("the queries' rows counted %d + %d records; want %d", c1, c2, n)
	}
}
