package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/options"
)

// ReaderConfigs are the topic configs DESCRIBE TOPIC shows: how long records
// stay (retention, cleanup), how large one may be, and what its timestamp
// means.
var ReaderConfigs = []string{
	"cleanup.policy",
	"retention.ms",
	"retention.bytes",
	"max.message.bytes",
	"message.timestamp.type",
}

// Topics lists the cluster's topics (internal ones left out), by name.
// Size is Unknown where the broker does not answer DescribeLogDirs (it needs
// DESCRIBE on the cluster).
func (a *Admin) Topics(ctx context.Context) ([]TopicRow, error) {
	tds, err := a.adm.ListTopics(ctx)
	if err != nil {
		return nil, brokerErr(err, "listing topics", "DESCRIBE", "the topics")
	}
	names := tds.Names()
	if len(names) == 0 {
		return nil, nil
	}
	starts, ends, err := a.offsets(ctx, "listing topics", names...)
	if err != nil {
		return nil, err
	}
	sizes := a.leaderSizes(ctx, tds)
	rows := make([]TopicRow, 0, len(names))
	for _, name := range names {
		td := tds[name]
		r := TopicRow{Name: name, Partitions: len(td.Partitions), Size: Unknown}
		for _, p := range td.Partitions {
			s, okS := starts.Lookup(name, p.Partition)
			e, okE := ends.Lookup(name, p.Partition)
			if okS && okE && s.Err == nil && e.Err == nil {
				r.Records += e.Offset - s.Offset
			}
		}
		if sz, ok := sizes[name]; ok {
			r.Size = sz
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// leaderSizes sums, per topic, the log sizes of the partitions' leader
// replicas (a follower's copy is the same data again). A broker that
// refuses gives no sizes rather than failing the listing.
func (a *Admin) leaderSizes(ctx context.Context, tds kadm.TopicDetails) map[string]int64 {
	set := make(kadm.TopicsSet)
	leader := map[string]map[int32]int32{}
	for name, td := range tds {
		leader[name] = map[int32]int32{}
		for _, p := range td.Partitions {
			set.Add(name, p.Partition)
			leader[name][p.Partition] = p.Leader
		}
	}
	dirs, err := a.adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil
	}
	sizes := map[string]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if l, ok := leader[p.Topic][p.Partition]; ok && l == p.Broker && !p.IsFuture {
				sizes[p.Topic] += p.Size
			}
		})
	})
	return sizes
}

// offsets lists the start and end offsets of topics' partitions.
func (a *Admin) offsets(ctx context.Context, doing string, topics ...string) (starts, ends kadm.ListedOffsets, err error) {
	starts, err = a.adm.ListStartOffsets(ctx, topics...)
	if err == nil {
		ends, err = a.adm.ListEndOffsets(ctx, topics...)
	}
	if err != nil {
		return nil, nil, brokerErr(err, doing, "DESCRIBE", "topic '"+options.Cut(topics[0])+"'")
	}
	return starts, ends, nil
}

// Topic describes one topic: its partitions with leader and offsets, and
// its ReaderConfigs with their sources.
func (a *Admin) Topic(ctx context.Context, topic string) (*TopicDescription, error) {
	doing := fmt.Sprintf("describing topic '%s'", options.Cut(topic))
	td, starts, ends, err := a.topicOffsets(ctx, topic, doing)
	if err != nil {
		return nil, err
	}
	d := &TopicDescription{Name: topic}
	for _, p := range td.Partitions.Sorted() {
		tp := TopicPartition{Partition: p.Partition, Leader: p.Leader, StartOffset: Unknown, EndOffset: Unknown, Records: Unknown}
		if s, ok := starts.Lookup(topic, p.Partition); ok && s.Err == nil {
			tp.StartOffset = s.Offset
		}
		if e, ok := ends.Lookup(topic, p.Partition); ok && e.Err == nil {
			tp.EndOffset = e.Offset
		}
		if tp.StartOffset >= 0 && tp.EndOffset >= 0 {
			tp.Records = tp.EndOffset - tp.StartOffset
		}
		d.Partitions = append(d.Partitions, tp)
	}
	rcs, err := a.adm.DescribeTopicConfigs(ctx, topic)
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On(topic, nil)
		if err == nil {
			err = rc.Err
		}
		for _, c := range rc.Configs {
			if slices.Contains(ReaderConfigs, c.Key) {
				d.Configs = append(d.Configs, Config{Name: c.Key, Value: c.MaybeValue(), Source: c.Source.String()})
			}
		}
	}
	if err != nil {
		return nil, brokerErr(err, doing, "DESCRIBE_CONFIGS", "topic '"+options.Cut(topic)+"'")
	}
	sort.Slice(d.Configs, func(i, j int) bool {
		return slices.Index(ReaderConfigs, d.Configs[i].Name) < slices.Index(ReaderConfigs, d.Configs[j].Name)
	})
	return d, nil
}

// topicOffsets returns a topic's metadata (as topic does) and its
// partitions' start and end offsets.
func (a *Admin) topicOffsets(ctx context.Context, topic, doing string) (td kadm.TopicDetail, starts, ends kadm.ListedOffsets, err error) {
	if td, err = a.topic(ctx, topic, doing); err != nil {
		return td, nil, nil, err
	}
	starts, ends, err = a.offsets(ctx, doing, topic)
	return td, starts, ends, err
}

// topic returns a topic's metadata, or ErrUnknownTopic with the nearest
// topic's name.
func (a *Admin) topic(ctx context.Context, topic, doing string) (kadm.TopicDetail, error) {
	if topic == "" {
		return kadm.TopicDetail{}, fmt.Errorf("%s: empty topic name", doing)
	}
	md, err := a.adm.Metadata(ctx, topic)
	if err != nil {
		return kadm.TopicDetail{}, brokerErr(err, doing, "DESCRIBE", "topic '"+options.Cut(topic)+"'")
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok, errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return td, a.unknownTopic(ctx, topic, td.Err)
	case td.Err != nil:
		return td, brokerErr(td.Err, doing, "DESCRIBE", "topic '"+options.Cut(topic)+"'")
	}
	return td, nil
}
