package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/internal/kafkaadmin"
	"github.com/kshare/kshare/options"
)

// Groups lists the cluster's share groups, by name, with their state,
// members, topics and total lag.
func (a *Admin) Groups(ctx context.Context) ([]GroupRow, error) {
	if err := a.shareSupported(ctx); err != nil {
		return nil, err
	}
	listed, err := a.adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		return nil, brokerErr(err, "listing share groups", "DESCRIBE", "the cluster's groups")
	}
	names := listed.Groups()
	if len(names) == 0 {
		return nil, nil
	}
	ds, err := a.adm.DescribeShareGroups(ctx, names...)
	if err != nil {
		return nil, brokerErr(err, "describing share groups", "DESCRIBE", "share groups "+strings.Join(names, ", "))
	}
	offs, err := a.adm.DescribeShareGroupOffsets(ctx, names...)
	if err != nil {
		return nil, brokerErr(err, "describing share group offsets", "DESCRIBE", "share groups "+strings.Join(names, ", "))
	}
	states := map[string]groupState{}
	for _, name := range names {
		d, ok := ds[name]
		if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
			continue // deleted between the list and the describe
		}
		if d.Err != nil {
			return nil, brokerErr(d.Err, "describing "+groupRef(name), "DESCRIBE", groupRef(name))
		}
		o := offs[name]
		if o.Err != nil {
			return nil, brokerErr(o.Err, "describing the offsets of "+groupRef(name), "DESCRIBE", groupRef(name))
		}
		states[name] = groupState{d, o.Offsets}
	}
	// One round of lookups for every group: a cluster may hold hundreds of
	// groups over the same few topics.
	lk, err := a.lookup(ctx, states, "listing share groups")
	if err != nil {
		return nil, err
	}
	rows := make([]GroupRow, 0, len(states))
	for _, name := range slices.Sorted(maps.Keys(states)) {
		st := states[name]
		r := GroupRow{Name: name, State: st.d.GroupState, Members: len(st.d.Members), Lag: Unknown}
		topics := map[string]bool{}
		for _, t := range st.d.SubscribedTopics() {
			topics[t] = true
		}
		parts, _ := lk.partitions(name, st)
		for _, p := range parts {
			topics[p.Topic] = true
			if p.Lag >= 0 {
				r.Lag = max(r.Lag, 0) + p.Lag
			}
		}
		r.Topics = slices.Sorted(maps.Keys(topics))
		rows = append(rows, r)
	}
	return rows, nil
}

// Group describes one share group: a row per topic-partition it has state
// in or is assigned (start offset, end offset, lag, members), and its
// members.
//
// Kafka 4.3 reads the start offset and lag from the group's persisted
// share-partition state, which trails a live reader's acknowledgements by a
// moment; once the readers stop, the lag agrees with what was accepted. A
// partition the group has been assigned but not yet read has no state (the
// broker says -1): its start offset and lag are then where the group's
// share.auto.offset.reset will start it, marked Estimated.
func (a *Admin) Group(ctx context.Context, group string) (*GroupDescription, error) {
	doing := "describing " + groupRef(group)
	d, err := a.describe(ctx, group, doing)
	if err != nil {
		return nil, err
	}
	offs, err := a.groupOffsets(ctx, group, doing)
	if err != nil {
		return nil, err
	}
	st := groupState{d, offs}
	lk, err := a.lookup(ctx, map[string]groupState{group: st}, doing)
	if err != nil {
		return nil, err
	}
	gd := &GroupDescription{Name: group, State: d.GroupState}
	gd.Partitions, gd.Members = lk.partitions(group, st)
	return gd, nil
}

// groupState is what the broker said of one group: its description and
// its share-partition offsets.
type groupState struct {
	d    kadm.DescribedShareGroup
	offs kadm.ShareOffsets
}

// lookups are the figures that group rows need beyond the group's own
// state: the end offsets of its topics, and for groups with partitions they
// have not read, their share.auto.offset.reset and the topics' start
// offsets.
type lookups struct {
	ends, starts kadm.ListedOffsets
	resets       map[string]string
}

