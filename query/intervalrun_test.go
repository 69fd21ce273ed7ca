package query

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/tabletest"
)

// joinRow is a row of one side of the join tests: its id, its key and its
// time (ms after the start).
type joinRow struct {
	id, key int
	t       int64
}

// joinSides are the two sides' rows of a test, each in the order of its
// times, as a partition delivers them.
func joinSides(rng *rand.Rand, n, keys int) (orders, shipments []joinRow) {
	for k, side := range []*[]joinRow{&orders, &shipments} {
		t := int64(0)
		for i := range n {
			t += rng.Int64N(3000)
			*side = append(*side, joinRow{id: 1000*k + i, key: rng.IntN(keys), t: t})
		}
	}
	return orders, shipments
}

const joinBase = "2026-01-01 00:00:00"

func joinJSON(rows []joinRow, idName, keyName string) []string {
	base, _ := time.Parse(time.DateTime, joinBase)
	out := make([]string, len(rows))
	for i, r := range rows {
		ts := base.Add(time.Duration(r.t) * time.Millisecond).Format("2006-01-02 15:04:05.000")
		out[i] = fmt.Sprintf(`{%q: %d, %q: %d, "ts": %q}`, idName, r.id, keyName, r.key, ts)
	}
	return out
}

const joinDDL = `
CREATE TABLE orders (oid INT NOT NULL, k INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH ('connector' = 'test', 'format' = 'test');
CREATE TABLE shipments (sid INT NOT NULL, k BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'test', 'format' = 'test')`

// TestIntervalJoinRestarts runs a join of two streams in phases, a query
// started again on the state of the last one each time, with both sides'
// rows cut at random places: the rows of all the phases are exactly the
// pairs (and, for an outer join, the rows that met none) the test computes
// from the two sides, each once.
func TestIntervalJoinRestarts(t *testing.T) {
	const lower, upper = -5000, 20000 // s.ts BETWEEN o.ts - 5 s AND o.ts + 20 s
	for _, kind := range []string{"JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("%s/%d", kind, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				orders, shipments := joinSides(rng, 150, 40)
				var want []string
				met := map[int]bool{}
				for _, o := range orders {
					for _, s := range shipments {
						if d := s.t - o.t; o.key == s.key && d >= lower && d <= upper {
							want = append(want, fmt.Sprintf("%d|%d", o.id, s.id))
							met[o.id], met[s.id] = true, true
						}
					}
				}
				for k, side := range [][]joinRow{orders, shipments} {
					if (k == 0 && kind != "LEFT JOIN" && kind != "FULL JOIN") || (k == 1 && kind != "RIGHT JOIN" && kind != "FULL JOIN") {
						continue
					}
					for _, r := range side {
						if !met[r.id] {
							if k == 0 {
								want = append(want, fmt.Sprintf("%d|NULL", r.id))
							} else {
								want = append(want, fmt.Sprintf("NULL|%d", r.id))
							}
						}
					}
				}
				slices.Sort(want)
				mem := tabletest.CheckedAlloc(t)
				cat := newCatalog(t, joinDDL)
				sql := fmt.Sprintf("SELECT o.oid, s.sid FROM orders o %s shipments s ON o.k = s.k AND s.ts BETWEEN o.ts - INTERVAL '5' SECOND AND o.ts + INTERVAL '20' SECOND", kind)
				p, err := Prepare(sql, cat)
				if err != nil {
					t.Fatal(err)
				}
				st := newMemState()
				// Three phases: each side cut at its own random places.
				cuts := func(n int) []int {
					a, b := rng.IntN(n), rng.IntN(n)
					return []int{0, min(a, b), max(a, b), n}
				}
				oc, sc := cuts(len(orders)), cuts(len(shipments))
				var got []string
				for ph := range 3 {
					for k, rows := range [][]joinRow{orders[oc[ph]:oc[ph+1]], shipments[sc[ph]:sc[ph+1]]} {
						src := sourceOf(t, cat, []string{"orders", "shipments"}[k])
						src.Release()
						src.Topic = []string{"orders", "shipments"}[k]
						src.FirstOffset = int64([]int{oc[ph], sc[ph]}[k])
						src.EOF = ph == 2
						if len(rows) > 0 {
							src.Batches = tabletest.FromJSON(t, mem, src.Schema, 1+rng.IntN(9), joinJSON(rows, []string{"oid", "sid"}[k], "k")...)
						}
					}
					got = append(got, runJoinPhase(t, p, mem, st, ph == 2)...)
				}
				for _, n := range []string{"orders", "shipments"} {
					sourceOf(t, cat, n).Release()
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("%d rows, want %d\n got: %v\nwant: %v", len(got), len(want), got, want)
				}
			})
		}
	}
}

