package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/options"
)

// DefaultSampleRecords is how many of a topic's latest records Sample reads
// when asked for none.
const DefaultSampleRecords = 100

// SampleTimeout bounds how long Sample reads: a partition whose last
// offsets hold no record (transaction markers, compacted away) would
// otherwise be waited on for ever. What was read by then is used.
const SampleTimeout = 10 * time.Second

// Seeds are the brokers the Admin's client was given to bootstrap from.
func (a *Admin) Seeds() []string {
	seeds, _ := a.cl.OptValue(kgo.SeedBrokers).([]string)
	return seeds
}

// Sample reads up to n of the topic's latest record values (n 0 or less:
// DefaultSampleRecords), an equal share from each partition that has
// records, with a plain reader: no group, nothing acknowledged. It reads
// for SampleTimeout at most and returns what it read by then; a topic with
// no records gives none. An unknown topic is ErrUnknownTopic, with the
// nearest topic's name.
func (a *Admin) Sample(ctx context.Context, topic string, n int) ([][]byte, error) {
	doing := fmt.Sprintf("sampling topic '%s'", options.Cut(topic))
	if n <= 0 {
		n = DefaultSampleRecords
	}
	td, starts, ends, err := a.topicOffsets(ctx, topic, doing)
	if err != nil {
		return nil, err
	}
	type span struct{ from, end int64 }
	spans := map[int32]span{}
	for _, p := range td.Partitions {
		s, okS := starts.Lookup(topic, p.Partition)
		e, okE := ends.Lookup(topic, p.Partition)
		if okS && okE && s.Err == nil && e.Err == nil && e.Offset > s.Offset {
			spans[p.Partition] = span{s.Offset, e.Offset}
		}
	}
	if len(spans) == 0 {
		return nil, nil
	}
	per := int64((n + len(spans) - 1) / len(spans))
	at := map[int32]kgo.Offset{}
	for p, sp := range spans {
		sp.from = max(sp.from, sp.end-per)
		spans[p] = sp
		at[p] = kgo.NewOffset().At(sp.from)
	}
	cl, err := kgo.NewClient(append(a.cl.Opts(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: at}))...)
	if err != nil {
		return nil, fmt.Errorf("%s: starting a reader: %w", doing, err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, SampleTimeout)
	defer cancel()
	var values [][]byte
	for len(spans) > 0 && len(values) < n {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s: %w", doing, ctx.Err())
			}
			break // SampleTimeout: use what was read
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			ferr = errors.Join(ferr, brokerErr(err, fmt.Sprintf("%s: reading partition %d", doing, p), "READ", "topic '"+options.Cut(t)+"'"))
		})
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			sp, ok := spans[r.Partition]
			if !ok || len(values) >= n {
				return
			}
			values = append(values, r.Value)
			if r.Offset >= sp.end-1 {
				delete(spans, r.Partition)
			}
		})
	}
	return values, nil
}
