package sharegroup_test

import (
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/internal/watch"
	"github.com/kshare/kshare/sharegroup"
)

// fetchWatch records every ShareFetch the members send, read off the wire
// by a dialer that wraps each connection: what the broker is asked for,
// whatever franz-go's configuration says.
type fetchWatch struct {
	mu   sync.Mutex
	reqs []*kmsg.ShareFetchRequest
}

func (w *fetchWatch) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Conn: c, w: w}, nil
}

func (w *fetchWatch) windows() []int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []int32
	for _, r := range w.reqs {
		out = append(out, r.MaxBytes)
	}
	return out
}

// readAll reads n records off st, closes it and returns the ShareFetch
// requests seen; it fails t when there were none, since a check of every
// request would then pass without one.
func (w *fetchWatch) readAll(t *testing.T, st flow.Stream, n int) []*kmsg.ShareFetchRequest {
	t.Helper()
	r := newReader(t, st)
	r.until(kafkatest.Context(t), "every record", func() bool { return len(r.seen) == n })
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := w.requests()
	if len(reqs) == 0 {
		t.Fatal("no ShareFetch request seen")
	}
	return reqs
}

// requests returns the ShareFetch requests seen so far.
func (w *fetchWatch) requests() []*kmsg.ShareFetchRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*kmsg.ShareFetchRequest(nil), w.reqs...)
}

// watchedConn parses the request frames written to it (size, then a
// request header v2: key, version, correlation id, client id, tags).
type watchedConn struct {
	net.Conn
	w   *fetchWatch
	buf []byte
}

func (c *watchedConn) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for len(c.buf) >= 4 {
		size := int(binary.BigEndian.Uint32(c.buf))
		if len(c.buf) < 4+size {
			break
		}
		c.inspect(c.buf[4 : 4+size])
		c.buf = c.buf[4+size:]
	}
	return c.Conn.Write(p)
}

func (c *watchedConn) inspect(frame []byte) {
	if len(frame) < 10 || int16(binary.BigEndian.Uint16(frame)) != kmsg.ShareFetch.Int16() {
		return
	}
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	idLen := int(int16(binary.BigEndian.Uint16(frame[8:])))
	body := frame[10+max(idLen, 0):]
	body = body[1:] // the header's empty tagged fields
	req := kmsg.NewShareFetchRequest()
	req.Version = version
	if err := req.ReadFrom(body); err != nil {
		return
	}
	c.w.mu.Lock()
	c.w.reqs = append(c.w.reqs, &req)
	c.w.mu.Unlock()
}

// TestFetchWindowLargeRecords: a record larger than the window, and a poll
// of records that together far exceed it, are fetched with the 1 MiB window
// (the broker returns at least the first batch whole, and Kafka 4.3 hands
// out up to max.poll.records records whatever their size).
func TestFetchWindowLargeRecords(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.TopicName(t)
	adm := kadm.NewClient(kafkatest.Client(t, addr))
	big := "3000000"
	resp, err := adm.CreateTopic(kafkatest.Context(t), 1, -1, map[string]*string{"max.message.bytes": &big}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	// One record of 1.5 MiB, then 100 of 20 kB (2 MB).
	values := [][]byte{[]byte(strings.Repeat("0", 3<<19) + "1")}
	for i := 2; i <= 101; i++ {
		values = append(values, []byte(strings.Repeat("0", 20000)+itoa(int64(i))))
	}
	p := kafkatest.Client(t, addr, kgo.ProducerBatchMaxBytes(4<<20), kgo.ProducerLinger(0))
	for _, v := range values {
		// One at a time, so the large record is a batch of its own.
		if err := p.ProduceSync(kafkatest.Context(t), &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}

	w := &fetchWatch{}
	defer sharegroup.SetClientOpts(kgo.Dialer(w.dial))()
	group := kafkatest.ShareGroup(t, addr)
	st := open(t, newSource(t, addr, topic, group, nil), tabletest.CheckedAlloc(t))
	w.readAll(t, st, len(values))
	for _, b := range w.windows() {
		if b != sharegroup.DefaultFetchMaxBytes {
			t.Fatalf("ShareFetch MaxBytes %d, want %d in every request (all: %v)", b, sharegroup.DefaultFetchMaxBytes, w.windows())
		}
	}
	t.Logf("%d records of %d bytes in %d ShareFetch requests", len(values), 3<<19+100*20003, len(w.windows()))
}

// TestShareFetchRequests checks what every ShareFetch asks for, read off
// the wire. The window: by default at most 1 MiB, not franz-go's 50 MiB,
// whose scan costs the broker (see defaultFetchMaxBytes);
// 'properties.fetch.max.bytes' overrides it. The poll size: the default
// keeps a stream's members within the broker's default lock cap of one
// partition (2000 records), and a table whose settings exceed it says so
// when it opens. The default acquisition mode is batch_optimized (0) unless
// the members outnumber the partitions, then record_limit (1).
func TestShareFetchRequests(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(2000)...)
	window := sharegroup.DefaultFetchMaxBytes
	for _, tc := range []struct {
		name       string
		extra      map[string]string
		maxBytes   int32
		maxRecords int32
		mode       int8
		warnWant   bool
	}{
		{"one member", nil, window, 500, 0, false},
		{"window set", map[string]string{"properties.fetch.max.bytes": "300000"}, 300000, 500, 0, false},
		{"sixteen members", map[string]string{"source.parallelism": "16"}, window, 125, 1, false},
		{"set too large", map[string]string{"source.parallelism": "8", "properties.max.poll.records": "300"}, window, 300, 1, true},
		{"mode set", map[string]string{"properties.share.acquire.mode": "record_limit"}, window, 500, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fetchWatch{}
			defer sharegroup.SetClientOpts(kgo.Dialer(w.dial))()
			logs := &watch.Buffer{}
			src := newSource(t, addr, topic, kafkatest.ShareGroup(t, addr), tc.extra)
			st, err := src.Open(kafkatest.Context(t), flow.OpenOptions{Alloc: tabletest.CheckedAlloc(t), Logger: slog.New(slog.NewTextHandler(logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range w.readAll(t, st, 2000) {
				if r.MaxBytes != tc.maxBytes || r.MaxRecords != tc.maxRecords || r.ShareAcquireMode != tc.mode {
					t.Fatalf("ShareFetch MaxBytes %d, MaxRecords %d, ShareAcquireMode %d; want %d, %d, %d in every request",
						r.MaxBytes, r.MaxRecords, r.ShareAcquireMode, tc.maxBytes, tc.maxRecords, tc.mode)
				}
			}
			warned := strings.Contains(logs.String(), "group.share.partition.max.record.locks")
			if warned != tc.warnWant {
				t.Errorf("warned about the lock cap: %v, want %v; log:\n%s", warned, tc.warnWant, logs.String())
			}
		})
	}
}
