package kshare_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
)

// customersDDL declares customers, the upsert-kafka table of each
// customer's tier on topic that the temporal joins look orders up in.
func customersDDL(addr, topic string) string {
	return `CREATE TABLE customers (customer STRING, tier STRING, PRIMARY KEY (customer) NOT ENFORCED) WITH (
	  'connector' = 'upsert-kafka', 'key.format' = 'json', 'value.format' = 'json',
	  'properties.bootstrap.servers' = '` + addr + `', 'topic' = '` + topic + `')`
}

// procTimeOrdersDDL declares orders, the json orders on topic read from its
// start by the test's own share group, with the processing time pt that a
// temporal join on processing time joins on.
func procTimeOrdersDDL(t *testing.T, addr, topic string) string {
	return `CREATE TABLE orders (id BIGINT, customer STRING, pt AS PROCTIME()) WITH ('connector' = 'kafka-sharegroup',
	  'bootstrap.servers' = '` + addr + `', 'topic' = '` + topic + `', 'share-group-id' = '` + kafkatest.GroupName(t) + `',
	  'scan.startup.mode' = 'earliest-offset', 'format' = 'json')`
}

// A lookup join against an upsert-kafka table (a temporal join on
// processing time): each order meets its customer's row as the topic has
// it when the order is read. The query follows the topic: an update, a
// delete and a new customer produced before later orders are what those
// orders meet.
func TestTemporalJoinUpsertKafka(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	customers := kafkatest.Topic(t, addr, 3)
	orders := kafkatest.Topic(t, addr, 1)
	truth := map[string]string{}
	put := func(c, tier string) *kgo.Record {
		truth[c] = tier
		return &kgo.Record{Topic: customers, Key: fmt.Appendf(nil, `{"customer": %q}`, c), Value: fmt.Appendf(nil, `{"customer": %q, "tier": %q}`, c, tier)}
	}
	del := func(c string) *kgo.Record {
		delete(truth, c)
		return &kgo.Record{Topic: customers, Key: fmt.Appendf(nil, `{"customer": %q}`, c)}
	}
	var first []*kgo.Record
	for i := range 10 {
		first = append(first, put(fmt.Sprintf("c%d", i), "silver"))
	}
	first = append(first, put("c1", "bronze"), del("c9"))
	kafkatest.ProduceRecords(t, addr, first...)

	eng := kshare.New()
	exec(t, eng, procTimeOrdersDDL(t, addr, orders))
	exec(t, eng, customersDDL(addr, customers))
	rows, err := eng.Query(kafkatest.Context(t), `SELECT o.id, o.customer, c.tier FROM orders AS o
	  LEFT JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.customer = c.customer`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	// read takes n rows and checks each order's tier against truth as it
	// is now (NULL for a customer without a row).
	read := func(n int) {
		t.Helper()
		for got := 0; got < n; {
			if !rows.Next() {
				t.Fatalf("the query ended after %d of %d rows: %v", got, n, rows.Err())
			}
			b := rows.RecordBatch()
			for i := range int(b.NumRows()) {
				id, c := b.Column(0).(*array.Int64).Value(i), b.Column(1).(*array.String).Value(i)
				tier, want := "NULL", "NULL"
				if b.Column(2).IsValid(i) {
					tier = b.Column(2).(*array.String).Value(i)
				}
				if w, ok := truth[c]; ok {
					want = w
				}
				if tier != want {
					t.Errorf("order %d of %s met tier %s, want %s", id, c, tier, want)
				}
				got++
			}
		}
	}
	order := func(from, to int) {
		var vs [][]byte
		for i := from; i < to; i++ {
			vs = append(vs, fmt.Appendf(nil, `{"id": %d, "customer": "c%d"}`, i, i%10))
		}
		kafkatest.Produce(t, addr, orders, vs...)
	}
	order(0, 50)
	read(50)
	// Many changes of other keys first, so that the follower is still
	// reading when the orders come: their lookups wait for it.
	var changes []*kgo.Record
	for i := range 30000 {
		changes = append(changes, put(fmt.Sprintf("x%d", i%500), fmt.Sprintf("t%d", i)))
	}
	changes = append(changes, put("c3", "gold"), del("c4"), put("c9", "platinum"))
	kafkatest.ProduceRecords(t, addr, changes...)
	order(50, 100)
	read(50)
}

// What cannot be looked up in Kafka says what to do.
func TestTemporalJoinRefusals(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, []byte(`{"id": 1, "customer": "c1"}`))
	eng := kshare.New()
	exec(t, eng, procTimeOrdersDDL(t, addr, topic))
	exec(t, eng, customersDDL(addr, topic))
	exec(t, eng, `CREATE TABLE log (customer STRING, tier STRING) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`')`)
	for _, c := range []struct{ sql, want string }{
		{"SELECT o.id FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.customer = c.tier",
			"a temporal join reads this table by its PRIMARY KEY (customer), and the join's ON gives tier"},
		{"SELECT o.id FROM orders AS o JOIN log FOR SYSTEM_TIME AS OF o.pt AS c ON o.customer = c.customer",
			"a lookup join reads a table of rows by key"},
	} {
		rows, err := eng.Query(kafkatest.Context(t), c.sql)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\ngot  %v\nwant %s", c.sql, err, c.want)
		}
	}
}

