package query

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
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

func recordID(o flow.Origin) string { return fmt.Sprintf("%s/%d/%d", o.Topic, o.Partition, o.Offset) }

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

func (m *memState) Commit(keys, values [][]byte, records []flow.Origin) error {
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

func (m *memState) Applied(_ context.Context, records []flow.Origin) ([]bool, error) {
	out := make([]bool, len(records))
	for i, o := range records {
		out[i] = m.records[recordID(o)]
	}
	return out, nil
}

// redelivered tells every row's record as delivered a second time, as
// the share group hands out again the records a query that died had not
// acknowledged.
type redelivered struct{ flow.Acker }

func (a redelivered) RowOrigin(row int) (flow.Origin, bool) {
	o, ok := a.Acker.(flow.RowOrigins).RowOrigin(row)
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
// State when a row needs them, and a second query restores only three. And
// with batches stored in epochs (a checkpoint interval): the first query,
// cancelled, stores its epoch before it ends.
func TestAggregateStateContinues(t *testing.T) {
	for _, c := range []struct {
		inMemory int
		interval time.Duration
	}{{-1, 0}, {3, 0}, {3, time.Hour}} {
		t.Run(fmt.Sprintf("groups in memory %d, interval %s", c.inMemory, c.interval), func(t *testing.T) {
			testAggregateStateContinues(t, Options{GroupsInMemory: c.inMemory, CheckpointInterval: c.interval})
		})
	}
}

func testAggregateStateContinues(t *testing.T, o Options) {
	inMemory := o.GroupsInMemory
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
				o := o
				o.Alloc, o.State = f.mem, st
				r, err := Run(ctx, p, o)
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
			f2.src.WrapAck = func(_ int, a flow.Acker) flow.Acker { return redelivered{a} }
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

// salesPlan is n sales records in batches of batch, which tell their
// records (topic "sales"), and salesQuery over them.
func salesPlan(t *testing.T, n, batch int) (*salesFixture, *Plan) {
	f := newSales(t, n, batch)
	f.src.Topic = "sales"
	p, err := Prepare(salesQuery, f.cat)
	if err != nil {
		t.Fatal(err)
	}
	return f, p
}

// A batch whose groups cannot be stored is not accepted: its records go
// back to the share group and the query ends with the State's error.
func TestAggregateStateCommitFails(t *testing.T) {
	const n, batch = 300, 50
	f, p := salesPlan(t, n, batch)
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

// With a checkpoint interval the batches the caller moved past are stored
// in one Commit and their records accepted together, once the epoch ends
// (here at the source's end: nothing else ends it); a Commit that fails
// releases every record of its epoch, and so does a batch the caller
// released (the groups count its records, so the query ends and stores
// nothing).
func TestAggregateStateEpochs(t *testing.T) {
	const n, batch = 300, 50
	for _, c := range []string{"stored", "commit fails", "batch released", "batch released, then closed"} {
		fail := c != "stored"
		t.Run(c, func(t *testing.T) {
			f, p := salesPlan(t, n, batch)
			st := newMemState()
			if c == "commit fails" {
				st.failAt = 1
			}
			r, err := Run(t.Context(), p, Options{Alloc: f.mem, State: st, CheckpointInterval: time.Hour, HoldLinger: -1})
			if err != nil {
				t.Fatal(err)
			}
			res := &result{t: t, rows: map[string]string{}}
			moved := 0
			for r.Next() {
				res.apply(r)
				if moved == 2 && strings.HasPrefix(c, "batch released") {
					if err := r.ReleaseBatch(); err != nil {
						t.Fatal(err)
					}
					if c == "batch released, then closed" {
						// As a pipeline whose sink failed the batch does.
						break
					}
				}
				if moved++; st.commits > 0 || len(f.accepted(batch)) > 0 {
					t.Fatalf("after %d batches moved past, %d commits and %d records accepted: the epoch did not wait", moved, st.commits, len(f.accepted(batch)))
				}
			}
			r.Close()
			if c == "batch released, then closed" {
				if st.commits != 0 || moved != 2 {
					t.Fatalf("%d commits after %d batches, want nothing stored: the groups count the released batch", st.commits, moved)
				}
			} else if c == "batch released" {
				if !errors.Is(r.Err(), ErrUpdating) || st.commits != 0 || moved != 3 {
					t.Fatalf("got %v after %d batches and %d commits, want the query ended after the released third, nothing stored", r.Err(), moved, st.commits)
				}
			} else if moved != n/batch {
				t.Fatalf("%d batches, want %d", moved, n/batch)
			} else if st.commits != 1 {
				t.Errorf("%d commits, want one for the epoch", st.commits)
			}
			if c == "commit fails" && !errors.Is(r.Err(), ErrState) {
				t.Fatalf("got %v, want the State's error", r.Err())
			}
			if a := r.Stats().Awaiting; a != 0 {
				t.Errorf("Stats.Awaiting %d once the query ended, want 0", a)
			}
			if fail {
				if got := len(f.accepted(batch)); got != 0 {
					t.Errorf("%d records accepted though their epoch was not stored", got)
				}
				return
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if got := len(f.accepted(batch)); got != n || len(st.records) != n {
				t.Errorf("%d records accepted and %d stored, want %d", got, len(st.records), n)
			}
			if want := expected(f.recs, nil); !maps.Equal(res.rows, want) {
				t.Errorf("result %v, want %v", res.rows, want)
			}
		})
	}
}

// An epoch ends, its batches stored and their records accepted, while the
// query waits for more: at once when the source says it hands out nothing
// more until they are settled (a share-group member that waits for its
// poll to be settled), or after HoldLinger without a batch.
func TestAggregateStateEpochEnds(t *testing.T) {
	const n, batch = 300, 50
	for _, c := range []struct {
		name   string
		waits  bool
		linger time.Duration
	}{{"source waits", true, -1}, {"no batch for the linger", false, 20 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			f, p := salesPlan(t, n, batch)
			f.src.EOF, f.src.SaysWaiting = false, c.waits
			st := newMemState()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			r, err := Run(ctx, p, Options{Alloc: f.mem, State: st, CheckpointInterval: time.Hour, HoldLinger: c.linger})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				for r.Next() {
				}
			}()
			deadline := time.Now().Add(5 * time.Second)
			for len(f.accepted(batch)) < n && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			accepted := len(f.accepted(batch))
			cancel()
			<-done
			r.Close()
			if accepted != n {
				t.Fatalf("%d of %d records accepted while the query waited for more", accepted, n)
			}
			if st.commits != 1 || len(st.records) != n {
				t.Errorf("%d commits of %d records, want the one epoch of %d", st.commits, len(st.records), n)
			}
		})
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