// each calls fn with every topic-partition a group has state in or is
// assigned, and whether the broker gives it a start offset.
func (st groupState) each(fn func(t string, p int32, known bool)) {
	st.offs.Each(func(so kadm.ShareOffset) { fn(so.Topic, so.Partition, so.Err == nil && so.StartOffset >= 0) })
	for _, m := range st.d.Members {
		for t, ps := range m.Assignment {
			for p := range ps {
				if _, ok := st.offs.Lookup(t, p); !ok {
					fn(t, p, false)
				}
			}
		}
	}
}

// lookup lists, in as few requests as the groups allow, what partitions
// needs for them.
func (a *Admin) lookup(ctx context.Context, states map[string]groupState, doing string) (*lookups, error) {
	topics, unreadTopics := map[string]bool{}, map[string]bool{}
	var unreadGroups []string
	for name, st := range states {
		unread := false
		st.each(func(t string, _ int32, known bool) {
			topics[t] = true
			if !known {
				unread = true
				unreadTopics[t] = true
			}
		})
		if unread {
			unreadGroups = append(unreadGroups, name)
		}
	}
	lk := &lookups{resets: map[string]string{}}
	var err error
	if len(topics) > 0 {
		if lk.ends, err = a.adm.ListEndOffsets(ctx, slices.Sorted(maps.Keys(topics))...); err != nil {
			return nil, brokerErr(err, doing, "DESCRIBE", "the topics of the share groups")
		}
	}
	if len(unreadGroups) == 0 {
		return lk, nil
	}
	slices.Sort(unreadGroups)
	cfgs, err := kafkaadmin.DescribeGroupsConfigs(ctx, a.cl, unreadGroups...)
	if err != nil {
		return nil, brokerErr(err, doing, "DESCRIBE_CONFIGS", groupRef(unreadGroups[0]))
	}
	earliest := false
	for g, cs := range cfgs {
		for _, c := range cs {
			if c.Name == "share.auto.offset.reset" {
				lk.resets[g] = c.Value
				earliest = earliest || c.Value == "earliest"
			}
		}
	}
	if earliest {
		if lk.starts, err = a.adm.ListStartOffsets(ctx, slices.Sorted(maps.Keys(unreadTopics))...); err != nil {
			return nil, brokerErr(err, doing, "DESCRIBE", "the topics of the share groups")
		}
	}
	return lk, nil
}

