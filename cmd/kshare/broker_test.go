package main

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/kafkatest"
)

// TestBrokerDataDirKeepsShareGroupState proves what --data-dir promises:
// after a restart the topic's records are still there and so is the share
// group's progress, so records accepted before the restart are not
// delivered again and the rest are.
func TestBrokerDataDirKeepsShareGroupState(t *testing.T) {
	dir := t.TempDir()
	cfg := brokerConfig{addr: "127.0.0.1:0", dataDir: dir, partitions: 1}
	const total, accepted = 10, 4

	c, addr, err := startBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.ShareGroup(t, addr)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(total)...)

	// Accept records 0..3, release the rest, and make sure the broker has
	// the acks before it stops.
	func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx := kafkatest.Context(t)
		for got := 0; got < total; {
			fs := cl.PollRecords(ctx, 0)
			if err := ctx.Err(); err != nil {
				t.Fatalf("before the restart: %d of %d records delivered: %v", got, total, err)
			}
			for _, r := range fs.Records() {
				got++
				if n, _ := strconv.Atoi(string(r.Value)); n < accepted {
					r.Ack(kgo.AckAccept)
				} else {
					r.Ack(kgo.AckRelease)
				}
			}
		}
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatalf("flushing acks: %v", err)
		}
	}()
	c.Close()

	c, addr, err = startBroker(cfg)
	if err != nil {
		t.Fatalf("restarting on %s: %v", dir, err)
	}
	// A cleanup, not a defer: cleanups run last-registered first, so the
	// consumer below leaves the group while the broker still answers.
	t.Cleanup(c.Close)

	cl := kafkatest.Client(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	ctx := kafkatest.Context(t)
	var got []int
	for len(got) < total-accepted {
		fs := cl.PollRecords(ctx, 0)
		if err := ctx.Err(); err != nil {
			t.Fatalf("after the restart: got %v, want %d..%d: %v", got, accepted, total-1, err)
		}
		for _, r := range fs.Records() {
			n, _ := strconv.Atoi(string(r.Value))
			if n < accepted {
				t.Errorf("record %d was accepted before the restart and delivered again after it", n)
			}
			got = append(got, n)
			r.Ack(kgo.AckAccept)
		}
	}
	slices.Sort(got)
	want := []int{4, 5, 6, 7, 8, 9}
	if !slices.Equal(got, want) {
		t.Errorf("after the restart got %v, want %v", got, want)
	}
}

func TestBrokerAddrInUse(t *testing.T) {
	c, addr, err := startBroker(brokerConfig{addr: "127.0.0.1:0", partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, err = startBroker(brokerConfig{addr: addr, partitions: 1})
	if err == nil {
		t.Fatalf("a second broker on %s started", addr)
	}
	if want := "is another broker running? choose another --addr"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func TestBrokerRejectsUnknownConfig(t *testing.T) {
	_, _, err := startBroker(brokerConfig{addr: "127.0.0.1:0", partitions: 1, configs: map[string]string{"no.such.config": "1"}})
	if err == nil || !strings.Contains(err.Error(), "--config no.such.config: not a broker config kshare broker knows") {
		t.Errorf("unknown config: got %v", err)
	}
	c, _, err := startBroker(brokerConfig{addr: "127.0.0.1:0", partitions: 1, configs: map[string]string{"group.share.record.lock.duration.ms": "5000"}})
	if err != nil {
		t.Fatalf("known config: %v", err)
	}
	c.Close()
}

func TestBrokerRejectsBadConfigValue(t *testing.T) {
	_, _, err := startBroker(brokerConfig{addr: "127.0.0.1:0", partitions: 1, configs: map[string]string{"group.share.record.lock.duration.ms": "soon"}})
	if err == nil || !strings.Contains(err.Error(), "--config group.share.record.lock.duration.ms=soon: the broker does not accept the value") {
		t.Errorf("bad value: got %v", err)
	}
}
