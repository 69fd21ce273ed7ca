package admin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/options"
)

func kvs(pairs ...string) []options.KV {
	out := make([]options.KV, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, options.KV{Key: pairs[i], Value: pairs[i+1]})
	}
	return out
}

// topicAdmin is an Admin of the test's broker, the test's context and a
// name for a topic that does not exist yet.
func topicAdmin(t *testing.T) (*admin.Admin, context.Context, string) {
	return newAdmin(t, kafkatest.Bootstrap(t)), kafkatest.Context(t), kafkatest.TopicName(t)
}

// TestParseNewTopic: CREATE TOPIC's own keys are read and checked without
// a broker, with -1 (the broker decides) where they are not given; every
// other key is a topic config, kept in the order written.
func TestParseNewTopic(t *testing.T) {
	nt, err := admin.ParseNewTopic("orders", nil)
	if err != nil {
		t.Fatal(err)
	}
	if nt.Name != "orders" || nt.Partitions != -1 || nt.Replication != -1 || nt.Configs != nil {
		t.Errorf("no WITH: %+v, want -1 partitions and replication and no configs", nt)
	}
	nt, err = admin.ParseNewTopic("orders-v1", kvs("cleanup.policy", "compact", "partitions", "3", "replication.factor", "2", "retention.ms", "1000"))
	if err != nil {
		t.Fatal(err)
	}
	want := admin.NewTopic{Name: "orders-v1", Partitions: 3, Replication: 2, Configs: kvs("cleanup.policy", "compact", "retention.ms", "1000")}
	if fmt.Sprint(nt) != fmt.Sprint(want) {
		t.Errorf("got %+v, want %+v", nt, want)
	}

	for _, c := range []struct {
		name string
		with []options.KV
		kind error
		says []string
	}{
		{"orders", kvs("partitions", "0"), options.ErrInvalid, []string{"'partitions' must be 1 or more, or -1 to let the broker decide, got '0'"}},
		{"orders", kvs("partitions", "three"), options.ErrInvalid, []string{"'partitions' must be an integer from -1 to 2147483647, got 'three'"}},
		{"orders", kvs("replication", "40000"), options.ErrInvalid, []string{"'replication' must be an integer from -1 to 32767, got '40000'"}},
		{"orders", kvs("partition", "3"), options.ErrUnknownOption, []string{"'partition' is not a key of CREATE TOPIC nor a topic config (did you mean 'partitions'?)"}},
		{"orders", kvs("replication-factor", "3"), options.ErrUnknownOption, []string{"did you mean 'replication.factor'?"}},
		{"orders", kvs("partitions", "3", "replication.factor", "1", "replication", "1"), options.ErrDuplicate, []string{"option 'replication' is set twice (as 'replication.factor' and 'replication')"}},
		{"orders", kvs("retention.ms", "1", "retention.ms", "2"), options.ErrDuplicate, []string{"config 'retention.ms' is set twice; keep one"}},
		{"orders", kvs("", "1"), options.ErrInvalid, []string{"a topic config's name must not be empty"}},
		// Every problem at once.
		{"orders", kvs("partitions", "0", "partiton", "3"), options.ErrInvalid, []string{"'partitions' must be 1 or more", "did you mean 'partitions'?"}},
	} {
		_, err := admin.ParseNewTopic(c.name, c.with)
		if !errors.Is(err, c.kind) {
			t.Errorf("%v: got %v, want %v", c.with, err, c.kind)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v: %q does not say %q", c.with, err, s)
			}
		}
	}
	for _, name := range []string{"a b", "orders*", ".", "..", strings.Repeat("x", 250), ""} {
		if _, err := admin.ParseNewTopic(name, nil); err == nil || !strings.Contains(err.Error(), "is not a topic name") {
			t.Errorf("name %q: got %v, want it refused as no topic name", name, err)
		}
	}
}

