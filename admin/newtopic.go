package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
)

// This file creates and deletes topics: what CREATE TOPIC and DROP TOPIC
// do.

// The keys of CREATE TOPIC's WITH clause that kshare reads itself.
const (
	OptPartitions  = "partitions"
	OptReplication = "replication"
)

// TopicOptions are the keys of CREATE TOPIC's WITH clause that are
// kshare's. Every other key is a topic config (cleanup.policy,
// retention.ms, ...) and goes to the broker as written: the broker knows
// its configs and their values better than a copy of its list would, and
// its answer is the check (see CreateTopic).
var TopicOptions = &options.Set{Owner: "CREATE TOPIC", Options: []options.Option{
	{Key: OptPartitions, Type: options.Int, Default: "-1", Min: -1, HasMin: true, Max: math.MaxInt32, HasMax: true, Check: notZero,
		Description: "How many partitions the topic has (0 is refused). -1, the default, lets the broker decide: its num.partitions (1 unless the cluster sets it)."},
	{Key: OptReplication, Aliases: []string{"replication.factor"}, Type: options.Int, Default: "-1", Min: -1, HasMin: true, Max: math.MaxInt16, HasMax: true, Check: notZero,
		Description: "How many brokers keep a copy of each partition, at most the cluster's brokers (0 is refused). " +
			"-1, the default, lets the broker decide: its default.replication.factor (1 unless the cluster sets it)."},
}}

// notZero refuses 0, which Kafka's CreateTopics refuses too: the range
// goes down to -1 only for "the broker decides".
func notZero(v string) error {
	if strings.TrimSpace(v) == "0" {
		return errors.New("must be 1 or more, or -1 to let the broker decide, got '0'")
	}
	return nil
}

// NewTopic is what CREATE TOPIC asks of the broker.
type NewTopic struct {
	Name string
	// Partitions and Replication are -1 where the broker decides.
	Partitions  int32
	Replication int16
	// Configs are the topic configs, in the order written.
	Configs []options.KV
}

// ParseNewTopic reads CREATE TOPIC name WITH (kvs): the keys of
// TopicOptions, and every other key as a topic config. It does no I/O;
// the error holds every problem it found (an options.Errors, or one
// error for a name that Kafka would refuse).
func ParseNewTopic(name string, kvs []options.KV) (NewTopic, error) {
	if !kafkaclient.ValidTopicName(name) {
		return NewTopic{}, fmt.Errorf("'%s' is not a topic name: a topic name is up to 249 letters, digits, '.', '_' and '-' (and not '.' or '..')", options.Cut(name))
	}
	var own []options.KV
	var errs options.Errors
	nt := NewTopic{Name: name}
	seen := map[string]bool{}
	var ownKeys []string
	for _, o := range TopicOptions.Options {
		ownKeys = append(ownKeys, o.Key)
		ownKeys = append(ownKeys, o.Aliases...)
	}
	for _, kv := range kvs {
		if _, ok := TopicOptions.Lookup(kv.Key); ok {
			own = append(own, kv)
			continue
		}
		switch near := options.Closest(kv.Key, ownKeys); {
		case strings.TrimSpace(kv.Key) == "":
			errs = append(errs, options.Errorf(options.ErrInvalid, kv.Key, "a topic config's name must not be empty"))
		// No topic config of Kafka's is spelled like kshare's keys, and
		// a broker that does not check config names (kfake) would keep
		// the typo as a config and give the topic the default count.
		case near != "":
			errs = append(errs, options.Errorf(options.ErrUnknownOption, kv.Key, "'%s' is not a key of %s nor a topic config (did you mean '%s'?)", options.Cut(kv.Key), TopicOptions.Owner, near))
		case seen[kv.Key]:
			errs = append(errs, options.Errorf(options.ErrDuplicate, kv.Key, "config '%s' is set twice; keep one", options.Cut(kv.Key)))
		default:
			seen[kv.Key] = true
			nt.Configs = append(nt.Configs, kv)
		}
	}
	v, err := options.Parse(own, nil, TopicOptions)
	if err != nil {
		var oes options.Errors
		if errors.As(err, &oes) {
			errs = append(oes, errs...)
		}
	}
	if len(errs) > 0 {
		return NewTopic{}, errs
	}
	nt.Partitions = v.Int32(OptPartitions)
	nt.Replication = int16(v.Int(OptReplication))
	return nt, nil
}

