package kafkaclient_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/kafkaclient"
)

// TestDeadLetterTopicMissing: one message for a missing dead-letter topic,
// whichever key names it, and TopicLimit's sentinel under it for callers
// that word their own.
func TestDeadLetterTopicMissing(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	adm := kafkatest.Admin(t, addr)
	ctx := kafkatest.Context(t)
	missing := kafkatest.TopicName(t) + "-none"
	for _, key := range []string{"scan.dead-letter.topic", "sink.dead-letter.topic"} {
		dt := kafkaclient.DeadLetterTopic{Table: "t", Topic: missing, Key: key, Seeds: []string{addr}}
		_, err := dt.Check(ctx, adm)
		want := fmt.Sprintf("table 't': dead-letter topic '%s' ('%s') not found on %s; create it first", missing, key, addr)
		if err == nil || err.Error() != want {
			t.Errorf("Check = %v, want %q", err, want)
		}
	}
	if _, err := kafkaclient.TopicLimit(ctx, adm, missing); !errors.Is(err, kafkaclient.ErrNoTopic) {
		t.Errorf("TopicLimit of a missing topic = %v, want ErrNoTopic", err)
	}
}

// TestDeadLetters: a dead letter keeps the record's key, value and headers,
// and adds the kshare.* headers after them, in order: for a record read,
// where it was read from; for a record a topic refused, that topic; the
// group only when a share group read it.
func TestDeadLetters(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	dlq := kafkatest.Topic(t, addr, 1)
	ctx := kafkatest.Context(t)
	dt := kafkaclient.DeadLetterTopic{Table: "orders", Group: "g", Topic: dlq, Key: "scan.dead-letter.topic", Seeds: []string{addr}}
	limit, err := dt.Check(ctx, kafkatest.Admin(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	d, err := dt.Open(limit, kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Topic() != dlq {
		t.Errorf("Topic() = %q, want %q", d.Topic(), dlq)
	}
	// One dead letter at a time, so that they are in the topic in order.
	answers := make(chan error, 1)
	answered := func(err error) { answers <- err }
	wait := func() {
		t.Helper()
		if err := <-answers; err != nil {
			t.Fatalf("dead letter not acknowledged: %v", err)
		}
	}
	read := &kgo.Record{Topic: "in", Partition: 3, Offset: 42, Timestamp: time.UnixMilli(1_700_000_000_123),
		Key: []byte("k"), Value: []byte("v1"), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("t1")}}}
	d.ProduceRead(ctx, read, errors.New("does not decode"), answered)
	wait()
	refusedBy := kafkaclient.DeadLetterTopic{Table: "out", Topic: dlq, Key: "sink.dead-letter.topic", Seeds: []string{addr}}
	d2, err := refusedBy.Open(limit, kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	refused := &kgo.Record{Topic: "sink", Value: []byte("v2")}
	d2.ProduceRefused(ctx, refused, errors.New("too large"), answered)
	wait()

	got := kafkatest.ReadTopic(t, addr, dlq, 2)
	slices.SortFunc(got, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
	want := [][]string{
		{"trace=t1", "kshare.error=does not decode", "kshare.topic=in", "kshare.partition=3", "kshare.offset=42",
			"kshare.timestamp=1700000000123", "kshare.delivery-count=0", "kshare.table=orders", "kshare.group=g"},
		{"kshare.error=too large", "kshare.topic=sink", "kshare.table=out"},
	}
	for i, r := range got {
		var hs []string
		for _, h := range r.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		if fmt.Sprint(hs) != fmt.Sprint(want[i]) {
			t.Errorf("dead letter %d headers:\n got %v\nwant %v", i, hs, want[i])
		}
	}
	if string(got[0].Key) != "k" || string(got[0].Value) != "v1" || got[1].Key != nil || string(got[1].Value) != "v2" {
		t.Errorf("dead letters hold %q=%q and %q=%q, want the originals' keys and values", got[0].Key, got[0].Value, got[1].Key, got[1].Value)
	}
}
