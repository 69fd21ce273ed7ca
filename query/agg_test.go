package query

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/table"
)

// sale is one record of the sales table: nil is NULL.
type sale struct {
	customer *string
	qty      *int64
	cents    *int64 // price * 100
}

func (s sale) json(id int) string {
	v := func(p any) string {
		switch p := p.(type) {
		case *string:
			if p != nil {
				return fmt.Sprintf("%q", *p)
			}
		case *int64:
			if p != nil {
				return fmt.Sprint(*p)
			}
		}
		return "null"
	}
	price := "null"
	if s.cents != nil {
		price = fmt.Sprintf(`"%s"`, cents(*s.cents))
	}
	return fmt.Sprintf(`{"id": %d, "customer": %s, "qty": %s, "price": %s}`, id, v(s.customer), v(s.qty), price)
}

func cents(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

// sales are n records over 12 customers and NULL, with NULL quantities and
// prices now and then, from a fixed seed.
func sales(n int) []sale {
	r := rand.New(rand.NewPCG(13, 3))
	out := make([]sale, n)
	for i := range out {
		var s sale
		if c := r.IntN(13); c < 12 {
			name := fmt.Sprintf("c%02d", c)
			s.customer = &name
		}
		if r.IntN(7) > 0 {
			q := r.Int64N(50) - 10
			s.qty = &q
		}
		if r.IntN(9) > 0 {
			p := r.Int64N(1_000_000) - 100_000
			s.cents = &p
		}
		out[i] = s
	}
	return out
}

const salesQuery = "SELECT customer, COUNT(*), COUNT(qty), SUM(qty), MIN(qty), MAX(qty), SUM(price), COUNT(DISTINCT qty) FROM sales GROUP BY customer"

// expected computes salesQuery's result over recs the plain way, one
// formatted row per group, keyed by its customer; having filters the
// groups by their COUNT(*).
func expected(recs []sale, having func(n int64) bool) map[string]string {
	type group struct {
		n, nq, sum, lo, hi, price int64
		np                        int
		distinct                  map[int64]bool
	}
	gs := map[string]*group{}
	for _, s := range recs {
		k := "NULL"
		if s.customer != nil {
			k = *s.customer
		}
		g := gs[k]
		if g == nil {
			g = &group{distinct: map[int64]bool{}}
			gs[k] = g
		}
		g.n++
		if s.qty != nil {
			q := *s.qty
			if g.nq == 0 || q < g.lo {
				g.lo = q
			}
			if g.nq == 0 || q > g.hi {
				g.hi = q
			}
			g.nq++
			g.sum += q
			g.distinct[q] = true
		}
		if s.cents != nil {
			g.price += *s.cents
			g.np++
		}
	}
	out := map[string]string{}
	for k, g := range gs {
		if having != nil && !having(g.n) {
			continue
		}
		sum, lo, hi, price := "NULL", "NULL", "NULL", "NULL"
		if g.nq > 0 {
			sum, lo, hi = fmt.Sprint(g.sum), fmt.Sprint(g.lo), fmt.Sprint(g.hi)
		}
		if g.np > 0 {
			price = cents(g.price)
		}
		out[k] = strings.Join([]string{k, fmt.Sprint(g.n), fmt.Sprint(g.nq), sum, lo, hi, price, fmt.Sprint(len(g.distinct))}, " | ")
	}
	return out
}

// result is an updating query's result as its changes build it.
type result struct {
	t    *testing.T
	rows map[string]string // by the first column
}

// apply applies the current batch's changes, checking that each -U and
// -D retracts the row the result holds and each +I adds a new one, and
// that each -U comes right before the +U of its group, as Flink pairs them.
func (res *result) apply(r *Rows) {
	rec := r.RecordBatch()
	fs := make([]func(int) (string, bool), rec.NumCols())
	for k := range fs {
		fs[k] = render.Formatter(rec.Column(k), r.Columns()[k].Type)
	}
	retracted := "" // the group of the -U just before, if any
	for i := 0; i < int(rec.NumRows()); i++ {
		vals := make([]string, len(fs))
		for k, f := range fs {
			vals[k] = render.OrNull(f(i))
		}
		row, key := strings.Join(vals, " | "), vals[0]
		if op := r.Op(i); (retracted != "") != (op == UpdateAfter) || op == UpdateAfter && key != retracted {
			res.t.Fatalf("row %d, %s of group %s, after a -U of group %q: each -U must come right before its group's +U", i, op, key, retracted)
		}
		retracted = ""
		if r.Op(i) == UpdateBefore {
			retracted = key
		}
		switch op := r.Op(i); op {
		case Insert, UpdateAfter:
			if _, ok := res.rows[key]; ok {
				res.t.Fatalf("%s of group %s, which the result holds: %s", op, key, row)
			}
			res.rows[key] = row
		case UpdateBefore, Delete:
			if res.rows[key] != row {
				res.t.Fatalf("%s %s, but the result holds %q", op, row, res.rows[key])
			}
			delete(res.rows, key)
		}
	}
}

type salesFixture struct {
	t    *testing.T
	mem  memory.Allocator
	cat  *table.Catalog
	src  *tabletest.Source
	recs []sale
}

func newSales(t *testing.T, n, batch int) *salesFixture {
	mem := tabletest.CheckedAlloc(t)
	f := &salesFixture{t: t, mem: mem, recs: sales(n)}
	f.cat = newCatalog(t, `CREATE TABLE sales (id INT NOT NULL, customer STRING, qty BIGINT, price DECIMAL(12, 2))
		WITH ('connector' = 'test', 'format' = 'test')`)
	f.src = sourceOf(t, f.cat, "sales")
	lines := make([]string, n)
	for i, s := range f.recs {
		lines[i] = s.json(i)
	}
	f.src.Batches = tabletest.FromJSON(t, mem, f.src.Schema, batch, lines...)
	t.Cleanup(f.src.Release)
	return f
}

// accepted are the records the query accepted; every other record it was
// handed must have been released.
func (f *salesFixture) accepted(batch int) []sale {
	var out []sale
	for _, v := range f.src.Verdicts() {
		switch {
		case v.Disposition == flow.Accept && !v.ByClose:
			out = append(out, f.recs[v.Batch*batch+v.Row])
		case v.Disposition != flow.Release:
			f.t.Errorf("record %d: %s", v.Batch*batch+v.Row, v.Disposition)
		}
	}
	return out
}

// The changes of an aggregation, applied in order, give the result that
// the records compute independently; and when the query ends early (by
// max-rows, by a cancel, or after a batch the caller never moved past),
// the records accepted are exactly those the delivered rows reflect: the
// delivered result is the aggregation of the accepted records.
func TestAggregateDelivery(t *testing.T) {
	const n, batch = 1000, 64
	for _, c := range []struct {
		name    string
		sql     string
		having  func(int64) bool
		maxRows int64
		batches int // batches to move past before the query ends; 0: all
	}{
		{name: "all", sql: salesQuery},
		{name: "having", sql: salesQuery + " HAVING COUNT(*) > 75", having: func(n int64) bool { return n > 75 }},
		{name: "max-rows", sql: salesQuery, maxRows: 101},
		{name: "cancel", sql: salesQuery, batches: 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newSales(t, n, batch)
			p, err := Prepare(c.sql, f.cat)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Updating() {
				t.Fatal("an aggregate query is not updating")
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r, err := Run(ctx, p, Options{MaxRows: c.maxRows, Alloc: f.mem})
			if err != nil {
				t.Fatal(err)
			}
			res := &result{t: t, rows: map[string]string{}}
			moved := 0
			for r.Next() {
				res.apply(r)
				if moved++; c.batches > 0 && moved == c.batches {
					// This batch is delivered by the Next that follows
					// the cancel; the ones fetched after it are not.
					cancel()
				}
			}
			r.Close()
			var want map[string]string
			if c.maxRows == 0 && c.batches == 0 {
				want = expected(f.recs, c.having)
				if r.Err() != nil {
					t.Fatal(r.Err())
				}
			} else {
				want = expected(f.accepted(batch), c.having)
				if len(want) == 0 || len(f.accepted(batch)) == n {
					t.Fatalf("the query was to end early: %d of %d records accepted", len(f.accepted(batch)), n)
				}
			}
			if !maps.Equal(res.rows, want) {
				keys := slices.Sorted(maps.Keys(want))
				for _, k := range keys {
					if res.rows[k] != want[k] {
						t.Errorf("group %s:\n got  %s\n want %s", k, res.rows[k], want[k])
					}
				}
				t.Errorf("result has %d groups, want %d", len(res.rows), len(want))
			}
		})
	}
}

// An aggregate's row reflects many records: it cannot be released or
// rejected alone, nor held; releasing its batch ends the query.
func TestAggregateSettling(t *testing.T) {
	f := newSales(t, 200, 50)
	p, err := Prepare(salesQuery, f.cat)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(t.Context(), p, Options{Alloc: f.mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Next() {
		t.Fatal(r.Err())
	}
	for _, err := range []error{r.ReleaseRow(0), r.RejectRow(0), func() error { _, err := r.Hold(); return err }()} {
		if !errors.Is(err, ErrUpdating) {
			t.Errorf("got %v, want ErrUpdating", err)
		}
	}
	if err := r.ReleaseBatch(); err != nil {
		t.Fatal(err)
	}
	if r.Next() || !errors.Is(r.Err(), ErrUpdating) {
		t.Errorf("after ReleaseBatch: Next went on, or %v", r.Err())
	}
	r.Close()
	if acc := f.accepted(50); len(acc) != 0 {
		t.Errorf("%d records accepted after their batch was released", len(acc))
	}
}

// UpsertKey finds the GROUP BY columns among the selected ones, under an
// alias or a qualifier, in any order; a key selected only inside an
// expression, or a query that is not updating, has none.
func TestUpsertKey(t *testing.T) {
	f := newSales(t, 10, 10)
	for _, c := range []struct {
		sql  string
		want []int
		ok   bool
	}{
		{salesQuery, []int{0}, true},
		{"SELECT COUNT(*), customer AS who FROM sales GROUP BY customer", []int{1}, true},
		{"SELECT SUM(qty), qty, s.customer FROM sales AS s GROUP BY customer, qty", []int{2, 1}, true},
		{"SELECT COUNT(*) FROM sales", []int{}, true},
		{"SELECT UPPER(customer), COUNT(*) FROM sales GROUP BY customer", nil, false},
		{"SELECT COUNT(*) FROM sales GROUP BY customer", nil, false},
		{"SELECT customer FROM sales", nil, false},
	} {
		p, err := Prepare(c.sql, f.cat)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		got, ok := p.UpsertKey()
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("%s: UpsertKey %v, %v; want %v, %v", c.sql, got, ok, c.want, c.ok)
		}
	}
}