// TopicReadyTimeout bounds how long CreateTopic waits for the new topic's
// partitions to have leaders, and DropTopic for the topic to leave the
// cluster's metadata.
const TopicReadyTimeout = 15 * time.Second

// CreatedTopic is what the broker made of a CREATE TOPIC.
type CreatedTopic struct {
	Name        string
	Partitions  int32
	Replication int16
	// Ready is false when the partitions had no leader yet after
	// TopicReadyTimeout: the topic exists, and writing to it may fail
	// for a while.
	Ready bool
}

// CreateTopic creates the topic nt describes and waits, up to
// TopicReadyTimeout, until every partition has a leader: a broker
// acknowledges the creation before it serves the topic, and an INSERT
// that writes to it at once would otherwise fail. A topic that exists is
// ErrTopicExists; a config the broker refuses is ErrInvalidConfig naming
// the key, its value and the broker's reason.
func (a *Admin) CreateTopic(ctx context.Context, nt NewTopic) (*CreatedTopic, error) {
	doing := fmt.Sprintf("creating topic '%s'", options.Cut(nt.Name))
	cfg := configMap(nt.Configs)
	resp, err := a.adm.CreateTopic(ctx, nt.Partitions, nt.Replication, cfg, nt.Name)
	if err == nil {
		err = resp.Err
	}
	why := func() string {
		if resp.ErrMessage != "" {
			return ": " + resp.ErrMessage
		}
		return ": " + err.Error()
	}
	switch {
	case err == nil:
	case errors.Is(err, kerr.TopicAlreadyExists):
		return nil, newErr(ErrTopicExists, err, "topic '%s' already exists (CREATE TOPIC IF NOT EXISTS leaves an existing topic as it is)", options.Cut(nt.Name))
	case errors.Is(err, kerr.InvalidConfig):
		return nil, a.refusedConfigs(ctx, nt, doing, err, resp.ErrMessage)
	case errors.Is(err, kerr.InvalidPartitions):
		return nil, newErr(ErrInvalidConfig, err, "%s: the broker refused '%s' = '%d'%s", doing, OptPartitions, nt.Partitions, why())
	case errors.Is(err, kerr.InvalidReplicationFactor):
		return nil, newErr(ErrInvalidConfig, err, "%s: the broker refused '%s' = '%d'%s", doing, OptReplication, nt.Replication, why())
	case errors.Is(err, kerr.PolicyViolation):
		return nil, newErr(ErrInvalidConfig, err, "%s: the cluster's topic policy refused it%s", doing, why())
	case errors.Is(err, kerr.InvalidTopicException):
		return nil, fmt.Errorf("%s: the broker refused the name%s: %w", doing, why(), err)
	default:
		return nil, brokerErr(err, doing, "CREATE", "topic '"+options.Cut(nt.Name)+"'")
	}
	ct := &CreatedTopic{Name: nt.Name, Partitions: resp.NumPartitions, Replication: resp.ReplicationFactor}
	wctx, cancel := context.WithTimeout(ctx, TopicReadyTimeout)
	defer cancel()
	ct.Ready = waitFor(wctx, func() bool {
		md, err := a.freshMetadata(wctx, nt.Name)
		if err != nil {
			return false
		}
		td, ok := md.Topics[nt.Name]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			return false
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
		// A broker that predates the counts in CreateTopics' answer
		// (Kafka 2.4) says them here.
		if ct.Partitions <= 0 {
			ct.Partitions = int32(len(td.Partitions))
		}
		if ct.Replication <= 0 {
			ct.Replication = int16(len(td.Partitions[0].Replicas))
		}
		return true
	})
	return ct, nil
}