// AS OF the orders' event time, each order meets the version of its
// customer valid at the order's time: the latest one from that time or
// earlier (an insert or update by the table's WATERMARK column, a delete
// by its tombstone's timestamp), none before the first.
func TestTemporalJoinEventTime(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	customers := kafkatest.Topic(t, addr, 2)
	orders := kafkatest.Topic(t, addr, 1)
	put := func(c, tier, at string) *kgo.Record {
		return &kgo.Record{Topic: customers, Key: fmt.Appendf(nil, `{"customer": %q}`, c),
			Value: fmt.Appendf(nil, `{"customer": %q, "tier": %q, "ts": "2024-01-01 %s"}`, c, tier, at)}
	}
	tombstone := &kgo.Record{Topic: customers, Key: []byte(`{"customer": "c2"}`), Timestamp: time.Date(2024, 1, 1, 0, 0, 3, 0, time.UTC)}
	kafkatest.ProduceRecords(t, addr, put("c1", "silver", "00:00:01"), put("c2", "silver", "00:00:01"), put("c1", "gold", "00:00:05"),
		tombstone, put("c2", "bronze", "00:00:07"))
	want := map[int64]string{}
	var vs [][]byte
	for i, o := range []struct{ c, at, tier string }{
		{"c1", "00:00:00.500", "NULL"}, {"c1", "00:00:02", "silver"}, {"c1", "00:00:06", "gold"}, {"c1", "00:00:05", "gold"},
		{"c2", "00:00:02", "silver"}, {"c2", "00:00:04", "NULL"}, {"c2", "00:00:08", "bronze"}, {"c3", "00:00:08", "NULL"},
	} {
		vs = append(vs, fmt.Appendf(nil, `{"id": %d, "customer": %q, "ts": "2024-01-01 %s"}`, i, o.c, o.at))
		want[int64(i)] = o.tier
	}
	kafkatest.Produce(t, addr, orders, vs...)
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE orders (id BIGINT, customer STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
	  WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '`+addr+`', 'topic' = '`+orders+`',
	  'share-group-id' = '`+kafkatest.GroupName(t)+`', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json')`)
	exec(t, eng, `CREATE TABLE customers (customer STRING, tier STRING, ts TIMESTAMP(3), PRIMARY KEY (customer) NOT ENFORCED,
	  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'upsert-kafka', 'key.format' = 'json', 'value.format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+customers+`')`)
	got := map[int64]string{}
	eachRow(t, eng, `SELECT o.id, c.tier FROM orders AS o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.ts AS c ON o.customer = c.customer`,
		func(b arrow.RecordBatch, i int) {
			tier := "NULL"
			if b.Column(1).IsValid(i) {
				tier = b.Column(1).(*array.String).Value(i)
			}
			got[b.Column(0).(*array.Int64).Value(i)] = tier
		}, kshare.MaxRows(int64(len(want))))
	if !maps.Equal(got, want) {
		t.Errorf("tiers by order %v, want %v", got, want)
	}
}

// An aggregate over a lookup join keeps its state in a state directory as
// one over the share group alone does: a second job continues the groups
// of the first, and the changelog ends at every order's count by tier.
func TestStateDirOverALookupJoin(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 2)
	customers := kafkatest.Topic(t, addr, 1)
	out := kafkatest.Topic(t, addr, 1)
	dir := t.TempDir()
	tiers := [...]string{"gold", "silver", "bronze"}
	var cs []*kgo.Record
	for i := range 10 {
		cs = append(cs, &kgo.Record{Topic: customers, Key: fmt.Appendf(nil, `{"customer": "c%d"}`, i),
			Value: fmt.Appendf(nil, `{"customer": "c%d", "tier": %q}`, i, tiers[i%3])})
	}
	kafkatest.ProduceRecords(t, addr, cs...)
	count, sum := map[string]int{}, map[string]int{}
	byTier := func(from, n int) [][]byte {
		c, s := map[string]int{}, map[string]int{}
		vs := stateOrders(from, n, c, s)
		for cust := range c {
			var i int
			fmt.Sscanf(cust, "c%d", &i)
			count[tiers[i%3]] += c[cust]
			sum[tiers[i%3]] += s[cust]
		}
		return vs
	}
	kafkatest.Produce(t, addr, topic, byTier(0, 300)...)
	insert := `INSERT INTO counts SELECT c.tier, COUNT(*), SUM(o.qty) FROM orders AS o
	  JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.customer = c.customer GROUP BY c.tier`
	session := func() *kshare.Engine {
		eng := kshare.New()
		exec(t, eng, "SET 'state-dir' = '"+dir+"'")
		exec(t, eng, fmt.Sprintf("SET 'idle-timeout' = '%s'", kafkatest.Idle()))
		exec(t, eng, `CREATE TABLE orders (customer STRING, qty BIGINT, pt AS PROCTIME()) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`', 'properties.max.poll.records' = '50')`)
		exec(t, eng, customersDDL(addr, customers))
		exec(t, eng, changelogDDL("counts", addr, out))
		return eng
	}
	waitJob(t, exec(t, session(), insert), "first job", 300, 0)
	kafkatest.Produce(t, addr, topic, byTier(300, 200)...)
	eng := session()
	waitJob(t, exec(t, eng, insert), "second job", 200, 3)
	changelogEndsAt(t, eng, count, sum)
}

// A temporal join's job with a state directory keeps the rows of the
// topic it follows there, with where it read up to: started again, it goes
// on from there, so it knows rows the topic no longer holds (records
// deleted from its start while it was stopped), and meets the changes
// produced since.
func TestTemporalJoinKeptInStateDir(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 2)
	customers := kafkatest.Topic(t, addr, 1)
	out := kafkatest.Topic(t, addr, 1)
	dir := t.TempDir()
	truth := map[string]string{}
	put := func(c, tier string) *kgo.Record {
		truth[c] = tier
		return &kgo.Record{Topic: customers, Key: fmt.Appendf(nil, `{"customer": %q}`, c), Value: fmt.Appendf(nil, `{"customer": %q, "tier": %q}`, c, tier)}
	}
	var cs []*kgo.Record
	for i := range 10 {
		cs = append(cs, put(fmt.Sprintf("c%d", i), "silver"))
	}
	kafkatest.ProduceRecords(t, addr, cs...)
	orders := func(from, to int) {
		var vs [][]byte
		for i := from; i < to; i++ {
			vs = append(vs, fmt.Appendf(nil, `{"id": %d, "customer": "c%d"}`, i, i%10))
		}
		kafkatest.Produce(t, addr, topic, vs...)
	}
	insert := `INSERT INTO enriched SELECT o.id, o.customer, c.tier FROM orders AS o
	  JOIN customers FOR SYSTEM_TIME AS OF o.pt AS c ON o.customer = c.customer`
	job := func(what string, n int64) {
		eng := kshare.New()
		exec(t, eng, "SET 'state-dir' = '"+dir+"'")
		exec(t, eng, fmt.Sprintf("SET 'idle-timeout' = '%s'", kafkatest.Idle()))
		exec(t, eng, `CREATE TABLE orders (id BIGINT, customer STRING, pt AS PROCTIME()) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`')`)
		exec(t, eng, customersDDL(addr, customers))
		exec(t, eng, `CREATE TABLE enriched (id BIGINT, customer STRING, tier STRING) WITH ('connector' = 'kafka', 'format' = 'json',
		  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+out+`')`)
		waitJob(t, exec(t, eng, insert), what, n, 0)
	}
	orders(0, 100)
	job("first job", 100)
	// While it is stopped: c3 changes, and every record before that
	// change leaves the topic, as retention or an operator may remove them.
	kafkatest.ProduceRecords(t, addr, put("c3", "gold"))
	var upTo kadm.Offsets
	upTo.AddOffset(customers, 0, 10, -1)
	res, err := kafkatest.Admin(t, addr).DeleteRecords(kafkatest.Context(t), upTo)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("deleting the customers' first records: %v", err)
	}
	orders(100, 200)
	job("second job", 100)
	seen := map[int64]bool{}
	for _, r := range kafkatest.ReadTopic(t, addr, out, int(kafkatest.TopicSize(t, addr, out))) {
		var row struct {
			ID       int64  `json:"id"`
			Customer string `json:"customer"`
			Tier     string `json:"tier"`
		}
		if err := json.Unmarshal(r.Value, &row); err != nil {
			t.Fatalf("%s: %v", r.Value, err)
		}
		want := "silver"
		if row.ID >= 100 {
			want = truth[row.Customer]
		}
		if row.Tier != want {
			t.Errorf("order %d of %s met tier %q, want %q", row.ID, row.Customer, row.Tier, want)
		}
		seen[row.ID] = true
	}
	if len(seen) != 200 {
		t.Errorf("%d of the 200 orders joined, want all: the second job knows every customer from its state directory", len(seen))
	}
}
