package query

// This file keeps an aggregate query's groups in a State, so that the
// query can be started again and continue.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kshare/kshare/flow"
)

// State is where an aggregate query (GROUP BY, or a window aggregation:
// see windowstate.go) keeps its groups, so that a query started again on the same State continues from
// them (Options.State). Package state keeps one in a directory.
//
// The query writes a batch's effect once the caller moved past the batch
// (a pipeline: once its sink confirmed the changes), and only then accepts
// the batch's records: the groups that the batch changed and the records
// it folded go in one Commit, atomic and durable before it returns, with
// those of the other batches of its epoch (epoch.go). A
// record the share group hands out again after that (the process died
// before its acknowledgement reached the broker) is found by Applied and
// accepted without being counted again, so that the groups count each
// record once: an exactly-once effect on the state, with a sink that is
// written at least once (a change may be written again after a crash;
// its rows are the same ones).
type State interface {
	// Groups calls fn with the key and the value of every group stored,
	// in any order; fn must not keep them.
	Groups(fn func(key, value []byte) error) error
	// Commit stores the groups' new values (keys[i] holds values[i]; a
	// nil value deletes keys[i]) and the records whose rows they folded,
	// in one write that is durable when Commit returns. It must not keep keys and values, whose bytes
	// the query reuses.
	Commit(keys, values [][]byte, records []flow.Origin) error
	// Group is the value stored under a group's key, nil when none is: a
	// GROUP BY that keeps only some of its groups in memory
	// (Options.GroupsInMemory) reads the others back one at a time.
	Group(key []byte) ([]byte, error)
	// Applied reports which of records a Commit stored.
	Applied(ctx context.Context, records []flow.Origin) ([]bool, error)
}

// ErrState is returned when a query cannot use its State: its groups
// could not be read back, or a batch's could not be stored.
var ErrState = errors.New("state")

// saves is what a query with a State stores at its next commit: what the
// batches folded since the last one changed.
type saves struct {
	// groups are those changed since the last commit; want[g] says
	// whether g still is to be stored (a group dropped since is not).
	groups []int32
	want   []bool
	// deleted are the keys of the groups dropped since the last commit
	// (a window's, once its row is out).
	deleted [][]byte
	// records are those folded since the last commit.
	records []flow.Origin
}

// stateWrite is the buffers of one Commit.
type stateWrite struct {
	keys, values [][]byte
	kbuf, vbuf   []byte
}

func (w *stateWrite) reset() {
	w.keys, w.values, w.kbuf, w.vbuf = w.keys[:0], w.values[:0], w.kbuf[:0], w.vbuf[:0]
}

// addGroups appends the keys and values of groups gs of s.
func (w *stateWrite) addGroups(s *aggState, gs []int32) {
	// The buffers grow while they are appended to, so the places are
	// kept and the slices made once both are complete.
	var kends, vends []int
	for _, g := range gs {
		w.kbuf, w.vbuf = s.saveGroup(w.kbuf, w.vbuf, g)
		kends, vends = append(kends, len(w.kbuf)), append(vends, len(w.vbuf))
	}
	k0, v0 := 0, 0
	for i := range kends {
		w.keys = append(w.keys, w.kbuf[k0:kends[i]])
		w.values = append(w.values, w.vbuf[v0:vends[i]])
		k0, v0 = kends[i], vends[i]
	}
}

// openState sets the query up to keep its groups in Options.State and
// reads back those it holds.
func (r *Rows) openState() error {
	p := r.plan
	if p.agg == nil || p.changelog {
		return fmt.Errorf("%w: only an aggregate query (GROUP BY, or a window aggregation) keeps a state", ErrState)
	}
	r.saves = &saves{}
	if r.win != nil {
		if err := r.storeWindows(r.opts); err != nil {
			return err
		}
	} else if r.groupsInMemory() > 0 {
		r.agg.stored, r.agg.awayKeys = r.opts.State.Group, newKeyFilter()
	}
	if err := r.restore(); err != nil {
		return err
	}
	if r.opts.Applied == nil {
		r.opts.Applied = r.opts.State.Applied
	}
	return nil
}