// runJoinPhase runs p on st until its sources end (last) or go quiet, and
// returns its rows as "oid|sid".
func runJoinPhase(t *testing.T, p *Plan, mem memory.Allocator, st *memState, last bool) []string {
	t.Helper()
	o := Options{Alloc: mem, State: st}
	if !last {
		o.IdleTimeout = 200 * time.Millisecond
	}
	rows, err := Run(context.Background(), p, o)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		for i := range int(rows.RecordBatch().NumRows()) {
			r, _ := rows.Row(i)
			v := [2]string{}
			for k, c := range []string{"oid", "sid"} {
				x, err := r.Value(c)
				if err != nil {
					t.Fatal(err)
				}
				v[k] = "NULL"
				if x != nil {
					v[k] = fmt.Sprint(x)
				}
			}
			out = append(out, v[0]+"|"+v[1])
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIntervalJoinRecordAgain: a record that comes again (its accept never
// reached the broker) is kept once: its row is under its record's key.
func TestIntervalJoinRecordAgain(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cat := newCatalog(t, joinDDL)
	p, err := Prepare("SELECT o.oid, s.sid FROM orders o JOIN shipments s ON o.k = s.k AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '1' HOUR", cat)
	if err != nil {
		t.Fatal(err)
	}
	st := newMemState()
	orders := sourceOf(t, cat, "orders")
	orders.Topic = "orders"
	shipments := sourceOf(t, cat, "shipments")
	shipments.Topic = "shipments"
	defer orders.Release()
	defer shipments.Release()
	orders.EOF, shipments.EOF = false, false
	for range 2 {
		orders.Release()
		orders.Batches = tabletest.FromJSON(t, mem, orders.Schema, 0, joinJSON([]joinRow{{1, 7, 0}, {2, 8, 10}}, "oid", "k")...)
		if got := runJoinPhase(t, p, mem, st, false); len(got) != 0 {
			t.Fatalf("pairs without shipments: %v", got)
		}
	}
	n := 0
	for _, v := range st.groups {
		if v[0] == joinVersion {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d rows stored for 2 records delivered twice, want 2", n)
	}
	orders.Release()
	shipments.Batches = tabletest.FromJSON(t, mem, shipments.Schema, 0, joinJSON([]joinRow{{100, 7, 1000}}, "sid", "k")...)
	if got := runJoinPhase(t, p, mem, st, false); !slices.Equal(got, []string{"1|100"}) {
		t.Fatalf("got %v, want one pair of order 1 with shipment 100", got)
	}
}

// TestIntervalJoinUndelivered: a row that left with its NULLs stays in the
// state until its batch is delivered, so that a query whose reader could
// not deliver it hands it on when started again.
func TestIntervalJoinUndelivered(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cat := newCatalog(t, joinDDL)
	p, err := Prepare("SELECT o.oid, s.sid FROM orders o LEFT JOIN shipments s ON o.k = s.k AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '1' SECOND", cat)
	if err != nil {
		t.Fatal(err)
	}
	st := newMemState()
	orders, shipments := sourceOf(t, cat, "orders"), sourceOf(t, cat, "shipments")
	orders.Topic, shipments.Topic = "orders", "shipments"
	orders.EOF, shipments.EOF = false, false
	defer orders.Release()
	defer shipments.Release()
	stored := func() bool {
		for _, v := range st.groups {
			if v[0] == joinVersion && v[1] == 0 {
				return true
			}
		}
		return false
	}
	// Order 1 alone: kept, as no shipment has moved the watermark yet.
	orders.Batches = tabletest.FromJSON(t, mem, orders.Schema, 0, joinJSON([]joinRow{{1, 7, 0}}, "oid", "k")...)
	if got := runJoinPhase(t, p, mem, st, false); len(got) != 0 || !stored() {
		t.Fatalf("rows %v, order stored: %v; want none, and the order stored", got, stored())
	}
	orders.Release()
	// Then shipments of another key, a minute on: the shipments'
	// watermark passes order 1's time plus its bound, and it leaves with
	// NULLs; the first time, the reader stops before it settles that.
	for attempt, deliver := range []bool{false, true} {
		shipments.Release()
		shipments.FirstOffset = int64(attempt)
		shipments.Batches = tabletest.FromJSON(t, mem, shipments.Schema, 0, joinJSON([]joinRow{{100 + attempt, 9, 60000 + int64(attempt)}}, "sid", "k")...)
		// No lateness: a row leaves as soon as the watermark passes it.
		rows, err := Run(context.Background(), p, Options{Alloc: mem, State: st, IdleTimeout: 200 * time.Millisecond, AllowedLateness: -1})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			for i := range int(rows.RecordBatch().NumRows()) {
				r, _ := rows.Row(i)
				v, _ := r.Value("oid")
				got = append(got, fmt.Sprint(v))
			}
			if len(got) > 0 && !deliver {
				// The reader could not deliver it (a sink that failed).
				if err := rows.ReleaseBatch(); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		rows.Close()
		if !slices.Equal(got, []string{"1"}) {
			t.Fatalf("attempt %d: oid values %v, want order 1 with NULLs", attempt, got)
		}
		if stored() == deliver {
			t.Fatalf("attempt %d (delivered: %v): order 1 stored: %v", attempt, deliver, stored())
		}
	}
}

// TestIntervalJoinSchema: the joined batches are the sides' columns, the
// outer sides' nullable.
func TestIntervalJoinSchema(t *testing.T) {
	cat := newCatalog(t, joinDDL)
	p, err := Prepare("SELECT * FROM orders o RIGHT JOIN shipments s ON o.k = s.k AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '1' SECOND", cat)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Columns() {
		got = append(got, c.Name+" "+c.Type.String())
	}
	want := []string{"oid INT", "k INT", "ts TIMESTAMP(3)", "sid INT NOT NULL", "k0 BIGINT", "ts0 TIMESTAMP(3)"}
	if !slices.Equal(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	if !p.JoinsStreams() {
		t.Fatal("JoinsStreams is false for an interval join")
	}
	if _, ok := p.Table().Source.(flow.LookupSource); ok {
		t.Fatal("an interval join's source is a lookup source")
	}
}
