package sharegroup_test

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/sharegroup"
)

// poisonAt are the offsets of the records that do not decode among
// deadLetterRecords' 300.
var poisonAt = []int64{0, 150, 299}

// deadLetterRecords are n records of which those at poisonAt do not
// decode; each poison record has a key, a header and a timestamp of its own.
func deadLetterRecords(topic string, n int) []*kgo.Record {
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}
	}
	for _, at := range poisonAt {
		rs[at] = &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "key-%d", at), Value: fmt.Appendf(nil, "poison-%d", at),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t%d", at)}}, Timestamp: time.UnixMilli(1_700_000_000_000 + at)}
	}
	return rs
}

// deadLetterQueue makes a one-partition topic, a dead-letter topic and a
// share group, and checks that the test leaves no goroutine behind.
func deadLetterQueue(t *testing.T, fake ...kfake.Opt) (addr, topic, dlq, group string) {
	noLeaks(t)
	addr = kafkatest.Bootstrap(t)
	if !kafkatest.Real() && len(fake) > 0 {
		addr = kafkatest.Fake(t, fake...).ListenAddrs()[0]
	}
	topic, dlq = kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 1)
	return addr, topic, dlq, kafkatest.ShareGroup(t, addr)
}

func deadLetterSource(t *testing.T, addr, topic, group, dlq string) flow.Source {
	return newSource(t, addr, topic, group, map[string]string{
		"scan.on-decode-error":   "dead-letter",
		"scan.dead-letter.topic": dlq,
	})
}

// TestDeadLetter: under 'dead-letter' the good records flow, the poison ones
// end in the dead-letter topic with their key, value and headers plus the
// kshare.* headers, and every original is accepted: the group is drained.
func TestDeadLetter(t *testing.T) {
	const n = 300
	// kfake honours only the broker's limit (group.share.delivery.count.limit),
	// not the group's that SetGroupConfig sets below: the first query there
	// saw 11 deliveries of the 3 under the race detector, two of them archived
	// at kfake's default of 5.
	addr, topic, dlq, group := deadLetterQueue(t, kfake.BrokerConfigs(map[string]string{"group.share.delivery.count.limit": "10"}))
	kafkatest.ProduceRecords(t, addr, deadLetterRecords(topic, n)...)

	st := open(t, deadLetterSource(t, addr, topic, group, dlq), tabletest.CheckedAlloc(t))
	defer st.Close()
	r := newReader(t, st)
	r.until(kafkatest.Context(t), "the good records", func() bool { return len(r.seen) == n-len(poisonAt) })
	waitStats(t, st, "every record accepted, the poison ones dead-lettered", func(s flow.Stats) bool {
		return s.Accepted == n && s.DeadLettered == int64(len(poisonAt))
	})
	if s := st.Stats(); s.Released != 0 || s.Rejected != 0 || s.DeadLetterFailed != 0 || s.DecodeErrors != int64(len(poisonAt)) || s.Redelivered != 0 {
		t.Errorf("stats %+v: want no release, reject, failed dead letter or redelivery, and %d decode errors", s, len(poisonAt))
	}

	// Prometheus counts them as Stats does.
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(sharegroup.Collector())
	if got := kafkatest.MetricOf(t, reg, "kshare_source_dead_lettered_total", group); got != float64(len(poisonAt)) {
		t.Errorf("kshare_source_dead_lettered_total = %v, want %d", got, len(poisonAt))
	}

	got := kafkatest.ReadTopic(t, addr, dlq, len(poisonAt))
	if len(got) != len(poisonAt) {
		t.Fatalf("%d records in the dead-letter topic, want %d", len(got), len(poisonAt))
	}
	for i, at := range poisonAt {
		d := got[i]
		want := []kgo.RecordHeader{
			{Key: "trace", Value: fmt.Appendf(nil, "t%d", at)},
			{Key: kafkaclient.HeaderError, Value: fmt.Appendf(nil, "field \"id\": expected BIGINT, got \"poison-%d\"", at)},
			{Key: kafkaclient.HeaderTopic, Value: []byte(topic)},
			{Key: kafkaclient.HeaderPartition, Value: []byte("0")},
			{Key: kafkaclient.HeaderOffset, Value: []byte(strconv.FormatInt(at, 10))},
			{Key: kafkaclient.HeaderTimestamp, Value: []byte(strconv.FormatInt(1_700_000_000_000+at, 10))},
			{Key: kafkaclient.HeaderDeliveryCount, Value: []byte("1")},
			{Key: kafkaclient.HeaderTable, Value: []byte("ids")},
			{Key: kafkaclient.HeaderGroup, Value: []byte(group)},
		}
		if string(d.Key) != fmt.Sprintf("key-%d", at) || string(d.Value) != fmt.Sprintf("poison-%d", at) {
			t.Errorf("dead letter %d: key %q value %q, want key-%d poison-%d", i, d.Key, d.Value, at, at)
		}
		if fmt.Sprint(headerText(d.Headers)) != fmt.Sprint(headerText(want)) {
			t.Errorf("dead letter %d headers:\n got %v\nwant %v", i, headerText(d.Headers), headerText(want))
		}
	}

	// Drained: the group's lag (records not yet accepted or archived) is 0,
	// so nothing is left to deliver again.
	st.Close()
	kafkatest.WaitLag(t, addr, group, topic, 0)
}

