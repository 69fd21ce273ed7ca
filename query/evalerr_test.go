package query

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
)

// qty is id % 3, so ids 0, 3 and 6 divide by zero.

// evalErrCase is a query over rowsN(8) in batches of 8 whose source has a
// policy for rows that cannot be evaluated.
type evalErrCase struct {
	name, policy string
	recordRows   int // rows per record; 0: one
	sql          string
	ids          []int32
	log          []string
}

func divZero(batch int, rows, policy string) string {
	return "b" + strconv.Itoa(batch) + ": fail rows " + rows + " (" + policy + "): division by zero in 10 / qty"
}

func TestRowsThatCannotBeEvaluatedAreSettledByThePolicy(t *testing.T) {
	var cases []evalErrCase
	for _, p := range []string{"dead-letter", "reject", "release"} {
		cases = append(cases, evalErrCase{name: p, policy: p, sql: "SELECT id, 10 / qty FROM orders", ids: []int32{1, 2, 4, 5, 7},
			log: []string{divZero(0, "0", p), divZero(0, "3", p), divZero(0, "6", p), "b0: done: accept 1-2,4-5,7", "close (0 unread)"}})
	}
	cases = append(cases,
		// Every record but ids 4-5 (qty 1, 2) holds an id with qty 0; row
		// 1 (id 1) evaluates, and is left out with its record.
		evalErrCase{name: "record of two rows", policy: "dead-letter", recordRows: 2, sql: "SELECT id, 10 / qty FROM orders", ids: []int32{4, 5},
			log: []string{divZero(0, "0-1", "dead-letter"), divZero(0, "2-3", "dead-letter"), divZero(0, "6-7", "dead-letter"), "b0: done: accept 4-5", "close (0 unread)"}},
		// Row 6 (qty 0) comes after the limit: released, not rejected.
		evalErrCase{name: "limit", policy: "reject", sql: "SELECT id, 10 / qty FROM orders LIMIT 3", ids: []int32{1, 2, 4},
			log: []string{divZero(0, "0", "reject"), divZero(0, "3", "reject"), "b0: done: accept 1-2,4, release 5-7", "close (0 unread)"}},
		// ids 1, 4, 7 have qty 1 (10 / 1 > 6 keeps them); 2 and 5 have
		// qty 2 and are filtered out, accepted.
		evalErrCase{name: "where", policy: "reject", sql: "SELECT id FROM orders WHERE 10 / qty > 6", ids: []int32{1, 4, 7},
			log: []string{divZero(0, "0", "reject"), divZero(0, "3", "reject"), divZero(0, "6", "reject"), "b0: done: accept 1-2,4-5,7", "close (0 unread)"}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, 8, rowsN(8)...)
			f.src.OnEvalError, f.src.RecordRows, f.src.EOF = c.policy, c.recordRows, true
			r := f.run(context.Background(), c.sql, Options{})
			got := allIDs(t, r)
			if !slices.Equal(got, c.ids) || r.Err() != nil {
				t.Errorf("ids %v (err %v), want %v", got, r.Err(), c.ids)
			}
			r.Close()
			f.wantLog(c.log...)
			st := r.Stats()
			left := 8 - int64(len(c.ids)) - st.Filtered
			if c.name == "limit" {
				left -= 3 // rows 5-7, released
			}
			if st.EvalFailed != left || st.Delivered != int64(len(c.ids)) || st.Source.EvalErrors != int64(len(c.log)-2) {
				t.Errorf("stats: %d left out, %d delivered, %d filtered, source %d records; want %d, %d, the rest, %d",
					st.EvalFailed, st.Delivered, st.Filtered, st.Source.EvalErrors, left, len(c.ids), len(c.log)-2)
			}
		})
	}
}

// TestPolicyFailEndsTheQueryAsBefore: under 'fail', over a source that
// does not tell which record gave a row, the error is the evaluation's.
func TestPolicyFailEndsTheQueryAsBefore(t *testing.T) {
	f := newFixture(t, 2, rowsN(6)...)
	f.src.OnEvalError = "fail"
	r := f.run(context.Background(), "SELECT 10 / qty FROM orders WHERE id > 0", Options{})
	for r.Next() {
	}
	if err := r.Err(); !errors.Is(err, ErrEval) || err.Error() != "division by zero in 10 / qty" {
		t.Fatalf("err %v; want ErrEval, division by zero in 10 / qty", err)
	}
	f.wantLog("b0: done: accept 0-1", "b1: abandon: release 0-1", "close (1 unread)")
	r.Close()
}

