package kshare_test

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
)

// upsertDDL is an upsert-kafka table of per-customer counts over topic,
// read to the end it has when a query opens.
func upsertDDL(name, addr, topic, include string) string {
	return `CREATE TABLE ` + name + ` (customer STRING, n BIGINT, total BIGINT, PRIMARY KEY (customer) NOT ENFORCED) WITH (
	  'connector' = 'upsert-kafka', 'key.format' = 'json', 'value.format' = 'json', 'value.fields-include' = '` + include + `',
	  'properties.bootstrap.servers' = '` + addr + `', 'topic' = '` + topic + `', 'scan.bounded.mode' = 'latest-offset')`
}

// An upsert-kafka table reads its topic as a changelog: a key's first
// value inserts its row, a later one updates it, a tombstone deletes it
// (and one for a key without a row is nothing), under both
// 'value.fields-include' settings; the key columns come from the record's
// key under EXCEPT_KEY.
func TestUpsertKafkaSource(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	for _, include := range []string{"ALL", "EXCEPT_KEY"} {
		t.Run(include, func(t *testing.T) {
			topic := kafkatest.Topic(t, addr, 3)
			var rs []*kgo.Record
			truth := map[string]string{}
			put := func(c string, n, total int64) {
				v := fmt.Sprintf(`{"n": %d, "total": %d}`, n, total)
				if include == "ALL" {
					v = fmt.Sprintf(`{"customer": %q, "n": %d, "total": %d}`, c, n, total)
				}
				rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"customer": %q}`, c), Value: []byte(v)})
				truth[c] = fmt.Sprintf("%s|%d|%d", c, n, total)
			}
			del := func(c string) {
				rs = append(rs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, `{"customer": %q}`, c)})
				delete(truth, c)
			}
			del("never") // a tombstone of a key without a row
			for i := range 300 {
				c := fmt.Sprintf("c%d", i%11)
				put(c, int64(i/11+1), int64(i))
				if i%37 == 36 {
					del(c)
				}
			}
			kafkatest.ProduceRecords(t, addr, rs...)
			eng := kshare.New()
			exec(t, eng, upsertDDL("counts", addr, topic, include))
			got := changesOf(t, eng, "SELECT * FROM counts")
			if state := replay(t, got); !maps.Equal(state, truth) {
				t.Errorf("the changelog ends at %v, want %v", state, truth)
			}
			kinds := map[flow.RowKind]int{}
			for _, c := range got {
				kinds[c.kind]++
			}
			if kinds[flow.KindDelete] == 0 || kinds[flow.KindUpdateAfter] == 0 || kinds[flow.KindInsert] <= 11 {
				t.Errorf("changes %v: the test wants inserts after deletes, updates and deletes", kinds)
			}
			// An aggregate cannot take it, and says what makes it a
			// changelog.
			_, err := eng.Query(kafkatest.Context(t), "SELECT COUNT(*) FROM counts")
			if err == nil || !strings.Contains(err.Error(), "connector 'upsert-kafka'") {
				t.Errorf("an aggregate over an upsert-kafka table: %v", err)
			}
		})
	}
}

// An aggregate written into an upsert-kafka table reads back as a table
// equal to the truth, and copied through kshare into a second upsert-kafka
// table, reads back the same again.
func TestUpsertKafkaRoundTrip(t *testing.T) {
	t.Parallel()
	const n = 900
	addr := kafkatest.Bootstrap(t)
	eng, want := ordersEngine(t, addr, 2, n, 13, 7)
	first, second := kafkatest.Topic(t, addr, 3), kafkatest.Topic(t, addr, 1)
	exec(t, eng, upsertDDL("counts", addr, first, "ALL"))
	exec(t, eng, upsertDDL("copied", addr, second, "EXCEPT_KEY"))
	runToEnd(t, eng, "INSERT INTO counts SELECT customer, COUNT(*), SUM(qty) FROM orders GROUP BY customer")
	if state := replay(t, changesOf(t, eng, "SELECT * FROM counts")); !maps.Equal(state, want) {
		t.Errorf("read back, the table is %v, want %v", state, want)
	}
	runToEnd(t, eng, "INSERT INTO copied SELECT * FROM counts")
	if state := replay(t, changesOf(t, eng, "SELECT * FROM copied")); !maps.Equal(state, want) {
		t.Errorf("copied and read back, the table is %v, want %v", state, want)
	}
}

// A record without a key cannot be a row of an upsert-kafka table: the
// query ends with an error that names the record.
func TestUpsertKafkaRecordWithoutKey(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.ProduceRecords(t, addr, &kgo.Record{Topic: topic, Value: []byte(`{"customer": "c1", "n": 1, "total": 1}`)})
	eng := kshare.New()
	exec(t, eng, upsertDDL("counts", addr, topic, "ALL"))
	rows, err := eng.Query(kafkatest.Context(t), "SELECT * FROM counts")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	err = rows.Err()
	rows.Close()
	if err == nil || !strings.Contains(err.Error(), "has no key") || !strings.Contains(err.Error(), topic) {
		t.Errorf("a record without a key: %v", err)
	}
}
