package kafka_test

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/kafka"
	"github.com/kshare/kshare/query"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// base is the timestamp of each partition's first record; record i of a
// partition is stamped base + i seconds, so that the timestamp modes have
// known answers.
var base = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)

// logTopic creates a topic of 3 partitions with 10 records each: partition
// p holds ids p*100 to p*100+9 at offsets 0 to 9, keyed "k<id>", with a
// header "h" = the id.
func logTopic(t *testing.T) (addr, topic string) {
	addr = kafkatest.Bootstrap(t)
	topic = kafkatest.Topic(t, addr, 3)
	var rs []*kgo.Record
	for p := range int32(3) {
		for i := range 10 {
			id := int(p)*100 + i
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d", id),
				Value:     fmt.Appendf(nil, `{"id": %d}`, id),
				Timestamp: base.Add(time.Duration(i) * time.Second),
				Headers:   []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "%d", id)}}})
		}
	}
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err := cl.ProduceSync(kafkatest.Context(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return addr, topic
}

// table creates table t over topic with the extra WITH entries.
func table(t *testing.T, addr, topic, with string) *kshare.Engine {
	t.Helper()
	eng := kshare.New()
	if topic != "" {
		with = ", 'topic' = '" + topic + "'" + with
	}
	ddl := "CREATE TABLE t (id BIGINT, `partition` INT METADATA VIRTUAL, `offset` BIGINT METADATA VIRTUAL) WITH (" +
		"'connector' = 'kafka', 'format' = 'json', 'properties.bootstrap.servers' = '" + addr + "'" + with + ")"
	if _, err := eng.Exec(kafkatest.Context(t), ddl); err != nil {
		t.Fatalf("%s: %v", ddl, err)
	}
	return eng
}

// ids runs sql (whose first column is id) to its end and returns the ids,
// sorted, and why it ended.
func ids(t *testing.T, eng *kshare.Engine, sql string, opts ...kshare.QueryOption) ([]int64, query.EndReason) {
	t.Helper()
	// Small batches over checked memory: several batches per query, each
	// released.
	opts = append([]kshare.QueryOption{kshare.Allocator(tabletest.CheckedAlloc(t)), kshare.BatchSize(7)}, opts...)
	rows, err := eng.Query(kafkatest.Context(t), sql, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		b := rows.RecordBatch()
		for i := 0; i < int(b.NumRows()); i++ {
			out = append(out, b.Column(0).(*array.Int64).Value(i))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out, rows.EndReason()
}

// span is the ids of partition p from offset from up to to.
func span(p, from, to int) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, int64(p*100+i))
	}
	return out
}

// TestModes reads the same topic under each startup and bounded mode; each
// bounded query ends by itself (end of input) with exactly its records.
func TestModes(t *testing.T) {
	addr, topic := logTopic(t)
	ms := func(i int) string { return fmt.Sprint(base.Add(time.Duration(i) * time.Second).UnixMilli()) }
	for _, c := range []struct {
		name, with string
		want       []int64
	}{
		{"earliest to latest", "'scan.bounded.mode' = 'latest-offset'",
			slices.Concat(span(0, 0, 10), span(1, 0, 10), span(2, 0, 10))},
		{"latest to latest", "'scan.startup.mode' = 'latest-offset', 'scan.bounded.mode' = 'latest-offset'", nil},
		{"timestamp to latest", "'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '" + ms(5) + "', 'scan.bounded.mode' = 'latest-offset'",
			slices.Concat(span(0, 5, 10), span(1, 5, 10), span(2, 5, 10))},
		{"timestamp after the last record", "'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '" + ms(60) + "', 'scan.bounded.mode' = 'latest-offset'", nil},
		{"earliest to timestamp", "'scan.bounded.mode' = 'timestamp', 'scan.bounded.timestamp-millis' = '" + ms(3) + "'",
			slices.Concat(span(0, 0, 3), span(1, 0, 3), span(2, 0, 3))},
		{"specific offsets to latest", "'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'partition:0,offset:7;partition:2,offset:3', " +
			"'scan.bounded.mode' = 'latest-offset'",
			slices.Concat(span(0, 7, 10), span(1, 0, 10), span(2, 3, 10))},
		{"earliest to specific offsets", "'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = 'partition:1,offset:4;partition:2,offset:10'",
			slices.Concat(span(1, 0, 4), span(2, 0, 10))},
		{"specific to specific", "'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'partition:1,offset:2', " +
			"'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = 'partition:1,offset:5'", span(1, 2, 5)},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := table(t, addr, topic, ", "+c.with)
			got, end := ids(t, eng, "SELECT id FROM t")
			if !slices.Equal(got, c.want) || end != query.EndEOF {
				t.Errorf("got %v (%v), want %v (end of input)", got, end, c.want)
			}
		})
	}
}