func configMap(kvs []options.KV) map[string]*string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = &kv.Value
	}
	return m
}

// refusedConfigs explains the broker's INVALID_CONFIG for a CREATE TOPIC.
// The broker answers for the request as a whole; asking it again to
// validate each config alone (creating nothing) finds which keys it
// refuses, so that the error names them with their values and the
// broker's reason for each.
func (a *Admin) refusedConfigs(ctx context.Context, nt NewTopic, doing string, cause error, msg string) error {
	var bad []string
	for _, kv := range nt.Configs {
		rs, err := a.adm.ValidateCreateTopics(ctx, nt.Partitions, nt.Replication, configMap([]options.KV{kv}), nt.Name)
		if err != nil {
			break
		}
		r, ok := rs[nt.Name]
		if !ok || !errors.Is(r.Err, kerr.InvalidConfig) {
			continue
		}
		why := r.ErrMessage
		if why == "" {
			why = r.Err.Error()
		}
		bad = append(bad, fmt.Sprintf("config '%s' = '%s' (%s)", options.Cut(kv.Key), options.Cut(kv.Value), why))
	}
	if len(bad) > 0 {
		return newErr(ErrInvalidConfig, cause, "%s: the broker refused %s", doing, strings.Join(bad, ", "))
	}
	// Each alone passes: the broker refuses them together.
	keys := make([]string, len(nt.Configs))
	for i, kv := range nt.Configs {
		keys[i] = fmt.Sprintf("'%s' = '%s'", options.Cut(kv.Key), options.Cut(kv.Value))
	}
	if msg == "" {
		msg = cause.Error()
	}
	return newErr(ErrInvalidConfig, cause, "%s: the broker refused the configs %s together: %s", doing, strings.Join(keys, ", "), msg)
}

// freshMetadata asks the broker for topic's metadata. The client keeps
// the answers of admin requests for a while (franz-go's MetadataMinAge),
// and a wait for a change must not read the answer from before it.
func (a *Admin) freshMetadata(ctx context.Context, topic string) (kadm.Metadata, error) {
	a.cl.PurgeTopicsFromClient(topic)
	return a.adm.Metadata(ctx, topic)
}

// waitFor calls done until it reports true or ctx ends, and says which.
func waitFor(ctx context.Context, done func() bool) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if done() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// kafkaTopics are the topics in which Kafka keeps its own state.
var kafkaTopics = []string{"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}

// DropTopic deletes a topic and every record in it. An unknown topic is
// ErrUnknownTopic (with the nearest topic's name); Kafka's own topics
// (__consumer_offsets, __share_group_state, ...) are refused. It waits, up
// to TopicReadyTimeout, until the cluster's metadata no longer shows the
// topic, so that a CREATE TOPIC of the same name can follow at once.
func (a *Admin) DropTopic(ctx context.Context, topic string) error {
	doing := fmt.Sprintf("dropping topic '%s'", options.Cut(topic))
	internal := fmt.Errorf("%s: it is one of Kafka's own topics, which hold the cluster's state; it cannot be dropped", doing)
	// Kafka's own topics exist only once used; refused even before.
	if slices.Contains(kafkaTopics, topic) {
		return internal
	}
	td, err := a.topic(ctx, topic, doing)
	if err != nil {
		return err
	}
	if td.IsInternal {
		return internal
	}
	resp, err := a.adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	switch {
	case err == nil:
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return a.unknownTopic(ctx, topic, err)
	case errors.Is(err, kerr.TopicDeletionDisabled):
		return fmt.Errorf("%s: the cluster does not allow deleting topics (its delete.topic.enable is false): %w", doing, err)
	default:
		return brokerErr(err, doing, "DELETE", "topic '"+options.Cut(topic)+"'")
	}
	wctx, cancel := context.WithTimeout(ctx, TopicReadyTimeout)
	defer cancel()
	waitFor(wctx, func() bool {
		md, err := a.freshMetadata(wctx, topic)
		if err != nil {
			return false
		}
		td, ok := md.Topics[topic]
		return !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition)
	})
	return nil
}