func headerText(hs []kgo.RecordHeader) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Key + "=" + string(h.Value)
	}
	return out
}

// TestDeadLetterTopicMissing: a dead-letter topic that does not exist when
// a query opens is an error naming it, before anything is read.
func TestDeadLetterTopicMissing(t *testing.T) {
	noLeaks(t)
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(3)...)
	dlq := kafkatest.TopicName(t) + "-none"
	_, err := deadLetterSource(t, addr, topic, group, dlq).Open(kafkatest.Context(t), flow.OpenOptions{Alloc: tabletest.CheckedAlloc(t)})
	want := fmt.Sprintf("table 'ids': dead-letter topic '%s' ('scan.dead-letter.topic') not found on %s; create it first", dlq, addr)
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v, want %q", err, want)
	}
}

// TestDeadLetterTopicDeleted: when the dead-letter topic goes away under a
// running query, the poison records are released, never accepted: they come
// again with a growing delivery count while the good ones flow, the failure
// is logged and counted, and a later query with a dead-letter topic that
// exists dead-letters them.
func TestDeadLetterTopicDeleted(t *testing.T) {
	const n = 300
	// kfake honours only the broker's limit (group.share.delivery.count.limit),
	// not the group's that SetGroupConfig sets below: the first query there
	// saw 11 deliveries of the 3 under the race detector, two of them archived
	// at kfake's default of 5.
	addr, topic, dlq, group := deadLetterQueue(t, kfake.BrokerConfigs(map[string]string{"group.share.delivery.count.limit": "10"}))
	// The poison records go round as fast as the broker hands them out
	// until the query closes; a limit of 10 deliveries keeps the broker
	// from archiving one before the second query (a CI run under the race
	// detector saw 10 deliveries of the 3 before the close, one of them
	// the fifth: the default limit). The wait below lets each come again
	// and its release be confirmed, which the stats check after it reads.
	kafkatest.SetGroupConfig(t, addr, group, map[string]string{"share.delivery.count.limit": "10"})
	var logs watch.Buffer
	st, err := deadLetterSource(t, addr, topic, group, dlq).Open(kafkatest.Context(t),
		flow.OpenOptions{Alloc: tabletest.CheckedAlloc(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	adm := kafkatest.Admin(t, addr)
	if _, err := adm.DeleteTopic(kafkatest.Context(t), dlq); err != nil {
		t.Fatal(err)
	}
	kafkatest.ProduceRecords(t, addr, deadLetterRecords(topic, n)...)
	r := newReader(t, st)
	r.until(kafkatest.Context(t), "the good records", func() bool { return len(r.seen) == n-len(poisonAt) })
	waitStats(t, st, "the poison records released and delivered again", func(s flow.Stats) bool {
		return s.DeadLetterFailed >= int64(2*len(poisonAt)) && s.Redelivered >= int64(len(poisonAt))
	})
	s := st.Stats()
	// Each delivery of a poison record is a decode error: the broker's
	// delivery limit must not archive them before the second query.
	t.Logf("%d deliveries of the %d poison records before the query closes", s.DecodeErrors, len(poisonAt))
	if s.DeadLettered != 0 || s.Accepted != n-int64(len(poisonAt)) || s.Released < int64(len(poisonAt)) {
		t.Errorf("stats %+v: want nothing dead-lettered, only the %d good records accepted, the poison ones released", s, n-len(poisonAt))
	}
	if !strings.Contains(logs.String(), "could not produce a record that does not decode to the dead-letter topic; released") ||
		!strings.Contains(logs.String(), "dead_letter_topic="+dlq) {
		t.Errorf("the failed dead letters are not logged:\n%s", logs.String())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	kafkatest.WaitLag(t, addr, group, topic, int64(len(poisonAt)))

	// Still in the group: a query with a dead-letter topic that exists
	// gets them, delivered at least a second time.
	dlq2 := kafkatest.Topic(t, addr, 1)
	st2 := open(t, deadLetterSource(t, addr, topic, group, dlq2), tabletest.CheckedAlloc(t))
	defer st2.Close()
	waitStats(t, st2, "the poison records dead-lettered", func(s flow.Stats) bool { return s.DeadLettered == int64(len(poisonAt)) })
	got := kafkatest.ReadTopic(t, addr, dlq2, len(poisonAt))
	for _, d := range got {
		var count int
		for _, h := range d.Headers {
			if h.Key == kafkaclient.HeaderDeliveryCount {
				count, _ = strconv.Atoi(string(h.Value))
			}
		}
		if count < 2 {
			t.Errorf("dead letter %q: delivery count %d, want at least 2 (released, then delivered again)", d.Value, count)
		}
	}
}
