package kshare

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafka"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
)

// This file runs the statements about the cluster (SHOW TOPICS, DESCRIBE
// TOPIC, CREATE TOPIC, DROP TOPIC, SHOW SHARE GROUPS, DESCRIBE SHARE GROUP,
// ALTER SHARE GROUP, DROP SHARE GROUP) with package admin, and adds a
// table's share group and lag to DESCRIBE.

// ErrNoCluster is returned for a statement about the cluster when the
// session names no cluster, or its tables name several.
var ErrNoCluster = errors.New("no cluster chosen")

// ErrTopicInUse is returned for a DROP TOPIC of a topic that a running
// query or job of the session reads; the error names them.
var ErrTopicInUse = errors.New("topic in use")

// DescribeLagTimeout bounds how long DESCRIBE of a table waits for its
// share group's lag; a cluster that does not answer by then is said to be
// unreachable and the columns are shown all the same.
const DescribeLagTimeout = 3 * time.Second

// sessionCluster are the keys of the session's cluster, which SET gives:
// the client keys of kafkaclient, and the consumer keys that a share-group
// table refuses, refused here with the same advice, since the session's
// statements are about share groups.
var sessionCluster = &options.Set{Owner: "the session's cluster", Validate: kafkaclient.Validate,
	Options: slices.Concat(kafkaclient.ClusterOptions.Options, sharegroup.RefusedConsumerKeys)}

// isClusterKey reports whether SET and RESET key is about the session's
// cluster ('bootstrap.servers' and the 'properties.*' keys) rather than a
// setting of the session's queries.
func isClusterKey(key string) bool {
	if strings.HasPrefix(key, "properties.") {
		return true
	}
	o, ok := sessionCluster.Lookup(key)
	return ok && o.Key == kafkaclient.OptBootstrapServers
}

// setCluster records SET key = value for the session's cluster. The value
// is checked at once; the rules between keys (SASL needs a mechanism, ...)
// are checked when a statement uses the cluster, since they may take
// several SETs to meet.
func (e *Engine) setCluster(key, value string) (*table.Result, error) {
	if _, err := options.Parse([]options.KV{{Key: key, Value: value}}, nil, sessionCluster); err != nil {
		var kept options.Errors
		for _, oe := range flatten(err) {
			if !errors.Is(oe, options.ErrMissing) {
				kept = append(kept, oe)
			}
		}
		if len(kept) > 0 {
			return nil, kept
		}
	}
	o, _ := sessionCluster.Lookup(key)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cluster = slices.DeleteFunc(e.cluster, func(kv options.KV) bool { return kv.Key == o.Key })
	e.cluster = append(e.cluster, options.KV{Key: o.Key, Value: value})
	shown := value
	if sessionCluster.Secret(o.Key) || options.LooksSecret(o.Key) {
		shown = table.Masked
	}
	return &table.Result{Message: fmt.Sprintf("'%s' set to '%s' for the statements about the cluster (SHOW TOPICS, DESCRIBE SHARE GROUP, ...)", options.Cut(key), options.Cut(shown))}, nil
}

func flatten(err error) options.Errors {
	var es options.Errors
	if errors.As(err, &es) {
		return es
	}
	var one *options.Error
	if errors.As(err, &one) {
		return options.Errors{one}
	}
	return options.Errors{{Msg: err.Error(), Kind: err}}
}

// resetCluster forgets the session's cluster keys: key alone, or all when
// key is "". It reports whether key was a cluster key.
func (e *Engine) resetCluster(key string) bool {
	if key != "" && !isClusterKey(key) {
		return false
	}
	if o, ok := sessionCluster.Lookup(key); ok {
		key = o.Key
	}
	e.cluster = slices.DeleteFunc(e.cluster, func(kv options.KV) bool { return key == "" || kv.Key == key })
	return key != ""
}

// clusterList is what SET alone lists of the session's cluster, secrets
// masked.
func (e *Engine) clusterList() [][]string {
	var rows [][]string
	for _, kv := range e.cluster {
		v := kv.Value
		if sessionCluster.Secret(kv.Key) || options.LooksSecret(kv.Key) {
			v = table.Masked
		}
		rows = append(rows, []string{kv.Key, v})
	}
	return rows
}

