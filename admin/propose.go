package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/connector"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// DefaultSampleRecords is how many of a topic's latest records ProposeTable
// reads when ProposeOptions.Records is 0.
const DefaultSampleRecords = 100

// SampleTimeout bounds how long ProposeTable reads: a partition whose last
// offsets hold no record (transaction markers, compacted away) would
// otherwise be waited on for ever. What was read by then is used.
const SampleTimeout = 10 * time.Second

// ProposeOptions are ProposeTable's choices; every field has a default.
type ProposeOptions struct {
	// Table is the proposed table's name. Default: the topic's name.
	Table string
	// Bootstrap is the proposal's 'bootstrap.servers'. Default: the seed
	// brokers of the Admin's client.
	Bootstrap string
	// ShareGroup is the proposal's 'share-group-id'. Default: the table's
	// name.
	ShareGroup string
	// Records bounds the records read. Default: DefaultSampleRecords.
	Records int
	// Client are more options of the proposal: the 'properties.*' keys the
	// Admin's client connects with (security protocol, SASL, TLS), so that
	// the table reaches the cluster as the Admin did. DDL masks the secret
	// ones.
	Client []options.KV
}

// Proposal is a CREATE TABLE proposed for a topic of JSON values.
type Proposal struct {
	Definition *table.Definition
	// DDL is the definition's CREATE TABLE text, ready to run once the
	// values of secret options (ProposeOptions.Client), shown as
	// table.Masked, are filled in.
	DDL string
	// Sampled is how many records were read; Rows how many rows their
	// values held; Skipped how many values held none (not JSON objects).
	Sampled, Rows, Skipped int
}

// ProposeTable reads up to o.Records of the topic's latest records (spread
// over its partitions) with a plain reader, no group and nothing
// acknowledged, and proposes a table of format 'json' whose columns fit
// every value read (see json.Infer), reading the topic through a share group
// from its earliest record. A topic with no records, or whose values hold no
// JSON object, is an error: there is nothing to infer from.
func (a *Admin) ProposeTable(ctx context.Context, topic string, o ProposeOptions) (*Proposal, error) {
	doing := fmt.Sprintf("proposing a table for topic '%s'", options.Cut(topic))
	if o.Records <= 0 {
		o.Records = DefaultSampleRecords
	}
	if o.Table == "" {
		o.Table = topic
	}
	if o.ShareGroup == "" {
		o.ShareGroup = o.Table
	}
	if o.Bootstrap == "" {
		seeds, _ := a.cl.OptValue(kgo.SeedBrokers).([]string)
		o.Bootstrap = strings.Join(seeds, ",")
	}
	values, err := a.sample(ctx, topic, o.Records, doing)
	if err != nil {
		return nil, err
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("%s: the topic holds no records to infer a schema from", doing)
	}
	inf := json.Infer(values)
	if inf.Rows == 0 {
		return nil, fmt.Errorf("%s: none of the %d records read holds a JSON object; only format 'json' is inferred (use 'format' = 'raw' to read the values as they are)", doing, len(values))
	}
	if len(inf.Columns) == 0 {
		return nil, fmt.Errorf("%s: the JSON objects of the %d records read have no named fields to make columns of", doing, len(values))
	}
	opts := map[string]string{
		table.KeyConnector:            connector.Name,
		table.KeyFormat:               json.Format{}.Name(),
		connector.OptBootstrapServers: o.Bootstrap,
		connector.OptTopic:            topic,
		connector.OptShareGroupID:     o.ShareGroup,
		connector.OptStartupMode:      connector.StartupEarliestOffset,
	}
	for k, v := range inf.Options {
		opts[k] = v
	}
	for _, kv := range o.Client {
		opts[kv.Key] = kv.Value
	}
	def := table.NewDefinition(o.Table, inf.Columns, opts)
	secret := func(key string) bool { return connector.Options.Secret(key) || options.LooksSecret(key) }
	return &Proposal{Definition: def, DDL: def.DDL(secret), Sampled: len(values), Rows: inf.Rows, Skipped: inf.Skipped}, nil
}

// sample reads up to n of the topic's latest record values, an equal share
// from each partition that has records.
func (a *Admin) sample(ctx context.Context, topic string, n int, doing string) ([][]byte, error) {
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