// TestFailingRowNamesItsRecord: a query that ends on a row it cannot
// evaluate names the table and the record behind that row when the source
// tells records, whatever the batch, the record's rows and LIMIT.
func TestFailingRowNamesItsRecord(t *testing.T) {
	for _, c := range []struct {
		name, policy string
		size, per    int
		sql          string
		offset       int64
		note         string // after the evaluation's error
	}{
		// id 3 (qty 0) is row 1 of the second batch, the fourth record.
		{name: "no policy", size: 2, sql: "SELECT 10 / qty FROM orders WHERE id > 0", offset: 3},
		// id 3 is the second record's second row.
		{name: "fail, records of two rows", policy: "fail", size: 4, per: 2, sql: "SELECT id, 10 / qty FROM orders WHERE id > 0", offset: 1},
		// id 6 fails too, but after the limit: never evaluated.
		{name: "limit", policy: "fail", size: 8, sql: "SELECT 10 / qty FROM orders WHERE id > 0 LIMIT 3", offset: 3},
		// The groups of the first batch are folded before the error.
		{name: "aggregate", policy: "fail", size: 4, sql: "SELECT qty, SUM(10 / qty) FROM orders WHERE id > 0 GROUP BY qty", offset: 3},
		{name: "aggregate, a policy that does not apply", policy: "dead-letter", size: 2, sql: "SELECT qty, COUNT(*) FILTER (WHERE 10 / qty > 1) FROM orders WHERE id > 0 GROUP BY qty", offset: 3,
			note: " ('scan.on-eval-error' settles such rows only in queries without GROUP BY, aggregates or windows; this one ends)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.size, rowsN(8)...)
			f.src.OnEvalError, f.src.RecordRows, f.src.Topic = c.policy, c.per, "orders-topic"
			r := f.run(context.Background(), c.sql, Options{})
			for r.Next() {
			}
			err := r.Err()
			r.Close()
			want := "table 'orders', record orders-topic[0]@" + strconv.FormatInt(c.offset, 10) + " (delivery 1): division by zero in 10 / qty" + c.note
			var re *RowError
			if !errors.Is(err, ErrEval) || !errors.As(err, &re) || err.Error() != want {
				t.Fatalf("err %v; want ErrEval, a RowError, %s", err, want)
			}
			if re.Table != "orders" || re.Record.Offset != c.offset || re.Record.DeliveryCount != 1 {
				t.Errorf("RowError %+v, want table orders, offset %d, delivery 1", re, c.offset)
			}
		})
	}
}

func TestAggregateQueryEndsAndSaysThePolicyDoesNotApply(t *testing.T) {
	f := newFixture(t, 4, rowsN(8)...)
	f.src.OnEvalError = "dead-letter"
	r := f.run(context.Background(), "SELECT qty, SUM(10 / qty) FROM orders GROUP BY qty", Options{})
	for r.Next() {
	}
	err := r.Err()
	if !errors.Is(err, ErrEval) || err.Error() != "division by zero in 10 / qty ('scan.on-eval-error' settles such rows only in queries without GROUP BY, aggregates or windows; this one ends)" {
		t.Errorf("err %v; want the evaluation error and why the policy does not apply", err)
	}
	r.Close()
	for _, v := range f.src.Verdicts() {
		if v.Disposition != flow.Release {
			t.Errorf("row %d of batch %d: %s, want release", v.Row, v.Batch, v.Disposition)
		}
	}
}

// BenchmarkEvalError is batches of 1024 rows under 'reject', none or one of
// whose rows cannot be evaluated: the price of finding that row (per
// source row).
func BenchmarkEvalError(b *testing.B) {
	for _, bad := range []int{0, 1} {
		b.Run(strconv.Itoa(bad)+" bad", func(b *testing.B) {
			mem := memory.NewGoAllocator()
			cat := newCatalog(b, ordersDDL)
			src := sourceOf(b, cat, "orders")
			src.Quiet, src.OnEvalError = true, "reject"
			lines := make([]string, 1024)
			for i := range lines {
				lines[i] = `{"id": ` + strconv.Itoa(i) + `, "qty": ` + strconv.Itoa(min(i+1-bad, 1)) + `}`
			}
			one := tabletest.FromJSON(b, mem, src.Schema, 0, lines...)[0]
			defer one.Release()
			for range 16 {
				one.Retain()
				src.Batches = append(src.Batches, one)
			}
			defer src.Release()
			p, err := Prepare("SELECT id, 10 / qty FROM orders", cat)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for rows := 0; rows < b.N; {
				r, err := Run(context.Background(), p, Options{Alloc: mem})
				if err != nil {
					b.Fatal(err)
				}
				for r.Next() {
					rows += 1024
				}
				r.Close()
			}
		})
	}
}

// TestFailingRowsFoundWherever: whatever the batch size, the records'
// sizes and where the bad rows are, exactly the records holding a bad row
// are failed, each once, and every other row is delivered.
func TestFailingRowsFoundWherever(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		n, size, per := 1+rng.IntN(60), 1+rng.IntN(20), 1+rng.IntN(3)
		var lines []string
		var want []int32
		failedRecs := 0
		zero := make([]bool, n)
		for i := range n {
			zero[i] = rng.IntN(6) == 0
		}
		for i := range n {
			// RecordRows counts within each batch: a record is per rows
			// of one batch.
			start := i/size*size + (i%size)/per*per
			end := min(start+per, i/size*size+size, n)
			if !slices.Contains(zero[start:end], true) {
				want = append(want, int32(i))
			} else if i == start {
				failedRecs++
			}
			q := 1
			if zero[i] {
				q = 0
			}
			lines = append(lines, `{"id": `+strconv.Itoa(i)+`, "qty": `+strconv.Itoa(q)+`}`)
		}
		f := newFixture(t, size, lines...)
		f.src.OnEvalError, f.src.RecordRows, f.src.EOF = "dead-letter", per, true
		r := f.run(context.Background(), "SELECT id, 10 / qty FROM orders", Options{})
		got := allIDs(t, r)
		r.Close()
		fails := 0
		for _, l := range f.src.Log() {
			if strings.Contains(l, ": fail rows ") {
				fails++
			}
		}
		if !slices.Equal(got, want) || r.Err() != nil || fails != failedRecs || r.Stats().Delivered != int64(len(want)) {
			t.Fatalf("round %d (%d rows, batches of %d, records of %d): ids %v (err %v), %d records failed; want %v, %d\\n%s",
				round, n, size, per, got, r.Err(), fails, want, failedRecs, strings.Join(f.src.Log(), "\\n"))
		}
	}
}