// clusterClient returns a client of the session's cluster: the one SET
// 'properties.bootstrap.servers' named, else the one every kafka-sharegroup
// table of the catalog names. The caller closes it.
func (e *Engine) clusterClient() (*kgo.Client, options.Values, error) {
	e.mu.Lock()
	kvs := slices.Clone(e.cluster)
	e.mu.Unlock()
	var v options.Values
	// The session names a cluster by its servers; its other keys wait for
	// them, so that RESET 'properties.bootstrap.servers' goes back to the
	// tables' cluster even with a security key still set.
	if slices.ContainsFunc(kvs, func(kv options.KV) bool { return kv.Key == kafkaclient.OptBootstrapServers }) {
		var err error
		if v, err = options.Parse(kvs, nil, sessionCluster); err != nil {
			return nil, v, fmt.Errorf("the session's cluster (SET 'properties.*'): %w", err)
		}
	} else {
		byKey := map[string][]*table.Table{}
		for _, t := range e.cat.List() {
			// A 'kafka' table takes the same cluster keys, declared once.
			if t.Bound.Connector != nil && (t.Bound.Connector.Name() == sharegroup.Name || t.Bound.Connector.Name() == kafka.Name) {
				k := kafkaclient.ClusterKey(t.Bound.Options)
				byKey[k] = append(byKey[k], t)
			}
		}
		switch len(byKey) {
		case 0:
			return nil, v, fmt.Errorf("%w: SET 'properties.bootstrap.servers' = 'host:9092' (with the 'properties.*' security keys a table takes, if the cluster needs them), or create a kafka-sharegroup or kafka table, whose cluster is then used", ErrNoCluster)
		case 1:
			for _, ts := range byKey {
				v = ts[0].Bound.Options
			}
		default:
			var clusters []string
			for _, k := range slices.Sorted(maps.Keys(byKey)) {
				ts := byKey[k]
				names := make([]string, len(ts))
				for i, t := range ts {
					names[i] = "'" + options.Cut(t.Name()) + "'"
				}
				clusters = append(clusters, fmt.Sprintf("%s (tables %s)", ts[0].Bound.Options.String(kafkaclient.OptBootstrapServers), strings.Join(names, ", ")))
			}
			return nil, v, fmt.Errorf("%w: the session's tables read %d clusters: %s; pick one with SET 'properties.bootstrap.servers' = 'host:9092' (and its 'properties.*' security keys)",
				ErrNoCluster, len(clusters), strings.Join(clusters, "; "))
		}
	}
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return nil, v, fmt.Errorf("the session's cluster: %w", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, v, fmt.Errorf("the session's cluster: %w", err)
	}
	return cl, v, nil
}

// execCluster runs a statement about the cluster; ok is false for any
// other statement.
func (e *Engine) execCluster(ctx context.Context, st table.Statement) (res *table.Result, ok bool, err error) {
	switch st.(type) {
	case *table.ShowTopics, *table.DescribeTopic, *table.ShowShareGroups, *table.DescribeShareGroup,
		*table.ResetShareGroup, *table.AlterShareGroup, *table.DropShareGroup, *table.CreateTopic, *table.DropTopic:
	default:
		return nil, false, nil
	}
	if d, ok := st.(*table.DropTopic); ok {
		if err := e.checkUnread(d.Topic); err != nil {
			return nil, true, err
		}
	}
	cl, v, err := e.clusterClient()
	if err != nil {
		return nil, true, err
	}
	defer cl.Close()
	res, err = runCluster(ctx, admin.New(cl), v, st)
	return res, true, err
}

func rowsOf[R admin.Row](rows []R) *table.Result {
	cols, vals := admin.Table(rows)
	if vals == nil {
		vals = [][]string{}
	}
	var zero R
	return &table.Result{Columns: cols, Types: zero.Types(), Rows: vals}
}

func rowsOrErr[R admin.Row](rows []R, err error) (*table.Result, error) {
	if err != nil {
		return nil, err
	}
	return rowsOf(rows), nil
}

