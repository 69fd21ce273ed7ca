package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// PeekRange is what TABLE(PEEK(...)) reads of one partition with a plain
// reader: offsets From (inclusive) to To (exclusive).
type PeekRange struct {
	Topic     string
	Partition int32
	// From is the group's start offset, or where its
	// share.auto.offset.reset will start it in a partition it has not
	// read; To when the broker says nothing waits there (lag 0).
	From int64
	// To is the partition's end offset when PeekRanges was called:
	// records produced later are not part of the peek.
	To int64
	// Waiting is the broker's count of unsettled records in the range
	// (the lag), or Unknown. Where it is less than To - From, records
	// inside the range were accepted out of order or are in flight; the
	// broker does not say which, so a peek shows them too.
	Waiting int64
}

func (PeekRange) Columns() []string { return []string{"topic", "partition", "from", "to", "waiting"} }
func (PeekRange) Types() []*types.DataType {
	return []*types.DataType{str, int32T, int64T, int64T, int64T}
}
func (r PeekRange) Strings() []string {
	return []string{r.Topic, fmt.Sprint(r.Partition), num(r.From), num(r.To), num(r.Waiting)}
}

// PeekRanges returns, for every partition of topics, the offsets a look at
// what waits for share group group reads: from the group's start offset to
// the end offset now. A group that does not exist yet is fine (a table's
// group before its first query): every partition is then unread, and the
// group's share.auto.offset.reset (Kafka's default: latest) says where it
// will start. A group of another type is an error (ErrNotShareGroup).
//
// Kafka 4.3 reports the start offset it last persisted, which can trail
// what was accepted (0 after a reader accepted every record): a partition
// whose lag is 0 is therefore given an empty range rather than one that
// would show accepted records again.
func (a *Admin) PeekRanges(ctx context.Context, group string, topics []string) ([]PeekRange, error) {
	doing := "finding what waits for " + groupRef(group)
	if len(topics) == 0 {
		return nil, fmt.Errorf("%s: no topic given", doing)
	}
	d, err := a.describe(ctx, group, doing)
	var offs kadm.ShareOffsets
	switch {
	case errors.Is(err, ErrUnknownGroup):
		// Not started yet: no members and no state.
		d = kadm.DescribedShareGroup{GroupID: group}
	case err != nil:
		return nil, err
	default:
		if offs, err = a.groupOffsets(ctx, group, doing); err != nil {
			return nil, err
		}
	}
	// Only the asked topics, every partition of each, whether the group
	// has state there or not.
	want := map[string]bool{}
	for _, t := range topics {
		want[t] = true
	}
	sub := kadm.ShareOffsets{}
	for t, ps := range offs {
		if want[t] {
			sub[t] = ps
		}
	}
	for _, t := range slices.Sorted(maps.Keys(want)) {
		td, err := a.topic(ctx, t, doing)
		if err != nil {
			return nil, err
		}
		if sub[t] == nil {
			sub[t] = map[int32]kadm.ShareOffset{}
		}
		for _, p := range td.Partitions {
			if _, ok := sub[t][p.Partition]; !ok {
				sub[t][p.Partition] = kadm.ShareOffset{Topic: t, Partition: p.Partition, StartOffset: Unknown, Lag: Unknown}
			}
		}
	}
	d.Members = nil // assignments do not matter here, and other topics' would add rows
	st := groupState{d, sub}
	lk, err := a.lookup(ctx, map[string]groupState{group: st}, doing)
	if err != nil {
		return nil, err
	}
	parts, _ := lk.partitions(group, st)
	out := make([]PeekRange, 0, len(parts))
	for _, p := range parts {
		if p.EndOffset < 0 {
			return nil, fmt.Errorf("%s: no end offset listed for partition %s/%d", doing, options.Cut(p.Topic), p.Partition)
		}
		r := PeekRange{Topic: p.Topic, Partition: p.Partition, From: p.StartOffset, To: p.EndOffset, Waiting: p.Lag}
		switch {
		case p.StartOffset < 0:
			// No state and no estimate (a by_duration reset): nothing
			// is known to wait.
			r.From, r.Waiting = r.To, Unknown
		case p.Lag == 0:
			r.From = r.To
		}
		out = append(out, r)
	}
	return out, nil
}
