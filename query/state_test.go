package query

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kshare/kshare/table"
)

// memState is a State in memory, as package state keeps one on disk.
type memState struct {
	groups  map[string][]byte
	records map[string]bool
	commits int
	lookups int // calls of Group
	failAt  int // the commit that fails, counted from 1; 0: none
}

func newMemState() *memState {
	return &memState{groups: map[string][]byte{}, records: map[string]bool{}}
}

func recordID(o table.Origin) string { return fmt.Sprintf("%s/%d/%d", o.Topic, o.Partition, o.Offset) }

func (m *memState) Groups(fn func(key, value []byte) error) error {
	for _, k := range slices.Sorted(maps.Keys(m.groups)) {
		if err := fn([]byte(k), m.groups[k]); err != nil {
			return err
		}
	}
	return nil
}

func (m *memState) Group(key []byte) ([]byte, error) {
	m.lookups++
	return m.groups[string(key)], nil
}

func (m *memState) Commit(keys, values [][]byte, records []table.Origin) error {
	m.commits++
	if m.commits == m.failAt {
		return errors.New("disk full")
	}
	for i, k := range keys {
		if values[i] == nil {
			delete(m.groups, string(k))
			continue
		}
		m.groups[string(k)] = slices.Clone(values[i])
	}
	for _, o := range records {
		m.records[recordID(o)] = true
	}
	return nil
}

// Put stores keys and values as Commit does, with no records: an
// interval join's rows (JoinState).
func (m *memState) Put(keys, values [][]byte) error {
	return m.Commit(keys, values, nil)
}

func (m *memState) Applied(_ context.Context, records []table.Origin) ([]bool, error) {
	out := make([]bool, len(records))
	for i, o := range records {
		out[i] = m.records[recordID(o)]
	}
	return out, nil
}

// redelivered tells every row's record as delivered a second time, as
// the share group hands out again the records a query that died had not
// acknowledged.
type redelivered struct{ table.Acker }

func (a redelivered) RowOrigin(row int) (table.Origin, bool) {
	o, ok := a.Acker.(table.RowOrigins).RowOrigin(row)
	o.DeliveryCount = 2
	return o, ok
}

// A query on a State that a first query left continues its groups: the
// second query's changes, applied after the first's, give the result of
// every record, each counted once, though the share group hands the
// second query every record again (the first query's acknowledgements
// never arrived): those the State holds are accepted without being
// folded again. The restored groups' first changes retract exactly the
// rows the first query delivered. The same holds with only three groups in
// memory: each batch's groups are let go once stored, read back from the
// State when a row needs them, and a second query restores only three.
func TestAggregateStateContinues(t *testing.T) {
	for _, inMemory := range []int{-1, 3} {
		t.Run(fmt.Sprintf("groups in memory %d", inMemory), func(t *testing.T) { testAggregateStateContinues(t, inMemory) })
	}
}

func testAggregateStateContinues(t *testing.T, inMemory int) {
	const n, batch, first = 1000, 64, 5
	for _, sql := range []string{
		salesQuery,
		salesQuery + " HAVING COUNT(*) > 40",
		// Several keys, LISTAGG's text, AVG's count and MIN of a string;
		// the first column tells the groups apart.
		"SELECT COALESCE(customer, '-') || '/' || COALESCE(CAST(qty AS STRING), '-'), COUNT(*), LISTAGG(CAST(id AS STRING)), MAX(price), AVG(price), MIN(customer) FROM sales GROUP BY customer, qty",
	} {
		t.Run(sql, func(t *testing.T) {
			st := newMemState()
			res := &result{t: t, rows: map[string]string{}}
			run := func(f *salesFixture, batches int) *Rows {
				p, err := Prepare(sql, f.cat)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				r, err := Run(ctx, p, Options{Alloc: f.mem, State: st, GroupsInMemory: inMemory})
				if err != nil {
					t.Fatal(err)
				}
				moved := 0
				for r.Next() {
					res.apply(r)
					if moved++; moved == batches {
						cancel()
					}
				}
				r.Close()
				return r
			}
			f1 := newSales(t, n, batch)
			f1.src.Topic = "sales"
			r1 := run(f1, first)
			if got := r1.Stats().Restored; got != 0 {
				t.Fatalf("the first query restored %d groups", got)
			}
			stored := len(st.groups)
			folded := len(f1.accepted(batch))
			if folded == 0 || folded == n || len(st.records) != folded {
				t.Fatalf("the first query accepted %d of %d records and stored %d", folded, n, len(st.records))
			}

			f2 := newSales(t, n, batch)
			f2.src.Topic = "sales"
			f2.src.WrapAck = func(_ int, a table.Acker) table.Acker { return redelivered{a} }
			r2 := run(f2, 0)
			if err := r2.Err(); err != nil {
				t.Fatal(err)
			}
			s := r2.Stats()
			if s.Restored != int64(stored) || stored == 0 {
				t.Errorf("the second query restored %d groups, the first stored %d", s.Restored, stored)
			}
			if s.Applied != int64(folded) {
				t.Errorf("the second query left out %d records as applied, want the %d the first stored", s.Applied, folded)
			}
			if got := len(f2.accepted(batch)); got != n {
				t.Errorf("the second query accepted %d of %d records", got, n)
			}
			if len(st.records) != n {
				t.Errorf("the state holds %d records, want %d", len(st.records), n)
			}
			if s.Groups != int64(len(st.groups)) {
				t.Errorf("the second query says it holds %d groups, the state has %d", s.Groups, len(st.groups))
			}
			if read := st.lookups; (inMemory > 0) != (read > 0) {
				t.Errorf("with %d groups in memory, %d groups were read back from the state", inMemory, read)
			}
			var want map[string]string
			if sql == salesQuery {
				want = expected(f1.recs, nil)
			} else if sql == salesQuery+" HAVING COUNT(*) > 40" {
				want = expected(f1.recs, func(n int64) bool { return n > 40 })
			} else {
				want = resultOf(t, sql, n, batch)
			}
			if !maps.Equal(res.rows, want) {
				for _, k := range slices.Sorted(maps.Keys(want)) {
					if res.rows[k] != want[k] {
						t.Errorf("group %s:\n got  %s\n want %s", k, res.rows[k], want[k])
					}
				}
				t.Errorf("result has %d groups, want %d", len(res.rows), len(want))
			}
		})
	}
}