// TestReadTwice: a plain reader takes nothing, so a second read gives the
// same records, and a WHERE that drops rows does not consume them either.
func TestReadTwice(t *testing.T) {
	addr, topic := logTopic(t)
	eng := table(t, addr, topic, ", 'scan.bounded.mode' = 'latest-offset'")
	few, _ := ids(t, eng, "SELECT id FROM t WHERE id < 100")
	first, _ := ids(t, eng, "SELECT id FROM t")
	second, _ := ids(t, eng, "SELECT id FROM t")
	if !slices.Equal(few, span(0, 0, 10)) || len(first) != 30 || !slices.Equal(first, second) {
		t.Errorf("filtered %v, first %v, second %v", few, first, second)
	}
}

// TestMetadata reads every metadata column of one record.
func TestMetadata(t *testing.T) {
	addr, topic := logTopic(t)
	eng := kshare.New()
	ddl := "CREATE TABLE m (id BIGINT, tp STRING METADATA FROM 'topic' VIRTUAL, `partition` INT METADATA VIRTUAL, `offset` BIGINT METADATA VIRTUAL, " +
		"ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', tt STRING METADATA FROM 'timestamp-type' VIRTUAL, k BYTES METADATA FROM 'key' VIRTUAL, " +
		"headers MAP<STRING, BYTES> METADATA VIRTUAL) WITH ('connector' = 'kafka', 'format' = 'json', 'bootstrap.servers' = '" + addr + "', " +
		"'topic' = '" + topic + "', 'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'partition:2,offset:4', " +
		"'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = 'partition:2,offset:5')"
	if _, err := eng.Exec(kafkatest.Context(t), ddl); err != nil {
		t.Fatal(err)
	}
	rows, err := eng.Query(kafkatest.Context(t), "SELECT id, tp, `partition`, `offset`, CAST(ts AS STRING), tt, CAST(k AS STRING), CAST(headers['h'] AS STRING) FROM m")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		for i := 0; i < int(rows.RecordBatch().NumRows()); i++ {
			got = append(got, rowText(rows.RecordBatch(), i))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("204 %s 2 4 %s CreateTime k204 204", topic, base.Add(4*time.Second).Local().Format("2006-01-02 15:04:05.000"))
	if len(got) != 1 || got[0] != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func rowText(b arrow.RecordBatch, i int) string {
	parts := make([]string, b.NumCols())
	for c := range parts {
		parts[c] = b.Column(c).ValueStr(i)
	}
	return strings.Join(parts, " ")
}

// TestUnbounded: an unbounded query from the latest offset waits for
// records produced after it opened and shows them.
func TestUnbounded(t *testing.T) {
	addr, topic := logTopic(t)
	eng := table(t, addr, topic, ", 'scan.startup.mode' = 'latest-offset'")
	rows, err := eng.Query(kafkatest.Context(t), "SELECT id FROM t", kshare.MaxRows(3))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	kafkatest.Produce(t, addr, topic, []byte(`{"id": 1000}`), []byte(`{"id": 1001}`), []byte(`{"id": 1002}`))
	var got []int64
	for rows.Next() {
		for i := 0; i < int(rows.RecordBatch().NumRows()); i++ {
			got = append(got, rows.RecordBatch().Column(0).(*array.Int64).Value(i))
		}
	}
	slices.Sort(got)
	if err := rows.Err(); err != nil || !slices.Equal(got, []int64{1000, 1001, 1002}) || rows.EndReason() != query.EndMaxRows {
		t.Errorf("got %v (%v, %v)", got, rows.EndReason(), err)
	}
}

// TestOpenErrors: what only the cluster can tell fails the query at open,
// within the request timeout, with what to fix.
func TestOpenErrors(t *testing.T) {
	addr, topic := logTopic(t)
	for _, c := range []struct {
		name, server, topic, with, want string
	}{
		{"missing topic", addr, "no-such-topic-kafka", "", "topic 'no-such-topic-kafka' not found on " + addr + "; create it first, or check the 'topic' option"},
		{"offset past the end", addr, topic, ", 'scan.startup.mode' = 'specific-offsets', 'scan.startup.specific-offsets' = 'partition:1,offset:42'",
			"'scan.startup.specific-offsets' starts partition 1 of '" + topic + "' at offset 42, outside its log (offsets 0 to 10)"},
		{"unknown partition", addr, topic, ", 'scan.bounded.mode' = 'specific-offsets', 'scan.bounded.specific-offsets' = 'partition:7,offset:1'",
			"'scan.bounded.specific-offsets' names partition 7, which topic '" + topic + "' does not have"},
		{"unreachable broker", "127.0.0.1:1", topic, ", 'properties.request.timeout.ms' = '500'",
			"cannot reach Kafka at 127.0.0.1:1; check 'bootstrap.servers' and that the broker is running"},
		{"broker that does not answer", silent(t), topic, ", 'properties.request.timeout.ms' = '1000'",
			"no answer from Kafka at " + silent(t) + " within 1s; check 'bootstrap.servers', 'properties.security.protocol' and that the broker is running"},
		{"pattern that matches nothing", addr, "", ", 'topic-pattern' = 'no-such-topic-kafka.*'",
			"no topic on " + addr + " matches 'topic-pattern' = 'no-such-topic-kafka.*'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := table(t, c.server, c.topic, c.with)
			start := time.Now()
			ctx, cancel := context.WithTimeout(kafkatest.Context(t), 30*time.Second)
			defer cancel()
			rows, err := eng.Query(ctx, "SELECT id FROM t")
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || ctx.Err() != nil {
				t.Errorf("got %v, want %q", err, c.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// silentAddr is a listener that accepts connections and never answers:
// a broker that hangs.
var silentAddr string

func silent(t *testing.T) string {
	if silentAddr != "" {
		return silentAddr
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
		silentAddr = ""
	})
	silentAddr = ln.Addr().String()
	return silentAddr
}

// TestTopicPattern reads every topic whose whole name matches, and a
// 'kafka' table names the session's cluster as a kafka-sharegroup one
// does.
func TestTopicPattern(t *testing.T) {
	addr, topic := logTopic(t)
	eng := kshare.New()
	ddl := "CREATE TABLE p (id BIGINT, tp STRING METADATA FROM 'topic' VIRTUAL) WITH ('connector' = 'kafka', 'format' = 'json', 'bootstrap.servers' = '" + addr + "', " +
		"'topic-pattern' = '" + regexp.QuoteMeta(topic) + "|" + regexp.QuoteMeta(topic[:len(topic)-1]) + "', 'scan.bounded.mode' = 'latest-offset')"
	if _, err := eng.Exec(kafkatest.Context(t), ddl); err != nil {
		t.Fatal(err)
	}
	got, end := ids(t, eng, "SELECT id FROM p WHERE tp = '"+topic+"'")
	if len(got) != 30 || end != query.EndEOF {
		t.Errorf("got %v (%v)", got, end)
	}
	res, err := eng.Exec(kafkatest.Context(t), "SHOW TOPICS")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Rows, func(r []string) bool { return r[0] == topic && r[1] == "3" }) {
		t.Errorf("SHOW TOPICS on the table's cluster: %v", res.Rows)
	}
}

// TestQuietWithoutBroker: a bounded query whose broker stops answering
// ends with an error, not as if it had read everything (a partition whose
// last offsets hold no record is taken as done only while Kafka answers).
func TestQuietWithoutBroker(t *testing.T) {
	defer kafka.SetQuietEnd(300 * time.Millisecond)()
	fake := kafkatest.Fake(t)
	addr := fake.ListenAddrs()[0]
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, []byte(`{"id": 1}`), []byte(`{"id": 2}`))
	// No fetch succeeds: the records never come, as if cut off.
	fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Err: kerr.NotLeaderForPartition, Count: -1})
	eng := table(t, addr, topic, ", 'scan.bounded.mode' = 'latest-offset', 'properties.request.timeout.ms' = '500'")
	rows, err := eng.Query(kafkatest.Context(t), "SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// The query opened (its offsets are listed); now no broker answers
	// those either.
	fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.ListOffsets}, Err: kerr.NotLeaderForPartition, Count: -1})
	for rows.Next() {
		t.Errorf("a batch of %d rows", rows.RecordBatch().NumRows())
	}
	if err := rows.Err(); err == nil || !strings.Contains(err.Error(), "Kafka does not answer, so the end of every partition cannot be known to be reached") {
		t.Errorf("got %v (%v)", err, rows.EndReason())
	}
}

