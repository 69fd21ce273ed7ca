package kshare_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// produceTo writes values to the given partitions of topic, value i to
// partition parts[i].
func produceTo(t *testing.T, addr, topic string, parts []int32, values []string) {
	t.Helper()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: topic, Partition: parts[i], Value: []byte(v)}
	}
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(kafkatest.Context(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestProposeTable: the CREATE TABLE proposed from a topic of JSON orders
// types every field, parses, binds with the kafka-sharegroup connector, and
// a SELECT over it returns the topic's records.
func TestProposeTable(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 2)
	const n = 30
	var values []string
	var parts []int32
	for i := range n {
		values = append(values, fmt.Sprintf(`{"order_id": %d, "customer": "c-%d", "price": %d.%02d, "paid": %t, `+
			`"ts": "2026-12-01 10:00:%02d.123", "items": [{"sku": "s-%d", "qty": %d}], "ship": {"city": "Oslo", "zip": "0150"}}`,
			i, i, i, i, i%2 == 0, i, i, i+1))
		parts = append(parts, int32(i%2))
	}
	produceTo(t, addr, topic, parts, values)
	adm := admin.New(kafkatest.Client(t, addr))
	ctx := kafkatest.Context(t)
	group := kafkatest.GroupName(t)

	p, err := kshare.ProposeTable(ctx, adm, topic, kshare.ProposeOptions{Table: "orders", ShareGroup: group, Records: 20})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sampled != 20 || p.Rows != 20 || p.Skipped != 0 {
		t.Errorf("sampled %d records holding %d rows, %d skipped; want the latest 10 of each partition", p.Sampled, p.Rows, p.Skipped)
	}
	want := "CREATE TABLE `orders` (\n" +
		"  `order_id` BIGINT,\n" +
		"  `customer` STRING,\n" +
		"  `price` DECIMAL(10, 2),\n" +
		"  `paid` BOOLEAN,\n" +
		"  `ts` TIMESTAMP(3),\n" +
		"  `items` ARRAY<ROW<`sku` STRING, `qty` BIGINT>>,\n" +
		"  `ship` ROW<`city` STRING, `zip` STRING>\n" +
		")\nWITH (\n" +
		"  'connector' = 'kafka-sharegroup',\n" +
		"  'format' = 'json',\n" +
		"  'bootstrap.servers' = '" + addr + "',\n" +
		"  'scan.startup.mode' = 'earliest-offset',\n" +
		"  'share-group-id' = '" + group + "',\n" +
		"  'topic' = '" + topic + "'\n" +
		")"
	if p.DDL != want {
		t.Fatalf("proposed DDL:\n%s\nwant:\n%s", p.DDL, want)
	}

	sts, err := parse.Parse(p.DDL)
	if err != nil {
		t.Fatalf("the proposed DDL does not parse: %v", err)
	}
	if ct, ok := sts[0].(*table.CreateTable); len(sts) != 1 || !ok || !ct.Def.Equal(p.Definition) {
		t.Fatalf("the proposed DDL parses to %v, want its own definition", sts)
	}
	eng := kshare.New()
	if _, err := eng.Exec(ctx, p.DDL); err != nil {
		t.Fatalf("the proposed DDL does not create a table: %v", err)
	}
	rows, err := eng.Query(ctx, "SELECT order_id, customer, price, ship FROM orders", kshare.MaxRows(n))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	for rows.Next() {
		b := rows.RecordBatch()
		ids := b.Column(0).(*array.Int64)
		for i := range ids.Len() {
			id := ids.Value(i)
			if c := b.Column(1).(*array.String).Value(i); c != fmt.Sprintf("c-%d", id) {
				t.Errorf("order %d: customer %q", id, c)
			}
			if z := b.Column(3).(*array.Struct).Field(1).(*array.String).Value(i); z != "0150" {
				t.Errorf("order %d: ship.zip %q", id, z)
			}
			seen[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("SELECT over the proposed table returned %d distinct orders, want %d", len(seen), n)
	}
}

// TestProposeTableBadInput: no proposal for an unknown topic, an empty one,
// or one whose values are not JSON, each with its reason.
func TestProposeTableBadInput(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	adm := admin.New(kafkatest.Client(t, addr))
	ctx := kafkatest.Context(t)
	raw := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, raw, kafkatest.Values(5)...)
	empty := kafkatest.Topic(t, addr, 1)

	_, err := kshare.ProposeTable(ctx, adm, raw+"x", kshare.ProposeOptions{})
	if !errors.Is(err, admin.ErrUnknownTopic) || !strings.Contains(err.Error(), "did you mean '"+raw+"'") {
		t.Errorf("unknown topic: got %v, want %v with a did-you-mean", err, admin.ErrUnknownTopic)
	}
	_, err = kshare.ProposeTable(ctx, adm, empty, kshare.ProposeOptions{})
	if err == nil || !strings.Contains(err.Error(), "holds no records") {
		t.Errorf("empty topic: got %v, want an error saying it holds no records", err)
	}
	// "0", "1", ... are JSON numbers, not objects: no row to infer from.
	_, err = kshare.ProposeTable(ctx, adm, raw, kshare.ProposeOptions{})
	if err == nil || !strings.Contains(err.Error(), "none of the 5 records read holds a JSON object") {
		t.Errorf("values that are not objects: got %v", err)
	}
}