// resultOf is the result of sql over n sales records, run once without a
// state.
func resultOf(t *testing.T, sql string, n, batch int) map[string]string {
	f := newSales(t, n, batch)
	p, err := Prepare(sql, f.cat)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(t.Context(), p, Options{Alloc: f.mem})
	if err != nil {
		t.Fatal(err)
	}
	res := &result{t: t, rows: map[string]string{}}
	for r.Next() {
		res.apply(r)
	}
	r.Close()
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return res.rows
}

// A batch whose groups cannot be stored is not accepted: its records go
// back to the share group and the query ends with the State's error.
func TestAggregateStateCommitFails(t *testing.T) {
	const n, batch = 300, 50
	f := newSales(t, n, batch)
	f.src.Topic = "sales"
	p, err := Prepare(salesQuery, f.cat)
	if err != nil {
		t.Fatal(err)
	}
	st := newMemState()
	st.failAt = 3
	r, err := Run(t.Context(), p, Options{Alloc: f.mem, State: st})
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	r.Close()
	if !errors.Is(r.Err(), ErrState) || !strings.Contains(r.Err().Error(), "disk full") {
		t.Fatalf("got %v, want the State's error", r.Err())
	}
	if got, want := len(f.accepted(batch)), 2*batch; got != want {
		t.Errorf("%d records accepted, want the %d of the two batches stored", got, want)
	}
	if len(st.records) != 2*batch {
		t.Errorf("the state holds %d records, want %d", len(st.records), 2*batch)
	}
}

// A State of another query, or bytes that are not a group, give an error,
// never a panic, and never a group restored halfway as if it were whole.
func FuzzRestoreGroup(f *testing.F) {
	cat := newCatalog(f, `CREATE TABLE sales (id INT NOT NULL, customer STRING, qty BIGINT, price DECIMAL(12, 2))
		WITH ('connector' = 'test', 'format' = 'test')`)
	p, err := Prepare("SELECT customer, qty, COUNT(*), SUM(price), MAX(customer), LISTAGG(customer), COUNT(DISTINCT qty) FROM sales GROUP BY customer, qty", cat)
	if err != nil {
		f.Fatal(err)
	}
	st := newAggState(p.agg)
	g := st.slot()
	st.keys[0].valid[g], st.keys[0].strs[g] = true, "c01"
	_, val := st.saveGroup(nil, nil, g)
	f.Add(val)
	f.Add([]byte{groupVersion})
	f.Add([]byte{groupVersion, 1, 200, 1})
	f.Fuzz(func(t *testing.T, val []byte) {
		s := newAggState(p.agg)
		if _, err := s.restoreGroup(val); err != nil {
			if len(s.groups) != 0 || s.nullGroup >= 0 {
				t.Fatalf("a group was filed though restoring it failed: %v", err)
			}
			return
		}
		// Saved again, it reads back as itself.
		_, again := s.saveGroup(nil, nil, 0)
		s2 := newAggState(p.agg)
		if _, err := s2.restoreGroup(again); err != nil {
			t.Fatalf("a restored group, saved again, does not read back: %v", err)
		}
		if _, twice := s2.saveGroup(nil, nil, 0); !slices.Equal(twice, again) {
			t.Fatalf("a restored group saved as %x, then as %x", again, twice)
		}
	})
}