// restore reads the groups o.State holds into r's, and for a window
// aggregation its open windows and watermark.
func (r *Rows) restore() error {
	n, now := 0, time.Now()
	err := r.opts.State.Groups(func(key, v []byte) error {
		if len(v) > 0 && v[0] == marksVersion && r.win != nil {
			return r.win.restoreMarks(v, now)
		}
		if len(v) > 0 && v[0] == joinVersion {
			return nil // a row of an interval join, which its stream reads back
		}
		n++
		if r.agg.stored != nil && r.agg.live() >= r.groupsInMemory() {
			// Read back when a row needs it (readBack).
			r.agg.away++
			r.agg.awayKeys.add(key)
			return nil
		}
		g, err := r.agg.restoreGroup(v)
		if err == nil && r.win != nil {
			r.adopt(g)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: reading the stored groups back (%d read): %w", ErrState, n, err)
	}
	r.stats.Restored = int64(n)
	return nil
}

// noteState notes, for the next commit, the groups the last folded batch
// touched and the records of its source rows sel; a window aggregation
// notes its batches as it folds them.
func (r *Rows) noteState(ack flow.Acker, sel []int) error {
	if r.win != nil {
		return nil
	}
	return r.saves.note(r.agg.touched, ack, sel)
}

// commitSaves stores what changed since the last commit (see saves), and
// a window aggregation's watermark, in one Commit.
func (r *Rows) commitSaves() error {
	s, buf := r.saves, &r.stateBuf
	buf.reset()
	// Deletions first: a key set in the same commit is set.
	for _, k := range s.deleted {
		buf.keys, buf.values = append(buf.keys, k), append(buf.values, nil)
	}
	live := s.groups[:0]
	for _, g := range s.groups {
		if s.want[g] {
			s.want[g] = false
			live = append(live, g)
		}
	}
	buf.addGroups(r.agg, live)
	what := "the groups"
	if r.win != nil {
		what = "the windows"
		buf.keys, buf.values = append(buf.keys, marksKey), append(buf.values, r.win.saveMarks(nil))
	}
	err := r.commit(s.records, what)
	s.groups, s.deleted, s.records = s.groups[:0], s.deleted[:0], s.records[:0]
	if err != nil {
		return err
	}
	if r.win == nil {
		r.agg.evict(r.groupsInMemory())
	}
	return nil
}

// DefaultGroupsInMemory is Options.GroupsInMemory's default: a GROUP BY
// over a State holds this many groups in memory at most (tens of MiB for
// a few columns), and reads the others back from disk as rows need them.
const DefaultGroupsInMemory = 100_000

// groupsInMemory is Options.GroupsInMemory with its default; 0 when every
// group is kept in memory.
func (r *Rows) groupsInMemory() int {
	switch n := r.opts.GroupsInMemory; {
	case n == 0:
		return DefaultGroupsInMemory
	case n < 0:
		return 0
	default:
		return n
	}
}

// commit hands what r.stateBuf holds and records to the State in one
// Commit, and counts it; what names what is stored, for an error.
func (r *Rows) commit(records []flow.Origin, what string) error {
	w := &r.stateBuf
	start := time.Now()
	if err := r.opts.State.Commit(w.keys, w.values, records); err != nil {
		return fmt.Errorf("%w: storing %s of a batch: %w", ErrState, what, err)
	}
	end := time.Now()
	r.mu.Lock()
	r.stats.Committed++
	r.stats.Groups = int64(r.agg.live()) + r.agg.away
	r.stats.LastCommit, r.stats.LastCommitTook = end, end.Sub(start)
	r.stats.Awaiting = 0
	r.mu.Unlock()
	return nil
}
