package kshare

import (
	"context"
	"fmt"
	"strings"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
)

// This file proposes a CREATE TABLE for a topic: package admin samples the
// topic, the json format infers the columns, and the kafka-sharegroup
// connector's keys make the WITH clause. It lives here, where all three
// meet, so that admin, which steers a cluster, need not know a connector.

// ProposeOptions are ProposeTable's choices; every field has a default.
type ProposeOptions struct {
	// Table is the proposed table's name. Default: the topic's name.
	Table string
	// Bootstrap is the proposal's 'bootstrap.servers'. Default: the seed
	// brokers of the Admin's client (admin.Admin.Seeds).
	Bootstrap string
	// ShareGroup is the proposal's 'share-group-id'. Default: the table's
	// name.
	ShareGroup string
	// Records bounds the records read. Default: admin.DefaultSampleRecords.
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
// acknowledged (admin.Admin.Sample), and proposes a kafka-sharegroup table
// of format 'json' whose columns fit every value read (see json.Infer),
// reading the topic through a share group from its earliest record. A topic
// with no records, or whose values hold no JSON object, is an error: there
// is nothing to infer from. DESCRIBE TOPIC shows its proposal.
func ProposeTable(ctx context.Context, adm *admin.Admin, topic string, o ProposeOptions) (*Proposal, error) {
	doing := fmt.Sprintf("proposing a table for topic '%s'", options.Cut(topic))
	if o.Table == "" {
		o.Table = topic
	}
	if o.ShareGroup == "" {
		o.ShareGroup = o.Table
	}
	if o.Bootstrap == "" {
		o.Bootstrap = strings.Join(adm.Seeds(), ",")
	}
	values, err := adm.Sample(ctx, topic, o.Records)
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
		table.KeyConnector:              sharegroup.Name,
		table.KeyFormat:                 json.Format{}.Name(),
		kafkaclient.OptBootstrapServers: o.Bootstrap,
		kafkaclient.OptTopic:            topic,
		sharegroup.OptShareGroupID:      o.ShareGroup,
		sharegroup.OptStartupMode:       sharegroup.StartupEarliestOffset,
	}
	for k, v := range inf.Options {
		opts[k] = v
	}
	for _, kv := range o.Client {
		opts[kv.Key] = kv.Value
	}
	def := table.NewDefinition(o.Table, inf.Columns, opts)
	secret := func(key string) bool { return sharegroup.Options.Secret(key) || options.LooksSecret(key) }
	return &Proposal{Definition: def, DDL: def.DDL(secret), Sampled: len(values), Rows: inf.Rows, Skipped: inf.Skipped}, nil
}
