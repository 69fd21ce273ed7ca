package kshare_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
)

// TestInsertEvalErrorDeadLettered: under 'scan.on-eval-error' =
// 'dead-letter' an INSERT whose expression divides by zero on some records
// writes the other rows to the sink, produces those records to the
// dead-letter topic with their key, value and headers plus the kshare.*
// ones, and accepts every original: the group is drained. Under 'fail' (the
// default) the same query fails the job with the error.
func TestInsertEvalErrorDeadLettered(t *testing.T) {
	const n = 50
	addr := kafkatest.Bootstrap(t)
	src, dlq, out := kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 2)
	group := kafkatest.GroupName(t)
	var recs []*kgo.Record
	var good, bad []string
	for i := range n {
		d := i % 10 // 0 for ids 0, 10, 20, 30 and 40
		recs = append(recs, &kgo.Record{Topic: src, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"id": %d, "d": %d}`, i, d),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t%d", i)}}})
		if d == 0 {
			bad = append(bad, strconv.Itoa(i))
		} else {
			good = append(good, strconv.Itoa(i))
		}
	}
	kafkatest.ProduceRecords(t, addr, recs...)

	eng := kshare.New()
	exec(t, eng, `CREATE TABLE src (id INT, d INT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+src+`', 'share-group-id' = '`+group+`', 'scan.startup.mode' = 'earliest-offset',
	  'scan.on-eval-error' = 'dead-letter', 'scan.dead-letter.topic' = '`+dlq+`')`)
	exec(t, eng, `CREATE TABLE `+"`out`"+` (id STRING, q INT) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+out+`', 'scan.bounded.mode' = 'latest-offset')`)
	exec(t, eng, `SET 'idle-timeout' = '`+kafkatest.Idle().String()+`'`)

	res := exec(t, eng, "INSERT INTO `out` SELECT CAST(id AS STRING), 100 / d FROM src")
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if st := res.Job.Stats(); st.State != table.JobFinished || st.Read != int64(len(good)) || st.Acked != int64(len(good)) ||
		st.Accepted != n || st.Released != 0 || st.Rejected != 0 || st.Errors != 0 {
		t.Errorf("stats %+v, want FINISHED, %d rows read and acked, %d records accepted", st, len(good), n)
	}
	if got, _ := values(t, eng, "SELECT id FROM `out`"); !slices.Equal(sorted(got), good) {
		t.Errorf("sink holds %v, want %v", sorted(got), good)
	}

	dead := kafkatest.ReadTopic(t, addr, dlq, len(bad))
	if len(dead) != len(bad) {
		t.Fatalf("%d dead letters, want %d", len(dead), len(bad))
	}
	for i, d := range dead {
		id, _ := strconv.Atoi(bad[i])
		want := []string{"trace=t" + bad[i], kafkaclient.HeaderError + "=division by zero in 100 / d", kafkaclient.HeaderTopic + "=" + src,
			kafkaclient.HeaderPartition + "=0", kafkaclient.HeaderOffset + "=" + bad[i], kafkaclient.HeaderTable + "=src", kafkaclient.HeaderGroup + "=" + group}
		var got []string
		for _, h := range d.Headers {
			if h.Key != kafkaclient.HeaderTimestamp && h.Key != kafkaclient.HeaderDeliveryCount {
				got = append(got, h.Key+"="+string(h.Value))
			}
		}
		if string(d.Key) != "k"+bad[i] || string(d.Value) != string(recs[id].Value) || !slices.Equal(got, want) {
			t.Errorf("dead letter %d: key %q value %q headers %v; want k%s, %s, %v", i, d.Key, d.Value, got, bad[i], recs[id].Value, want)
		}
	}
	if left, _ := values(t, eng, "SELECT CAST(id AS STRING) FROM src", kshare.IdleTimeout(kafkatest.Idle())); len(left) != 0 {
		t.Errorf("the source group still has %v after the job", left)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(sharegroup.Collector())
	if got := kafkatest.MetricOf(t, reg, "kshare_source_eval_errors_total", group); got != float64(len(bad)) {
		t.Errorf("kshare_source_eval_errors_total = %v, want %d", got, len(bad))
	}

	// 'fail': the job ends with the error, which names the table and the
	// record (the topic's 51st, at offset 50), and the record goes back.
	exec(t, eng, "ALTER TABLE src RESET ('scan.on-eval-error', 'scan.dead-letter.topic')")
	kafkatest.ProduceRecords(t, addr, &kgo.Record{Topic: src, Value: []byte(`{"id": 100, "d": 0}`)})
	res = exec(t, eng, "INSERT INTO `out` SELECT CAST(id AS STRING), 100 / d FROM src")
	err := res.Job.Wait(kafkatest.Context(t))
	if want := "table 'src', record " + src + "[0]@50 (delivery 1): division by zero in 100 / d"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("job ended with %v, want %s", err, want)
	}
	if st := res.Job.Stats(); st.State != table.JobFailed || st.Accepted != 0 || st.Released != 1 {
		t.Errorf("stats %+v, want FAILED with the record released", st)
	}
}

// TestSelectEvalErrorRejectsTheWholeRecord: in a SELECT under 'reject', a
// record whose JSON array gave a row that cannot be evaluated is rejected,
// and its other row is left out with it; the group has nothing left.
func TestSelectEvalErrorRejectsTheWholeRecord(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	src := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, src, []byte(`[{"id": 1, "d": 1}, {"id": 2, "d": 0}]`), []byte(`{"id": 3, "d": 1}`))
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE src (id INT, d INT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+src+`', 'share-group-id' = '`+kafkatest.GroupName(t)+`',
	  'scan.startup.mode' = 'earliest-offset', 'scan.on-eval-error' = 'reject')`)
	rows, err := eng.Query(kafkatest.Context(t), "SELECT CAST(id AS STRING), 100 / d FROM src", kshare.IdleTimeout(kafkatest.Idle()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		b := rows.RecordBatch()
		for i := range int(b.NumRows()) {
			got = append(got, b.Column(0).ValueStr(i))
		}
	}
	rows.Close()
	st := rows.Stats()
	if !slices.Equal(got, []string{"3"}) || rows.Err() != nil || st.EvalFailed != 2 || st.Source.EvalErrors != 1 || st.Delivered != 1 {
		t.Errorf("ids %v (err %v), %d rows left out, %d records, %d delivered; want [3], 2, 1, 1",
			got, rows.Err(), st.EvalFailed, st.Source.EvalErrors, st.Delivered)
	}
	if left, _ := values(t, eng, "SELECT CAST(id AS STRING) FROM src", kshare.IdleTimeout(kafkatest.Idle())); len(left) != 0 {
		t.Errorf("the group still has %v: the rejected record came back", left)
	}
}