func runCluster(ctx context.Context, adm *admin.Admin, cluster options.Values, st table.Statement) (*table.Result, error) {
	switch st := st.(type) {
	case *table.ShowTopics:
		return rowsOrErr(adm.Topics(ctx))
	case *table.DescribeTopic:
		return describeTopic(ctx, adm, cluster, st.Topic)
	case *table.ShowShareGroups:
		return rowsOrErr(adm.Groups(ctx))
	case *table.DescribeShareGroup:
		return describeGroup(ctx, adm, st)
	case *table.ResetShareGroup:
		to := admin.ResetTo{Time: st.Time, Offset: st.Offset}
		switch st.To {
		case table.ResetEarliest:
			to.Kind = admin.ResetEarliest
		case table.ResetLatest:
			to.Kind = admin.ResetLatest
		case table.ResetTimestamp:
			to.Kind = admin.ResetTimestamp
		case table.ResetOffset:
			to.Kind = admin.ResetOffset
		}
		rows, err := adm.Reset(ctx, st.Group, to, st.Topic)
		if err != nil {
			return nil, err
		}
		res := rowsOf(rows)
		res.Message = fmt.Sprintf("share group '%s' reset to %s: %d partition(s)", options.Cut(st.Group), to, len(rows))
		return res, nil
	case *table.AlterShareGroup:
		cfg := map[string]string{}
		for _, kv := range st.Set {
			if _, dup := cfg[kv.Key]; dup {
				return nil, fmt.Errorf("config '%s' is set twice; keep one", options.Cut(kv.Key))
			}
			cfg[kv.Key] = kv.Value
		}
		if err := adm.SetGroupConfig(ctx, st.Group, cfg); err != nil {
			return nil, err
		}
		return &table.Result{Message: fmt.Sprintf("share group '%s' altered", options.Cut(st.Group))}, nil
	case *table.DropShareGroup:
		if err := adm.DropGroup(ctx, st.Group); err != nil {
			return nil, err
		}
		return &table.Result{Message: fmt.Sprintf("share group '%s' dropped", options.Cut(st.Group))}, nil
	case *table.CreateTopic:
		return createTopic(ctx, adm, st)
	case *table.DropTopic:
		err := adm.DropTopic(ctx, st.Topic)
		switch {
		case st.IfExists && errors.Is(err, admin.ErrUnknownTopic):
			return &table.Result{Message: fmt.Sprintf("topic '%s' does not exist; nothing dropped", options.Cut(st.Topic))}, nil
		case err != nil:
			return nil, err
		}
		return &table.Result{Message: fmt.Sprintf("topic '%s' dropped, with every record in it", options.Cut(st.Topic))}, nil
	}
	return nil, fmt.Errorf("not a statement about the cluster: %s", st)
}

// checkUnread refuses a DROP TOPIC of a topic that a running query or job
// of the session reads from a kafka-sharegroup table: deleting the topic
// would take the records its share group holds and has not settled. The
// cluster the table names is not compared with the session's: one cluster
// has many spellings (names, addresses), and a refusal too many costs a
// STOP JOB where one too few costs the topic.
func (e *Engine) checkUnread(topic string) error {
	e.mu.Lock()
	e.reading = running(e.reading)
	var readers, stops []string
	for _, r := range e.reading {
		t := r.rows.Plan().Table()
		b := t.Bound
		if b == nil || b.Connector == nil || b.Connector.Name() != sharegroup.Name || !kafkaclient.ReadsTopic(b.Options, topic) {
			continue
		}
		how := fmt.Sprintf("through share group '%s'", options.Cut(b.Options.String(sharegroup.OptShareGroupID)))
		if _, peeks := t.Source.(flow.Looker); peeks {
			how = "peeking, through no share group"
		}
		readers = append(readers, r.what+" "+how)
		if r.job != "" {
			stops = append(stops, "STOP JOB '"+r.job+"'")
		} else if !slices.Contains(stops, "end the query") {
			stops = append(stops, "end the query")
		}
	}
	e.mu.Unlock()
	if len(readers) == 0 {
		return nil
	}
	return fmt.Errorf("cannot drop topic '%s': %w by the session: %s; stop what reads it first (%s), since dropping a topic deletes every record in it",
		options.Cut(topic), ErrTopicInUse, strings.Join(readers, ", "), strings.Join(stops, ", "))
}

// createTopic is CREATE TOPIC: its WITH clause is read before the
// cluster is asked, and the message says what the broker made.
func createTopic(ctx context.Context, adm *admin.Admin, st *table.CreateTopic) (*table.Result, error) {
	nt, err := admin.ParseNewTopic(st.Topic, st.Options)
	if err != nil {
		var oes options.Errors
		if errors.As(err, &oes) {
			return nil, fmt.Errorf("topic '%s': %w", options.Cut(st.Topic), err)
		}
		return nil, err
	}
	ct, err := adm.CreateTopic(ctx, nt)
	switch {
	case st.IfNotExists && errors.Is(err, admin.ErrTopicExists):
		// As CREATE TABLE IF NOT EXISTS: the topic is left as it is,
		// whatever its partitions and configs.
		return &table.Result{Message: fmt.Sprintf("topic '%s' already exists; nothing changed", options.Cut(st.Topic))}, nil
	case err != nil:
		return nil, err
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "topic '%s' created: %d partition(s), replication %d", options.Cut(ct.Name), ct.Partitions, ct.Replication)
	for i, kv := range nt.Configs {
		sep := ", "
		if i == 0 {
			sep = "; "
		}
		fmt.Fprintf(&msg, "%s%s = '%s'", sep, options.Cut(kv.Key), options.Cut(kv.Value))
	}
	if !ct.Ready {
		fmt.Fprintf(&msg, "\n(its partitions had no leader yet after %v: writing to it may fail for a while)", admin.TopicReadyTimeout)
	}
	return &table.Result{Message: msg.String()}, nil
}

