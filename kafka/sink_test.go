package kafka_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/kafka"
	ktable "github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// sinkTable binds a 'kafka' table (id BIGINT, name STRING) over topic
// with the extra WITH entries.
func sinkTable(t *testing.T, addr, topic, with string) *ktable.Bound {
	t.Helper()
	opts := map[string]string{"connector": "kafka", "format": "json", "properties.bootstrap.servers": addr, "topic": topic}
	for _, kv := range strings.Split(with, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			opts[k] = v
		}
	}
	b, err := ktable.Bind(ktable.NewDefinition("out", []types.Column{{Name: "id", Type: types.BigIntType()}, {Name: "name", Type: types.StringType()}}, opts))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batch is rows (id, "n<id>") for ids.
func batch(t *testing.T, ids ...int64) arrow.RecordBatch {
	mem := tabletest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append("n" + string(rune('0'+id%10)))
	}
	rec := b.NewRecordBatch()
	t.Cleanup(rec.Release)
	return rec
}

// openWriter opens a writer of b's sink.
func openWriter(t *testing.T, b *ktable.Bound) flow.Writer {
	t.Helper()
	s, err := ktable.NewSink(b)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Open(kafkatest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// write writes rec to b's topic and returns what done said.
func write(t *testing.T, b *ktable.Bound, rec arrow.RecordBatch) (flow.SinkStats, error) {
	t.Helper()
	w := openWriter(t, b)
	res := make(chan error, 1)
	if err := w.Write(kafkatest.Context(t), rec, func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	err := <-res
	st := w.Stats()
	if cerr := w.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return st, err
}

func TestSinkWritesKeyAndValue(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 2)
	b := sinkTable(t, addr, topic, "key.format=json,key.fields=id,value.fields-include=EXCEPT_KEY,sink.partitioner=round-robin")
	st, err := write(t, b, batch(t, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if st.Written != 3 || st.Acked != 3 || st.Failed != 0 {
		t.Errorf("stats %+v, want 3 written and acked", st)
	}
	var got []string
	parts := map[int32]bool{}
	for _, r := range kafkatest.ReadTopic(t, addr, topic, 3) {
		got = append(got, string(r.Key)+" "+string(r.Value))
		parts[r.Partition] = true
	}
	slices.Sort(got)
	want := []string{`{"id":1} {"name":"n1"}`, `{"id":2} {"name":"n2"}`, `{"id":3} {"name":"n3"}`}
	if !slices.Equal(got, want) {
		t.Errorf("records\n got %q\nwant %q", got, want)
	}
	if len(parts) != 2 {
		t.Errorf("round-robin wrote to partitions %v, want both", parts)
	}
}

// The sink's batches are compressed as 'properties.compression.type' says,
// and not at all by default, as Kafka's producer (franz-go's own default is
// snappy). (A codec that does not make a batch smaller is skipped by
// franz-go: gzip's header outweighs three short records; zstd's does not.)
func TestSinkCompression(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	for _, c := range []struct {
		with string
		want uint8 // the batch attribute: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	}{{"", 0}, {"properties.compression.type=zstd", 4}} {
		topic := kafkatest.Topic(t, addr, 1)
		if _, err := write(t, sinkTable(t, addr, topic, c.with), batch(t, 1, 2, 3)); err != nil {
			t.Fatal(err)
		}
		for _, r := range kafkatest.ReadTopic(t, addr, topic, 3) {
			if got := r.Attrs.CompressionType(); got != c.want {
				t.Errorf("%q: record %s in a batch of compression %d, want %d", c.with, r.Value, got, c.want)
			}
		}
	}
}

func TestSinkMissingTopic(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	s, err := ktable.NewSink(sinkTable(t, addr, kafkatest.TopicName(t), ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Open(kafkatest.Context(t))
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Open of a missing topic: %v, want an error saying it does not exist", err)
	}
}

// writeTooLarge writes the rows "small" and 1000 x's to a new topic of addr whose
// max.message.bytes is 200, through a table (v STRING) with the extra WITH
// entries, and returns the topic, the writer's stats and what done said.
func writeTooLarge(t *testing.T, addr string, with map[string]string) (string, flow.SinkStats, error) {
	topic := kafkatest.Topic(t, addr, 1)
	setMaxMessageBytes(t, addr, topic, "200")
	opts := map[string]string{"connector": "kafka", "format": "raw", "properties.bootstrap.servers": addr, "topic": topic}
	for k, v := range with {
		opts[k] = v
	}
	b, err := ktable.Bind(ktable.NewDefinition("out", []types.Column{{Name: "v", Type: types.StringType()}}, opts))
	if err != nil {
		t.Fatal(err)
	}
	mem := tabletest.CheckedAlloc(t)
	sb := array.NewStringBuilder(mem)
	sb.Append("small")
	sb.Append(strings.Repeat("x", 1000))
	col := sb.NewArray()
	sb.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil), []arrow.Array{col}, 2)
	col.Release()
	defer rec.Release()
	st, err := write(t, b, rec)
	return topic, st, err
}

func TestSinkRecordTooLarge(t *testing.T) {
	_, st, err := writeTooLarge(t, kafkatest.Bootstrap(t), nil)
	re, ok := err.(*flow.RowError)
	if !ok || re.Row != 1 || !strings.Contains(err.Error(), "max.message.bytes is 200") {
		t.Fatalf("a record over max.message.bytes: %v, want a RowError for row 1 naming the limit", err)
	}
	if st.Failed != 1 {
		t.Errorf("stats %+v, want 1 failed", st)
	}
}

// TestSinkRefusedDeadLetter: under 'sink.on-refused-record' = 'dead-letter'
// the record the sink topic refuses goes to the dead-letter topic with the
// kshare.* headers, and the write succeeds once that is acknowledged.
func TestSinkRefusedDeadLetter(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	dlq := kafkatest.Topic(t, addr, 1)
	topic, st, err := writeTooLarge(t, addr, map[string]string{"sink.on-refused-record": "dead-letter", "sink.dead-letter.topic": dlq})
	if err != nil || st.Acked != 1 || st.DeadLettered != 1 || st.Failed != 0 {
		t.Fatalf("write: %v, stats %+v; want success, 1 acked and 1 dead-lettered", err, st)
	}
	d := kafkatest.ReadTopic(t, addr, dlq, 1)[0]
	if string(d.Value) != strings.Repeat("x", 1000) || d.Key != nil {
		t.Errorf("dead letter: key %q, value of %d bytes; want no key and the 1000-byte value", d.Key, len(d.Value))
	}
	want := []string{
		"kshare.error=table 'out': a record of 1000 bytes is too large for topic '" + topic + "', whose max.message.bytes is 200: ",
		"kshare.topic=" + topic,
		"kshare.table=out",
	}
	if len(d.Headers) != len(want) {
		t.Fatalf("dead letter headers %v, want %d", d.Headers, len(want))
	}
	for i, h := range d.Headers {
		// The error ends with franz-go's text of MESSAGE_TOO_LARGE.
		if got := h.Key + "=" + string(h.Value); got != want[i] && (i > 0 || !strings.HasPrefix(got, want[i])) {
			t.Errorf("header %d = %q, want %q", i, got, want[i])
		}
	}
}

// TestSinkRefusedDeadLetterFails: a dead-letter topic that refuses the
// record too fails the row, as without it.
func TestSinkRefusedDeadLetterFails(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	dlq := kafkatest.Topic(t, addr, 1)
	setMaxMessageBytes(t, addr, dlq, "200")
	_, st, err := writeTooLarge(t, addr, map[string]string{"sink.on-refused-record": "dead-letter", "sink.dead-letter.topic": dlq})
	re, ok := err.(*flow.RowError)
	if !ok || re.Row != 1 || !strings.Contains(err.Error(), "producing it to the dead-letter topic '"+dlq+"' failed too") {
		t.Fatalf("write: %v, want a RowError for row 1 saying the dead letter failed too", err)
	}
	if st.Failed != 1 || st.DeadLettered != 0 {
		t.Errorf("stats %+v, want 1 failed, none dead-lettered", st)
	}
}

func TestSinkRefusals(t *testing.T) {
	for _, c := range []struct{ with, want string }{
		{"sink.transactional-id-prefix=job1", "'sink.transactional-id-prefix' is used only with 'sink.delivery-guarantee' = 'exactly-once' (it is 'at-least-once')"},
		{"key.format=json", "'key.format' needs 'key.fields'"},
		{"key.format=jsn", "(did you mean 'json'? known: debezium-json, json, raw)"},
		{"value.fields-include=EXCEPT_KEY", "needs 'key.fields'"},
		{"sink.partitioner=hash", "sink.partitioner"},
		{"sink.parallelism=2", "one producer per job"},
		{"sink.on-refused-record=dead-letter", "'sink.on-refused-record' = 'dead-letter' needs 'sink.dead-letter.topic'"},
		{"sink.dead-letter.topic=dlq", "'sink.dead-letter.topic' is used only with 'sink.on-refused-record' = 'dead-letter' (it is 'fail')"},
	} {
		k, v, _ := strings.Cut(c.with, "=")
		_, err := ktable.Bind(ktable.NewDefinition("out", []types.Column{{Name: "id", Type: types.BigIntType()}},
			map[string]string{"connector": "kafka", "format": "json", "properties.bootstrap.servers": "localhost:9", "topic": "t", k: v}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.with, err, c.want)
		}
	}
}

// setMaxMessageBytes sets topic's max.message.bytes.
func setMaxMessageBytes(t *testing.T, addr, topic, v string) {
	t.Helper()
	rs, err := kafkatest.Admin(t, addr).AlterTopicConfigs(context.Background(), []kadm.AlterConfig{{Name: "max.message.bytes", Value: &v}}, topic)
	if err == nil {
		_, err = rs.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("setting max.message.bytes of %s: %v", topic, err)
	}
}

// produceCounter counts the produce requests a client sends.
type produceCounter struct{ n atomic.Int64 }

func (c *produceCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err == nil { // Produce
		c.n.Add(1)
	}
}

// A Write's rows go out together as soon as they are all buffered: one
// produce request for a batch that fits one, sent without waiting for the
// producer's linger (a minute here, franz-go's most, so that a Write the
// writer did not flush would wait that long), and the next Write is not
// left to the linger either. Only one Write's requests are counted, the
// first after a warm-up: a Write that comes while the flush of the one
// before is still waiting for its answers goes out as it is buffered
// (franz-go does not linger while flushing), in one request or more, and
// so do the records of a new client's first Write, which wait for the
// topic's metadata and are put into the partition's buffer while the
// flush is already draining it (seen in CI on a loaded machine: 2
// requests).
func TestSinkWriteFlushesItsRecords(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	var c produceCounter
	defer kafka.SetSinkClientOpts(kgo.WithHooks(&c), kgo.ProducerLinger(time.Minute))()
	w := openWriter(t, sinkTable(t, addr, topic, ""))
	defer w.Close()
	ids := make([]int64, 2000)
	for i := range ids {
		ids[i] = int64(i)
	}
	warm := make(chan error, 1)
	if err := w.Write(kafkatest.Context(t), batch(t, -1), func(err error) { warm <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-warm; err != nil {
		t.Fatalf("warm-up write: %v", err)
	}
	// The warm-up's flush ends just after its answer came, which nothing
	// shows: time for it, not a wait for a condition.
	time.Sleep(500 * time.Millisecond)
	c.n.Store(0)
	for round := int64(1); round <= 2; round++ {
		res := make(chan error, 1)
		if err := w.Write(kafkatest.Context(t), batch(t, ids...), func(err error) { res <- err }); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-res:
			if err != nil {
				t.Fatalf("write %d: %v", round, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("write %d not acknowledged within 30 s: its records wait for the producer's linger", round)
		}
		if got := c.n.Load(); round == 1 && got != 1 {
			t.Errorf("a write of 2000 rows went out in %d produce requests, want 1", got)
		}
	}
	if n := len(kafkatest.ReadTopic(t, addr, topic, 4001)); n != 4001 {
		t.Errorf("the topic holds %d records, want 4001", n)
	}
}