// TestSASL reads through the real broker's SASL_SSL listener with the same
// 'properties.*' security keys a kafka-sharegroup table takes.
func TestSASL(t *testing.T) {
	s := kafkatest.RequireSASL(t)
	_, topic := logTopic(t)
	eng := table(t, s.Bootstrap, topic, ", 'properties.security.protocol' = 'SASL_SSL', 'properties.sasl.mechanism' = 'SCRAM-SHA-256', "+
		"'properties.sasl.username' = '"+s.User+"', 'properties.sasl.password' = '"+s.Password+"', 'properties.ssl.ca.location' = '"+s.CAFile+"', "+
		"'scan.bounded.mode' = 'latest-offset'")
	got, end := ids(t, eng, "SELECT id FROM t")
	if !slices.Equal(got, slices.Concat(span(0, 0, 10), span(1, 0, 10), span(2, 0, 10))) || end != query.EndEOF {
		t.Errorf("got %v (%v)", got, end)
	}
}

// TestBrokerGoneUnbounded: an unbounded query whose broker goes away says
// so and ends with an error after 'scan.broker-unavailable-timeout', rather
// than wait unseen.
func TestBrokerGoneUnbounded(t *testing.T) {
	fake, err := kfake.NewCluster(kafkatest.FakeOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	addr := fake.ListenAddrs()[0]
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, []byte(`{"id": 1}`))
	eng := table(t, addr, topic, ", 'scan.broker-unavailable-timeout' = '3s', 'properties.request.timeout.ms' = '500'")
	rows, err := eng.Query(kafkatest.Context(t), "SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() || rows.RecordBatch().NumRows() != 1 {
		t.Fatalf("first row: %v", rows.Err())
	}
	fake.Close()
	start := time.Now()
	for rows.Next() {
		t.Errorf("a batch of %d rows", rows.RecordBatch().NumRows())
	}
	if err := rows.Err(); err == nil || !strings.Contains(err.Error(), "no answer from Kafka at "+addr+" since") ||
		!strings.Contains(err.Error(), "(3s, the table's 'scan.broker-unavailable-timeout')") {
		t.Errorf("got %v", err)
	}
	if d := time.Since(start); d < 2*time.Second || d > 15*time.Second {
		t.Errorf("ended after %s, want about 3s", d)
	}
}
