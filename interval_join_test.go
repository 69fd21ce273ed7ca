package kshare_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
)

// intervalEvent is an order or a shipment: its id, the order it names and
// its time.
type intervalEvent struct {
	id, order int
	at        time.Time
}

// TestIntervalJoinOrdersShipments joins orders and shipments, two share
// groups over topics of 4 partitions each, INSERT INTO a kafka topic, in
// three jobs started one after the other on the same state directory, each
// reading the records produced since the last: the topic holds exactly
// the pairs the test computes (a shipment within a minute after its
// order), pairs whose order one job read and whose shipment the next one
// did among them.
func TestIntervalJoinOrdersShipments(t *testing.T) {
	t.Parallel()
	addr, orders, og := kafkatest.Queue(t, 4)
	shipments := kafkatest.Topic(t, addr, 4)
	sg := kafkatest.ShareGroup(t, addr)
	out := kafkatest.Topic(t, addr, 1)
	dir := t.TempDir()

	rng := rand.New(rand.NewPCG(3, 5))
	base := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	const n = 3000
	var os, ss []intervalEvent
	for i := range n {
		o := intervalEvent{id: i, order: i, at: base.Add(time.Duration(i) * time.Second)}
		os = append(os, o)
		// None, one or two shipments, some outside the minute after it
		// (before it, or later than a minute).
		for k := range rng.IntN(3) {
			d := time.Duration(rng.IntN(90)-10) * time.Second
			ss = append(ss, intervalEvent{id: 100000 + 10*i + k, order: i, at: o.at.Add(d)})
		}
	}
	// Shipments of orders that do not exist.
	for k := range 200 {
		ss = append(ss, intervalEvent{id: 900000 + k, order: n + k, at: base.Add(time.Duration(rng.IntN(n)) * time.Second)})
	}
	// Each topic's records in the order of their times, so that every
	// partition's are too and none comes late.
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].at.Before(ss[b].at) })
	var want []string
	for _, s := range ss {
		if s.order < n {
			if d := s.at.Sub(os[s.order].at); d >= 0 && d <= time.Minute {
				want = append(want, fmt.Sprintf("%d|%d", s.order, s.id))
			}
		}
	}
	slices.Sort(want)

	insert := `INSERT INTO pairs SELECT o.id, s.sid, s.ts FROM orders AS o JOIN shipments AS s
	  ON o.id = s.order_id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '1' MINUTE`
	session := func() *kshare.Engine {
		eng := kshare.New()
		exec(t, eng, "SET 'state-dir' = '"+dir+"'")
		exec(t, eng, fmt.Sprintf("SET 'idle-timeout' = '%s'", kafkatest.Idle()))
		// No partition counts as idle: a job ends on its idle timeout
		// instead, and its watermarks never run ahead of the records.
		exec(t, eng, "SET 'window.idle-timeout' = '0'")
		exec(t, eng, `CREATE TABLE orders (id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (
		  'connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = '`+addr+`', 'topic' = '`+orders+`',
		  'share-group-id' = '`+og+`', 'properties.max.poll.records' = '300')`)
		exec(t, eng, `CREATE TABLE shipments (sid INT, order_id INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (
		  'connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = '`+addr+`', 'topic' = '`+shipments+`',
		  'share-group-id' = '`+sg+`', 'properties.max.poll.records' = '300')`)
		exec(t, eng, `CREATE TABLE pairs (order_id INT, sid INT, shipped TIMESTAMP(3)) WITH ('connector' = 'kafka', 'format' = 'json',
		  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+out+`')`)
		return eng
	}
	ts := func(at time.Time) string { return at.Format("2006-01-02 15:04:05.000") }
	// Three jobs, each after the records of a third of the time.
	cut := []time.Time{base.Add(-time.Hour), base.Add(n / 3 * time.Second), base.Add(2 * n / 3 * time.Second), base.Add(2 * n * time.Second)}
	for phase := range 3 {
		var ov, sv [][]byte
		for _, o := range os {
			if !o.at.Before(cut[phase]) && o.at.Before(cut[phase+1]) {
				ov = append(ov, fmt.Appendf(nil, `{"id": %d, "ts": %q}`, o.id, ts(o.at)))
			}
		}
		for _, s := range ss {
			if !s.at.Before(cut[phase]) && s.at.Before(cut[phase+1]) {
				sv = append(sv, fmt.Appendf(nil, `{"sid": %d, "order_id": %d, "ts": %q}`, s.id, s.order, ts(s.at)))
			}
		}
		kafkatest.Produce(t, addr, orders, ov...)
		kafkatest.Produce(t, addr, shipments, sv...)
		res := exec(t, session(), insert)
		if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
			t.Fatalf("job %d: %v", phase+1, err)
		}
		if st := res.Job.Stats(); st.Accepted != int64(len(ov)+len(sv)) {
			t.Errorf("job %d accepted %d records, want the %d produced since the last", phase+1, st.Accepted, len(ov)+len(sv))
		}
	}
	var got []string
	for _, r := range kafkatest.ReadTopic(t, addr, out, int(kafkatest.TopicSize(t, addr, out))) {
		var p struct {
			Order int `json:"order_id"`
			Sid   int `json:"sid"`
		}
		if err := json.Unmarshal(r.Value, &p); err != nil {
			t.Fatalf("%s: %v", r.Value, err)
		}
		got = append(got, fmt.Sprintf("%d|%d", p.Order, p.Sid))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		missing, extra := diffSorted(want, got), diffSorted(got, want)
		t.Errorf("%d pairs, want %d: %d missing (%v), %d more (%v)", len(got), len(want), len(missing), head(missing), len(extra), head(extra))
	}
}

// diffSorted is what a has that b does not, both sorted, each element as
// often as a has it more.
func diffSorted(a, b []string) []string {
	var out []string
	j := 0
	for _, x := range a {
		for j < len(b) && b[j] < x {
			j++
		}
		if j < len(b) && b[j] == x {
			j++
			continue
		}
		out = append(out, x)
	}
	return out
}

func head(xs []string) []string { return xs[:min(len(xs), 10)] }