// partitions builds the partition and member rows of a group from its
// state and the lookups.
func (lk *lookups) partitions(group string, st groupState) ([]GroupPartition, []Member) {
	type tp struct {
		t string
		p int32
	}
	parts := map[tp]*GroupPartition{}
	part := func(t string, p int32) *GroupPartition {
		k := tp{t, p}
		if gp, ok := parts[k]; ok {
			return gp
		}
		gp := &GroupPartition{Topic: t, Partition: p, StartOffset: Unknown, EndOffset: Unknown, Lag: Unknown}
		if e, ok := lk.ends.Lookup(t, p); ok && e.Err == nil {
			gp.EndOffset = e.Offset
		}
		parts[k] = gp
		return gp
	}
	st.offs.Each(func(so kadm.ShareOffset) {
		gp := part(so.Topic, so.Partition)
		if so.Err == nil {
			gp.StartOffset, gp.Lag = max(so.StartOffset, Unknown), max(so.Lag, Unknown)
		}
	})
	var members []Member
	for _, m := range st.d.Members {
		mem := Member{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
		for t, ps := range m.Assignment {
			for p := range ps {
				mem.Assignment[t] = append(mem.Assignment[t], p)
				gp := part(t, p)
				gp.Members = append(gp.Members, m.MemberID)
			}
			slices.Sort(mem.Assignment[t])
		}
		members = append(members, mem)
	}
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	out := make([]GroupPartition, 0, len(parts))
	for k, gp := range parts {
		if gp.StartOffset < 0 && gp.EndOffset >= 0 {
			switch lk.resets[group] {
			case "earliest":
				if s, ok := lk.starts.Lookup(k.t, k.p); ok && s.Err == nil {
					gp.StartOffset, gp.Lag, gp.Estimated = s.Offset, gp.EndOffset-s.Offset, true
				}
			case "latest":
				gp.StartOffset, gp.Lag, gp.Estimated = gp.EndOffset, 0, true
			}
		}
		slices.Sort(gp.Members)
		out = append(out, *gp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, members
}

func (a *Admin) groupOffsets(ctx context.Context, group, doing string) (kadm.ShareOffsets, error) {
	res, err := a.adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		return nil, brokerErr(err, doing, "DESCRIBE", groupRef(group))
	}
	o, ok := res[group]
	if !ok {
		return nil, fmt.Errorf("%s: the broker's answer does not mention the group's offsets", doing)
	}
	if o.Err != nil {
		return nil, brokerErr(o.Err, doing, "DESCRIBE", groupRef(group))
	}
	var perr error
	o.Offsets.EachError(func(so kadm.ShareOffset) {
		if errors.Is(so.Err, kerr.TopicAuthorizationFailed) && perr == nil {
			perr = brokerErr(so.Err, doing, "DESCRIBE", "topic '"+options.Cut(so.Topic)+"'")
		}
	})
	return o.Offsets, perr
}

// GroupConfigs returns the share group's share.* configs, by name, each with
// its source (GROUP_CONFIG where the group sets it).
func (a *Admin) GroupConfigs(ctx context.Context, group string) ([]Config, error) {
	doing := "describing the configs of " + groupRef(group)
	if _, err := a.describe(ctx, group, doing); err != nil {
		return nil, err
	}
	cs, err := kafkaadmin.DescribeGroupConfigs(ctx, a.cl, group)
	if err != nil {
		return nil, brokerErr(err, doing, "DESCRIBE_CONFIGS", groupRef(group))
	}
	var out []Config
	for _, c := range cs {
		// The GROUP resource carries every group type's configs; the
		// consumer.* and streams.* ones do nothing for a share group.
		if strings.HasPrefix(c.Name, "share.") {
			out = append(out, Config{Name: c.Name, Value: c.Value, Source: c.Source.String()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SetGroupConfig sets share.* configs of an existing share group
// (share.record.lock.duration.ms, share.delivery.count.limit, ...). When the
// broker refuses a value, the error gives the range the broker accepts for
// it (its group.share.min.* and group.share.max.* configs), where it has one.
func (a *Admin) SetGroupConfig(ctx context.Context, group string, cfg map[string]string) error {
	doing := "setting the configs of " + groupRef(group)
	if len(cfg) == 0 {
		return fmt.Errorf("%s: no config given", doing)
	}
	for k := range cfg {
		if !strings.HasPrefix(k, "share.") {
			return newErr(ErrInvalidConfig, nil, "%s: '%s' is not a share group config (they begin with 'share.', e.g. share.record.lock.duration.ms)", doing, options.Cut(k))
		}
	}
	if _, err := a.describe(ctx, group, doing); err != nil {
		return err
	}
	err := kafkaadmin.SetShareGroupConfig(ctx, a.cl, group, cfg)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.InvalidConfig):
		keys := slices.Sorted(maps.Keys(cfg))
		var set []string
		for _, k := range keys {
			set = append(set, fmt.Sprintf("%s = '%s'", k, options.Cut(cfg[k])))
		}
		why := err.Error()
		if re, ok := errors.AsType[*kafkaadmin.RefusedError](err); ok && re.Msg != "" {
			why = re.Msg
		}
		msg := fmt.Sprintf("%s: the broker refused %s: %s", doing, strings.Join(set, ", "), why)
		if ranges := a.ranges(ctx, keys); ranges != "" {
			msg += "; it accepts " + ranges
		}
		return newErr(ErrInvalidConfig, err, "%s", msg)
	}
	return brokerErr(err, doing, "ALTER_CONFIGS", groupRef(group))
}

// ranges says, for each key share.X that has them, the bounds the broker
// puts on it: its configs group.share.min.X and group.share.max.X (Kafka
// names them so for the lock duration, delivery count limit, session
// timeout, heartbeat and partition record locks). Best effort: a broker
// that will not describe its configs gives no ranges.
func (a *Admin) ranges(ctx context.Context, keys []string) string {
	brokers, err := a.adm.ListBrokers(ctx)
	if err != nil || len(brokers) == 0 {
		return ""
	}
	rcs, err := a.adm.DescribeBrokerConfigs(ctx, brokers[0].NodeID)
	if err != nil || len(rcs) == 0 || rcs[0].Err != nil {
		return ""
	}
	vals := map[string]string{}
	for _, c := range rcs[0].Configs {
		vals[c.Key] = c.MaybeValue()
	}
	var parts []string
	for _, k := range keys {
		rest := strings.TrimPrefix(k, "share.")
		lo, okLo := vals["group.share.min."+rest]
		hi, okHi := vals["group.share.max."+rest]
		switch {
		case okLo && okHi:
			parts = append(parts, fmt.Sprintf("%s from %s to %s (broker configs group.share.min.%s and group.share.max.%s)", k, lo, hi, rest, rest))
		case okLo:
			parts = append(parts, fmt.Sprintf("%s from %s (broker config group.share.min.%s)", k, lo, rest))
		case okHi:
			parts = append(parts, fmt.Sprintf("%s up to %s (broker config group.share.max.%s)", k, hi, rest))
		}
	}
	return strings.Join(parts, ", ")
}

// DropGroup deletes an empty share group: its start offsets and its
// configs. A group with members is refused with ErrGroupNotEmpty.
func (a *Admin) DropGroup(ctx context.Context, group string) error {
	doing := "dropping " + groupRef(group)
	d, err := a.describe(ctx, group, doing)
	if err != nil {
		return err
	}
	if len(d.Members) > 0 {
		return notEmpty(group, "drop", d.Members, nil)
	}
	res, err := a.adm.DeleteGroups(ctx, group)
	if err != nil {
		return brokerErr(err, doing, "DELETE", groupRef(group))
	}
	r, ok := res[group]
	if !ok {
		return fmt.Errorf("%s: the broker's answer does not mention the group", doing)
	}
	if errors.Is(r.Err, kerr.NonEmptyGroup) {
		return a.raced(ctx, group, "drop", r.Err)
	}
	return brokerErr(r.Err, doing, "DELETE", groupRef(group))
}

// raced is the error for a change the broker refused because the group
// gained a member after describe found it empty: it describes the group
// again to name the members.
func (a *Admin) raced(ctx context.Context, group, verb string, cause error) error {
	if d, err := a.describe(ctx, group, verb+" "+groupRef(group)); err == nil && len(d.Members) > 0 {
		return notEmpty(group, verb, d.Members, cause)
	}
	return newErr(ErrGroupNotEmpty, cause, "cannot %s %s: it has members; stop its readers first", verb, groupRef(group))
}

// ResetKind says where Reset moves a group's start offsets.
type ResetKind int

const (
	// ResetEarliest moves to each partition's first record.
	ResetEarliest ResetKind = iota
	// ResetLatest moves to each partition's end: only records produced
	// after the reset are delivered.
	ResetLatest
	// ResetTimestamp moves to each partition's first record whose
	// timestamp is at or after ResetTo.Time (the end where none is).
	ResetTimestamp
	// ResetOffset moves every partition to ResetTo.Offset, which must lie
	// between the partition's start and end offsets.
	ResetOffset
)

// ResetTo is the target of Reset.
type ResetTo struct {
	Kind   ResetKind
	Time   time.Time // for ResetTimestamp
	Offset int64     // for ResetOffset
}

func (r ResetTo) String() string {
	switch r.Kind {
	case ResetEarliest:
		return "EARLIEST"
	case ResetLatest:
		return "LATEST"
	case ResetTimestamp:
		return "TIMESTAMP '" + r.Time.UTC().Format("2006-01-02 15:04:05.000") + "'"
	case ResetOffset:
		return fmt.Sprintf("OFFSET %d", r.Offset)
	}
	return fmt.Sprintf("ResetKind(%d)", int(r.Kind))
}

// Reset moves the start offsets of an empty share group: of every partition
// it has state in, or, with topic set, of every partition of that topic
// (which also starts a group on a topic it has not read). The rows say each
// partition's start offset before and after.
//
// Refused, with nothing changed: a group with members (ErrGroupNotEmpty,
// naming them), a time after now (ErrFutureTimestamp), an offset outside a
// partition's log (ErrOffsetOutOfRange; Kafka 4.3 itself accepts one past
// the end and then reports a negative lag), a group without state and no
// topic (ErrNoOffsets).
func (a *Admin) Reset(ctx context.Context, group string, to ResetTo, topic string) ([]ResetRow, error) {
	doing := "resetting " + groupRef(group)
	switch to.Kind {
	case ResetEarliest, ResetLatest:
	case ResetTimestamp:
		if now := time.Now(); to.Time.After(now) {
			return nil, newErr(ErrFutureTimestamp, nil, "%s to %s: the time is in the future (now is %s UTC); pick a past time or LATEST",
				doing, to, now.UTC().Format("2006-01-02 15:04:05"))
		}
	case ResetOffset:
		if to.Offset < 0 {
			return nil, newErr(ErrOffsetOutOfRange, nil, "%s to %s: an offset cannot be negative", doing, to)
		}
	default:
		return nil, fmt.Errorf("%s: unknown reset kind %d", doing, int(to.Kind))
	}
	d, err := a.describe(ctx, group, doing)
	if err != nil {
		return nil, err
	}
	if len(d.Members) > 0 {
		return nil, notEmpty(group, "reset", d.Members, nil)
	}
	cur, err := a.groupOffsets(ctx, group, doing)
	if err != nil {
		return nil, err
	}
	// The partitions to move, with their current start offsets.
	before := map[string]map[int32]int64{}
	if topic != "" {
		td, err := a.topic(ctx, topic, doing)
		if err != nil {
			return nil, err
		}
		before[topic] = map[int32]int64{}
		for _, p := range td.Partitions {
			before[topic][p.Partition] = Unknown
			if so, ok := cur.Lookup(topic, p.Partition); ok && so.Err == nil {
				before[topic][p.Partition] = max(so.StartOffset, Unknown)
			}
		}
	} else {
		cur.Each(func(so kadm.ShareOffset) {
			if before[so.Topic] == nil {
				before[so.Topic] = map[int32]int64{}
			}
			before[so.Topic][so.Partition] = Unknown
			if so.Err == nil {
				before[so.Topic][so.Partition] = max(so.StartOffset, Unknown)
			}
		})
		if len(before) == 0 {
			return nil, newErr(ErrNoOffsets, nil, "%s: the group has read no partition yet, so it has no start offsets to move; name the topic (FOR TOPIC t)", doing)
		}
	}
	topics := slices.Sorted(maps.Keys(before))
	starts, ends, err := a.offsets(ctx, doing, topics...)
	if err != nil {
		return nil, err
	}
	var at kadm.ListedOffsets
	if to.Kind == ResetTimestamp {
		at, err = a.adm.ListOffsetsAfterMilli(ctx, to.Time.UnixMilli(), topics...)
		if err != nil {
			return nil, brokerErr(err, doing, "DESCRIBE", "topic '"+options.Cut(topics[0])+"'")
		}
	}
	var rows []ResetRow
	offsets := kadm.Offsets{}
	for _, t := range topics {
		ps := slices.Sorted(maps.Keys(before[t]))
		for _, p := range ps {
			s, okS := starts.Lookup(t, p)
			e, okE := ends.Lookup(t, p)
			if !okS || !okE || s.Err != nil || e.Err != nil {
				err := errors.Join(s.Err, e.Err)
				if !okS || !okE {
					err = errors.New("no offsets listed")
				}
				return nil, fmt.Errorf("%s: listing the offsets of %s/%d: %w", doing, t, p, err)
			}
			var target int64
			switch to.Kind {
			case ResetEarliest:
				target = s.Offset
			case ResetLatest:
				target = e.Offset
			case ResetTimestamp:
				target = e.Offset
				if o, ok := at.Lookup(t, p); ok && o.Err == nil && o.Offset >= 0 {
					target = o.Offset
				}
			case ResetOffset:
				if to.Offset < s.Offset || to.Offset > e.Offset {
					return nil, newErr(ErrOffsetOutOfRange, nil, "%s to %s: partition %s/%d holds offsets %d to %d (its end); pick one in that range",
						doing, to, options.Cut(t), p, s.Offset, e.Offset)
				}
				target = to.Offset
			}
			offsets.Add(kadm.Offset{Topic: t, Partition: p, At: target, LeaderEpoch: -1})
			rows = append(rows, ResetRow{Topic: t, Partition: p, Before: before[t][p], After: target})
		}
	}
	res, err := a.adm.AlterShareGroupOffsets(ctx, group, offsets)
	if errors.Is(err, kerr.NonEmptyGroup) {
		return nil, a.raced(ctx, group, "reset", err)
	}
	if err != nil {
		return nil, brokerErr(err, doing, "READ", groupRef(group))
	}
	var perr []error
	res.EachError(func(t string, p int32, err error) {
		perr = append(perr, brokerErr(err, fmt.Sprintf("%s: partition %s/%d", doing, t, p), "READ", "topic '"+options.Cut(t)+"'"))
	})
	if len(perr) > 0 {
		return nil, errors.Join(perr...)
	}
	return rows, nil
}