// describeTopic is DESCRIBE TOPIC: a row per partition; the reader configs
// and, for a topic of JSON values, a proposed CREATE TABLE as the message.
func describeTopic(ctx context.Context, adm *admin.Admin, cluster options.Values, topic string) (*table.Result, error) {
	d, err := adm.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	res := rowsOf(d.Partitions)
	var msg strings.Builder
	fmt.Fprintf(&msg, "topic '%s': %d partition(s)\n", options.Cut(topic), len(d.Partitions))
	for _, c := range d.Configs {
		fmt.Fprintf(&msg, "  %s = %s (%s)\n", c.Name, c.Value, c.Source)
	}
	// The table connects as this statement did: with the cluster's
	// 'properties.*' keys that are not defaults.
	var client []options.KV
	for _, k := range cluster.Keys() {
		if strings.HasPrefix(k, "properties.") && cluster.Has(k) {
			client = append(client, options.KV{Key: k, Value: cluster.String(k)})
		}
	}
	p, err := ProposeTable(ctx, adm, topic, ProposeOptions{Client: client})
	switch {
	case err != nil:
		fmt.Fprintf(&msg, "no table proposed: %v", err)
	case strings.Contains(p.DDL, "'"+table.Masked+"'"):
		fmt.Fprintf(&msg, "a table for it, inferred from its latest %d record(s); check the types and the share group, put the secrets in place of %s, then run it:\n%s;", p.Sampled, table.Masked, p.DDL)
	default:
		fmt.Fprintf(&msg, "a table for it, inferred from its latest %d record(s); check the types and the share group, then run it:\n%s;", p.Sampled, p.DDL)
	}
	res.Message = msg.String()
	return res, nil
}

// describeGroup is DESCRIBE SHARE GROUP: a row per partition, per member
// (MEMBERS) or per config (CONFIG).
func describeGroup(ctx context.Context, adm *admin.Admin, st *table.DescribeShareGroup) (*table.Result, error) {
	if st.Part == table.GroupConfig {
		return rowsOrErr(adm.GroupConfigs(ctx, st.Group))
	}
	d, err := adm.Group(ctx, st.Group)
	if err != nil {
		return nil, err
	}
	if st.Part == table.GroupMembers {
		return rowsOf(d.Members), nil
	}
	res := rowsOf(d.Partitions)
	res.Message = fmt.Sprintf("share group '%s': %s, %d member(s), lag %s", options.Cut(d.Name), d.State, len(d.Members), totalLag(d.Partitions))
	for _, p := range d.Partitions {
		if p.Estimated {
			res.Message += "\n(partitions the group has not read yet show where its share.auto.offset.reset will start it)"
			break
		}
	}
	return res, nil
}

// totalLag sums the partitions' lags the broker knows.
func totalLag(ps []admin.GroupPartition) string {
	var sum int64
	known := false
	for _, p := range ps {
		if p.Lag >= 0 {
			sum, known = sum+p.Lag, true
		}
	}
	if !known {
		return "unknown"
	}
	return strconv.FormatInt(sum, 10)
}

// describeTableGroup says which share group a kafka-sharegroup table reads
// and that group's lag, waiting at most DescribeLagTimeout for the
// cluster; it says so when the cluster does not answer.
func describeTableGroup(ctx context.Context, t *table.Table) string {
	if t.Bound.Connector == nil || t.Bound.Connector.Name() != sharegroup.Name {
		return ""
	}
	v := t.Bound.Options
	group := v.String(sharegroup.OptShareGroupID)
	head := fmt.Sprintf("reads share group '%s' on %s", options.Cut(group), options.Cut(v.String(kafkaclient.OptBootstrapServers)))
	opts, err := kafkaclient.ClientOpts(v)
	if err != nil {
		return fmt.Sprintf("%s; lag unknown: %v", head, err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Sprintf("%s; lag unknown: %v", head, err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, DescribeLagTimeout)
	defer cancel()
	d, err := admin.New(cl).Group(ctx, group)
	switch {
	case errors.Is(err, admin.ErrUnknownGroup):
		return head + "; the group does not exist yet (a query creates it when it first reads)"
	case ctx.Err() != nil:
		return fmt.Sprintf("%s; lag unknown: the cluster did not answer within %v", head, DescribeLagTimeout)
	case err != nil:
		return fmt.Sprintf("%s; lag unknown: %v", head, err)
	}
	return fmt.Sprintf("%s; lag %s (%s, %d member(s); DESCRIBE SHARE GROUP '%s' shows each partition)", head, totalLag(d.Partitions), d.State, len(d.Members), options.Cut(group))
}
