package query

import (
	"math"
	"time"

	"github.com/kshare/kshare/flow"
)

// DefaultSourceIdleTimeout is Options.SourceIdleTimeout's default. On a
// share group a member is not handed every partition's records evenly: with
// fewer members than partitions the broker splits the partitions among
// them, so a member may never see some, and a poll fills up from one
// partition before the next. A partition that delivered nothing for this
// long stops holding the watermark back, so that a member's windows close
// although the group gave another member that partition. Ten seconds is
// twenty of a share fetch's longest waits (500 ms) at the broker, long
// enough that a partition with records is not taken for idle between two
// polls, and short against the minutes of a typical window, so that it
// delays a window's row little when a partition is really quiet.
const DefaultSourceIdleTimeout = 10 * time.Second

// sourceIdleTimeout is the query's SourceIdleTimeout; 0 for never.
func sourceIdleTimeout(o Options) time.Duration {
	switch d := o.SourceIdleTimeout; {
	case d < 0:
		return 0
	case d == 0:
		return DefaultSourceIdleTimeout
	default:
		return d
	}
}

// watermarks is an event-time window aggregation's watermark, kept per
// partition as Flink keeps it per source split. A partition's own mark is
// the largest event time seen in it; the watermark is the smallest mark,
// less the WATERMARK's delay, over the partitions that are not idle. A
// partition the stream named before it delivered anything (a
// flow.Partitioned stream) holds the watermark back until it delivers or
// goes idle: else the first partition a share group hands out would close
// every window, and the others' records would all come late. A partition
// is idle once it delivered nothing for the idle timeout; when every one
// is, the watermark moves on with processing time from the largest event
// time seen, so that the open windows close on a quiet stream.
//
// Records whose source cannot tell their partition (no flow.RowOrigins)
// all count as one partition: the watermark is then the largest event time
// seen less the delay.
type watermarks struct {
	delay int64         // the WATERMARK's delay (ms)
	idle  time.Duration // 0: no partition is ever idle
	parts []partMark
	slots map[flow.PartitionID]int32
	// max is the largest event time seen in any partition (ms), last when
	// the last record arrived; wm the watermark (ms). math.MinInt64: none.
	max, wm int64
	last    time.Time
	// The partition of the row looked up last, to spare the map a lookup
	// for the runs of rows of one partition a batch has.
	lastID   flow.PartitionID
	lastSlot int32
}

// partMark is one partition's event time.
type partMark struct {
	max  int64     // the largest event time seen in it (ms); math.MinInt64: none yet
	last time.Time // when it last delivered a record, or when the stream named it
}

func newWatermarks(delay, idle time.Duration, now time.Time) *watermarks {
	return &watermarks{delay: delay.Milliseconds(), idle: idle, slots: map[flow.PartitionID]int32{},
		max: math.MinInt64, wm: math.MinInt64, last: now, lastSlot: -1}
}

// name adds the partitions a stream says it reads before any of their
// records arrive.
func (m *watermarks) name(ids []flow.PartitionID, now time.Time) {
	for _, id := range ids {
		m.slot(id, now)
	}
}

// slot is the index of partition id in parts, added (named now) if new.
func (m *watermarks) slot(id flow.PartitionID, now time.Time) int32 {
	if m.lastSlot >= 0 && id == m.lastID {
		return m.lastSlot
	}
	s, ok := m.slots[id]
	if !ok {
		s = int32(len(m.parts))
		m.slots[id] = s
		m.parts = append(m.parts, partMark{max: math.MinInt64, last: now})
	}
	m.lastID, m.lastSlot = id, s
	return s
}

// rowSlots are the partitions of a batch's rows (into buf): each row's
// record's, when ack tells it (flow.RowOrigins), else the one partition
// of a stream that names none.
func (m *watermarks) rowSlots(ack flow.Acker, n int, now time.Time, buf []int32) []int32 {
	buf = buf[:0]
	ro, ok := ack.(flow.RowOrigins)
	for i := range n {
		var id flow.PartitionID
		if ok {
			if o, found := ro.RowOrigin(i); found {
				id = flow.PartitionID{Topic: o.Topic, Partition: o.Partition}
			}
		}
		buf = append(buf, m.slot(id, now))
	}
	return buf
}

// observe notes a batch's event times: times[i] (ms; math.MinInt64 for a
// row without one) of a row of partition slots[i].
func (m *watermarks) observe(slots []int32, times []int64, now time.Time) {
	for i, t := range times {
		if t == math.MinInt64 {
			continue
		}
		p := &m.parts[slots[i]]
		p.max = max(p.max, t)
		p.last = now
		m.max = max(m.max, t)
	}
	if len(times) > 0 {
		m.last = now
	}
}

// advance moves the watermark to what the partitions say now and returns
// it. It never goes back.
func (m *watermarks) advance(now time.Time) int64 {
	mark, active := int64(math.MaxInt64), false
	for _, p := range m.parts {
		if m.idle > 0 && now.Sub(p.last) >= m.idle {
			continue
		}
		active = true
		if p.max == math.MinInt64 {
			mark = math.MinInt64 // it has not spoken yet: it holds everything back
			break
		}
		mark = min(mark, p.max-m.delay)
	}
	switch {
	case m.max == math.MinInt64:
		return m.wm // nothing seen: nothing to go on
	case !active && len(m.parts) > 0:
		// Every partition is idle: processing time moves it on.
		mark = m.max - m.delay + now.Sub(m.last).Milliseconds()
	}
	m.wm = max(m.wm, mark)
	return m.wm
}

// nextIdle is when the next partition that holds the watermark back goes
// idle, which may move it on; zero for none.
func (m *watermarks) nextIdle(now time.Time) time.Time {
	if m.idle <= 0 {
		return time.Time{}
	}
	var at time.Time
	for _, p := range m.parts {
		t := p.last.Add(m.idle)
		if t.After(now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	return at
}

// allIdle reports whether every partition is idle now.
func (m *watermarks) allIdle(now time.Time) bool {
	if m.idle <= 0 {
		return false
	}
	for _, p := range m.parts {
		if now.Sub(p.last) < m.idle {
			return false
		}
	}
	return true
}