// TestCreateDropTopic: CREATE TOPIC makes the topic with the partitions and
// configs asked for, ready to be written (every partition led); a second
// create is ErrTopicExists; DROP TOPIC deletes it, at once visible, so the
// name can be created again right after.
func TestCreateDropTopic(t *testing.T) {
	t.Parallel()
	adm, ctx, topic := topicAdmin(t)

	nt, err := admin.ParseNewTopic(topic, kvs("partitions", "3", "replication", "1", "cleanup.policy", "compact"))
	if err != nil {
		t.Fatal(err)
	}
	ct, err := adm.CreateTopic(ctx, nt)
	if err != nil {
		t.Fatal(err)
	}
	if *ct != (admin.CreatedTopic{Name: topic, Partitions: 3, Replication: 1, Ready: true}) {
		t.Errorf("created %+v, want 3 partitions, replication 1, ready", *ct)
	}
	d, err := adm.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Partitions) != 3 {
		t.Errorf("DESCRIBE TOPIC after CREATE TOPIC: %d partitions, want 3", len(d.Partitions))
	}
	for _, p := range d.Partitions {
		if p.Leader < 0 {
			t.Errorf("partition %d has no leader after CREATE TOPIC returned", p.Partition)
		}
	}
	policy := ""
	for _, c := range d.Configs {
		if c.Name == "cleanup.policy" {
			policy = c.Value
		}
	}
	if policy != "compact" {
		t.Errorf("cleanup.policy of the new topic is %q, want compact", policy)
	}

	_, err = adm.CreateTopic(ctx, nt)
	if !errors.Is(err, admin.ErrTopicExists) || !errors.Is(err, kerr.TopicAlreadyExists) || !strings.Contains(err.Error(), "topic '"+topic+"' already exists") {
		t.Errorf("second create: got %v, want %v naming the topic", err, admin.ErrTopicExists)
	}

	// The broker's defaults where the statement says nothing.
	other := topic + "-defaults"
	nt2, err := admin.ParseNewTopic(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	ct, err = adm.CreateTopic(ctx, nt2)
	if err != nil {
		t.Fatal(err)
	}
	if ct.Partitions < 1 || ct.Replication < 1 || !ct.Ready {
		t.Errorf("created with the broker's defaults: %+v, want the counts the broker chose", *ct)
	}

	if err := adm.DropTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Topic(ctx, topic); !errors.Is(err, admin.ErrUnknownTopic) {
		t.Errorf("DESCRIBE TOPIC after DROP TOPIC: got %v, want %v", err, admin.ErrUnknownTopic)
	}
	err = adm.DropTopic(ctx, topic)
	if !errors.Is(err, admin.ErrUnknownTopic) || !strings.Contains(err.Error(), "topic '"+topic+"' does not exist (did you mean '"+other+"'?)") {
		t.Errorf("second drop: got %v, want %v with the nearest topic", err, admin.ErrUnknownTopic)
	}
	nt.Partitions = 1
	if _, err := adm.CreateTopic(ctx, nt); err != nil {
		t.Errorf("create right after drop: %v", err)
	}
	if err := adm.DropTopic(ctx, topic); err != nil {
		t.Error(err)
	}
	if err := adm.DropTopic(ctx, other); err != nil {
		t.Error(err)
	}
}

// TestCreateTopicRefused: what the broker refuses comes back naming the key
// and the broker's reason, and creates nothing; Kafka's own topics cannot
// be dropped.
func TestCreateTopicRefused(t *testing.T) {
	t.Parallel()
	adm, ctx, topic := topicAdmin(t)

	// The test brokers are one broker each.
	nt, err := admin.ParseNewTopic(topic, kvs("replication", "3"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = adm.CreateTopic(ctx, nt)
	if !errors.Is(err, admin.ErrInvalidConfig) || !errors.Is(err, kerr.InvalidReplicationFactor) ||
		!strings.Contains(err.Error(), "creating topic '"+topic+"': the broker refused 'replication' = '3'") {
		t.Errorf("replication 3 on one broker: got %v, want %v naming 'replication'", err, admin.ErrInvalidConfig)
	}
	t.Logf("%v", err)

	// kfake does not check topic configs; Kafka does, for the request as
	// a whole, and the error names each key it refuses alone.
	if kafkatest.Real() {
		nt, err := admin.ParseNewTopic(topic, kvs("cleanup.policy", "compact", "retention.ms", "soon", "no.such.config", "1"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = adm.CreateTopic(ctx, nt)
		if !errors.Is(err, admin.ErrInvalidConfig) || !errors.Is(err, kerr.InvalidConfig) {
			t.Fatalf("bad configs: got %v, want %v", err, admin.ErrInvalidConfig)
		}
		for _, s := range []string{"config 'retention.ms' = 'soon'", "config 'no.such.config' = '1'"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q does not say %q", err, s)
			}
		}
		if strings.Contains(err.Error(), "cleanup.policy") {
			t.Errorf("%q blames cleanup.policy, which the broker accepts", err)
		}
		t.Logf("%v", err)
	}
	if _, err := adm.Topic(ctx, topic); !errors.Is(err, admin.ErrUnknownTopic) {
		t.Errorf("after refused creates: got %v, want %v", err, admin.ErrUnknownTopic)
	}

	if err := adm.DropTopic(ctx, "__consumer_offsets"); err == nil || !strings.Contains(err.Error(), "one of Kafka's own topics") {
		t.Errorf("dropping __consumer_offsets: got %v, want a refusal", err)
	}
}

// TestCreateTopicConfigNamed: on kfake, a broker that refuses one config
// value (as Kafka does; kfake itself checks none) is asked about each
// config alone, and the error names only the one it refuses.
func TestCreateTopicConfigNamed(t *testing.T) {
	t.Parallel()
	c := kafkatest.Fake(t)
	c.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.CreateTopics},
		Err:   kerr.InvalidConfig,
		Count: -1,
		When: func(r kmsg.Request) bool {
			for _, t := range r.(*kmsg.CreateTopicsRequest).Topics {
				for _, c := range t.Configs {
					if c.Name == "retention.ms" && c.Value != nil && *c.Value == "soon" {
						return true
					}
				}
			}
			return false
		},
	})
	adm := newAdmin(t, c.ListenAddrs()[0])
	ctx := kafkatest.Context(t)
	nt, err := admin.ParseNewTopic("orders", kvs("cleanup.policy", "compact", "retention.ms", "soon"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = adm.CreateTopic(ctx, nt)
	if !errors.Is(err, admin.ErrInvalidConfig) || !strings.Contains(err.Error(), "creating topic 'orders': the broker refused config 'retention.ms' = 'soon' (") ||
		strings.Contains(err.Error(), "cleanup.policy") {
		t.Errorf("got %v, want %v naming retention.ms alone", err, admin.ErrInvalidConfig)
	}
	t.Logf("%v", err)
}
