package query

// This file keeps a window aggregation's open windows and its watermark in
// a State (Options.State), so that a query started again continues them.
//
// With a State a window aggregation runs as with AcceptFolded (nothing is
// held, no window emits early), except that a batch's records are accepted
// only once the windows they changed are stored: the State is the
// checkpoint, and it is taken once the caller has moved past the rows a
// batch made (a pipeline: once the sink confirmed them), or when it made
// none, at the end of the batch's epoch (epoch.go). Each commit holds the
// groups changed since the last one, the deletion of the windows whose
// rows are out, the watermark and the records folded, so a crash at any
// instant leaves the windows as they were after some batch, with exactly
// the records that batch and the ones before it folded; a record delivered
// again that a commit holds is accepted without being folded a second time
// (Options.Applied).
//
// A window's row comes once, when the watermark passes its end; its groups
// are dropped then (an allowed lateness of 0): a stored window that has no
// row out is never one whose row a sink already has, and a record later
// than its window updates nothing (Stats.BeyondLateness), as in a Flink
// window aggregation. So the result is insert-only (Rows.InsertOnly).

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/kshare/kshare/flow"
)

// marksVersion is the first byte of the stored watermark, told apart from a
// stored group (groupVersion) by it.
const marksVersion = 0x80

// marksKey is the key of the stored watermark: a group's key starts with 0
// or 1 (see appendKey), so no group's is this one.
var marksKey = []byte{0xff, 'w', 'm'}

// storeWindows sets a window aggregation up to keep its windows in
// o.State.
func (r *Rows) storeWindows(o Options) error {
	if o.EarlyFire > 0 {
		return fmt.Errorf("%w: a window aggregation that keeps its windows in a state directory writes each window's row once, when the watermark passes its end; early firing ('window.early-fire' = '%s') would write rows that change later: RESET 'window.early-fire'", ErrState, o.EarlyFire)
	}
	w := r.win
	w.acceptFolded = true
	w.lateness = 0
	return nil
}

// InsertOnly reports whether every row of the result is a row of its own,
// never changed later: a query that is not Updating, or a window
// aggregation whose windows a State keeps, which emits each window's row
// once (+I). Its rows can go to a sink that only appends.
func (r *Rows) InsertOnly() bool {
	return !r.plan.Updating() || (r.win != nil && r.saves != nil)
}

// note notes, for the next commit, the groups a folded batch changed
// and the records of its source rows sel.
func (s *saves) note(groups []int32, ack flow.Acker, sel []int) error {
	for _, g := range groups {
		for int(g) >= len(s.want) {
			s.want = append(s.want, false)
		}
		if !s.want[g] {
			s.want[g] = true
			s.groups = append(s.groups, g)
		}
	}
	if len(sel) == 0 {
		return nil
	}
	ro, ok := ack.(flow.RowOrigins)
	if !ok {
		return fmt.Errorf("%w: the source does not tell the records of its rows, so a restarted query could not tell them apart", ErrState)
	}
	for _, row := range sel {
		o, ok := ro.RowOrigin(row)
		if !ok {
			return fmt.Errorf("%w: the source does not tell the record of its row %d", ErrState, row)
		}
		s.records = append(s.records, o)
	}
	return nil
}

// noteDropped notes, for the next commit, that groups gs are dropped: their
// keys are taken now, before drop resets them.
func (r *Rows) noteDropped(gs []int32) {
	s := r.saves
	for _, g := range gs {
		var key []byte
		for k := range r.agg.keys {
			key = r.agg.keys[k].appendKey(key, g)
		}
		s.deleted = append(s.deleted, key)
		if int(g) < len(s.want) {
			s.want[g] = false
		}
	}
}

// saveMarks appends the watermark and each partition's largest event time
// to b.
func (w *winState) saveMarks(b []byte) []byte {
	b = binary.AppendVarint(append(b, marksVersion), w.wm)
	if w.marks == nil {
		return binary.AppendUvarint(b, 0)
	}
	m := w.marks
	b = binary.AppendUvarint(b, uint64(len(m.slots)))
	for id, slot := range m.slots {
		b = appendText(b, id.Topic)
		b = binary.AppendVarint(b, int64(id.Partition))
		b = binary.AppendVarint(b, m.parts[slot].max)
	}
	return b
}

// restoreMarks reads what saveMarks wrote. Each partition holds the
// watermark where it was until it delivers more or goes idle.
func (w *winState) restoreMarks(b []byte, now time.Time) error {
	if len(b) == 0 || b[0] != marksVersion {
		return fmt.Errorf("stored watermark of an unknown version (%d bytes); the state was written by another version of kshare", len(b))
	}
	wm, k := binary.Varint(b[1:])
	if k <= 0 {
		return errShortGroup
	}
	b = b[1+k:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return errShortGroup
	}
	b = b[k:]
	w.wm = max(w.wm, wm)
	m := w.marks
	if m != nil {
		m.wm = max(m.wm, wm)
	}
	for range n {
		topic, rest, err := readBytes(b)
		if err != nil {
			return err
		}
		p, k := binary.Varint(rest)
		if k <= 0 || p < math.MinInt32 || p > math.MaxInt32 {
			return errShortGroup
		}
		mx, k2 := binary.Varint(rest[k:])
		if k2 <= 0 {
			return errShortGroup
		}
		b = rest[k+k2:]
		if m == nil {
			continue
		}
		s := m.slot(flow.PartitionID{Topic: string(topic), Partition: int32(p)}, now)
		m.parts[s].max = max(m.parts[s].max, mx)
		m.max = max(m.max, mx)
	}
	if len(b) != 0 {
		return fmt.Errorf("stored watermark has %d bytes more than it should; the state was written by another query", len(b))
	}
	return nil
}

// adopt makes restored group g an open window whose row is not out yet.
func (r *Rows) adopt(g int32) {
	r.win.track(g, true, r.agg.keys[r.win.wp.endKey].ints[g])
}
