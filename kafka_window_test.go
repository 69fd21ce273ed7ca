package kshare_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/query"
)

// lockCap is the per-partition cap of locked records the lock-cap test
// sets for its group: far below what one of its windows holds per
// partition.
const lockCap = 100

// A one-minute TUMBLE count over 20,000 records at parallelism 4, where
// each window holds 6,000 records over 4 partitions, many times the
// broker's cap of locked records per partition (set to lockCap for this
// test's group: share.partition.max.record.locks, a group config since
// Kafka 4.3; kfake knows only the broker config
// group.share.partition.max.record.locks, so on kfake this test starts a
// cluster of its own with the cap). Early firing must keep the stream
// moving: the query ends (on its idle timeout) well within the test's
// deadline, and the last row of each window counts exactly the records
// produced into it, each once.
func TestKafkaWindowOverLockCap(t *testing.T) {
	const n, partitions = 20000, 4
	var addr string
	if kafkatest.Real() {
		addr = kafkatest.Bootstrap(t)
	} else {
		addr = kafkatest.Fake(t, kfake.BrokerConfigs(map[string]string{
			"group.share.partition.max.record.locks": strconv.Itoa(lockCap),
		})).ListenAddrs()[0]
	}
	topic := kafkatest.Topic(t, addr, partitions)
	group := kafkatest.GroupName(t)
	if kafkatest.Real() {
		kafkatest.SetGroupConfig(t, addr, group, map[string]string{"share.partition.max.record.locks": strconv.Itoa(lockCap)})
	}
	// Record i is stamped base + 10 ms * i: 6,000 records a minute, so
	// windows of 6,000, 6,000, 6,000 and 2,000 records, counted here
	// independently of the query.
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	want := map[int64]int64{}
	rs := make([]*kgo.Record, n)
	for i := range rs {
		ts := base.Add(time.Duration(i) * 10 * time.Millisecond)
		rs[i] = &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i)), Timestamp: ts}
		want[ts.Truncate(time.Minute).UnixMilli()]++
	}
	kafkatest.ProduceRecords(t, addr, rs...)

	eng := windowEngine(t, addr, topic, group, "'source.parallelism' = '4'")
	const sql = "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(kts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end"
	// A stall would hold the query until this deadline; the idle timeout
	// ends a healthy one.
	ctx, cancel := context.WithTimeout(kafkatest.Context(t), 50*time.Second)
	defer cancel()
	start := time.Now()
	got, end, stats := windowCounts(ctx, t, eng, sql, kshare.IdleTimeout(5*time.Second))
	if end != query.EndIdle {
		t.Fatalf("the query ended %s after %v, not on its idle timeout: it stalled (got %v of %v)", end, time.Since(start), got, want)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("last rows per window (window start ms: count) = %v; want %v", got, want)
	}
	t.Logf("%d records in %v at cap %d per partition: %d late, rows %v", n, time.Since(start).Round(time.Millisecond), lockCap, stats.Late, got)
}

// windowEngine defines table w over topic: the raw value v, and the
// records' Kafka timestamps kts as its event time with a watermark 1 s
// behind, read by share group group from the earliest offset, with the
// options in more ('key' = 'value', ...) too.
func windowEngine(t *testing.T, addr, topic, group, more string) *kshare.Engine {
	t.Helper()
	if more != "" {
		more += ","
	}
	eng := kshare.New()
	if _, err := eng.Exec(context.Background(), `CREATE TABLE w (v STRING, kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp',
	  WATERMARK FOR kts AS kts - INTERVAL '1' SECOND) WITH (
	  'connector' = 'kafka-sharegroup', 'format' = 'raw', `+more+`
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`',
	  'share-group-id' = '`+group+`', 'scan.startup.mode' = 'earliest-offset')`); err != nil {
		t.Fatal(err)
	}
	return eng
}

// windowCounts runs a query whose columns are window_start and a count to
// its end and returns each window's last count (keyed by its start in
// milliseconds), why the query ended and its stats.
func windowCounts(ctx context.Context, t *testing.T, eng *kshare.Engine, sql string, opts ...kshare.QueryOption) (map[int64]int64, query.EndReason, query.Stats) {
	t.Helper()
	rows, err := eng.Query(ctx, sql, opts...)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			if op := rows.Op(i); op == query.Insert || op == query.UpdateAfter {
				got[int64(rec.Column(0).(*array.Timestamp).Value(i))] = rec.Column(1).(*array.Int64).Value(i)
			}
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	return got, rows.EndReason(), rows.Stats()
}

// A window TVF read without aggregation is a projection: its rows, one per
// record and window, come as the records do, and each can be released on
// its own. Releasing one of the two HOP rows of record b releases b, which
// the next query gets again; a and c are accepted.
func TestKafkaWindowRowsReleaseRow(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	base := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	var rs []*kgo.Record
	for i, v := range []string{"a", "b", "c"} {
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(v), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	kafkatest.ProduceRecords(t, addr, rs...)
	eng := windowEngine(t, addr, topic, kafkatest.GroupName(t), "")
	rows, err := eng.Query(kafkatest.Context(t), "SELECT v, window_start FROM TABLE(HOP(TABLE w, DESCRIPTOR(kts), INTERVAL '1' MINUTE, INTERVAL '2' MINUTES)) LIMIT 6")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	released := false
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			v := rec.Column(0).(*array.String).Value(i)
			start := time.UnixMilli(int64(rec.Column(1).(*array.Timestamp).Value(i))).UTC()
			got = append(got, v+" "+start.Format("15:04"))
			if v == "b" && !released {
				if err := rows.ReleaseRow(i); err != nil {
					t.Fatal(err)
				}
				released = true
			}
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if want := "[a 11:59 a 12:00 b 11:59 b 12:00 c 11:59 c 12:00]"; fmt.Sprint(got) != want {
		t.Fatalf("rows %v, want %s", got, want)
	}
	if s := rows.Stats(); s.Rows != 6 || s.Released != 1 || s.Delivered != 5 {
		t.Errorf("stats %+v; want 6 rows, 1 released, 5 delivered", s)
	}
	again, _ := values(t, eng, "SELECT v FROM w", kshare.IdleTimeout(3*time.Second))
	if !slices.Equal(again, []string{"b"}) {
		t.Fatalf("after the release: %v, want b alone", again)
	}
}

// A bounded read of a four-partition topic whose records are out of order
// (within the WATERMARK's delay in each partition; across partitions as
// the consumer happens to fetch them) gives each TUMBLE, HOP and CUMULATE
// window exactly one row, equal to what this test computes from the
// records it produced. The kafka connector takes nothing, so its windows
// wait for their close; the watermark is kept per partition, so no
// partition's records come late because another was read first. The same
// holds for the topic read through a share group to the query's idle
// timeout, which closes every window: the query accepts what its windows
// fold, so they need not emit early.
func TestKafkaWindowsOneRowEach(t *testing.T) {
	const partitions, perPartition = 4, 1000
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, partitions)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	type rec struct {
		at       time.Time
		customer string
		price    int64
	}
	var recs []rec
	var rs []*kgo.Record
	rng := rand.New(rand.NewPCG(7, 11))
	for p := range int32(partitions) {
		for k := range perPartition {
			// 600 ms apart, up to 4 s off: each partition spans ten minutes.
			r := rec{base.Add(time.Duration(k)*600*time.Millisecond + time.Duration(rng.IntN(4000))*time.Millisecond),
				fmt.Sprintf("c%d", rng.IntN(3)), int64(rng.IntN(100))}
			recs = append(recs, r)
			rs = append(rs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, `{"customer": %q, "price": %d, "ts": %q}`,
				r.customer, r.price, r.at.Format("2006-01-02 15:04:05.000"))})
		}
	}
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(kafkatest.Context(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE o (customer STRING, price BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (
	  'connector' = 'kafka', 'format' = 'json', 'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`',
	  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset')`)
	minute, half := time.Minute, 30*time.Second
	for _, c := range []struct {
		name, tvf string
		windows   func(at time.Time) [][2]time.Time // the windows a time falls in
	}{
		{"tumble", "TUMBLE(TABLE o, DESCRIPTOR(ts), INTERVAL '1' MINUTE)", func(at time.Time) [][2]time.Time {
			s := at.Truncate(minute)
			return [][2]time.Time{{s, s.Add(minute)}}
		}},
		{"hop", "HOP(TABLE o, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE)", func(at time.Time) [][2]time.Time {
			s := at.Truncate(half)
			return [][2]time.Time{{s.Add(-half), s.Add(half)}, {s, s.Add(minute)}}
		}},
		{"cumulate", "CUMULATE(TABLE o, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '2' MINUTE)", func(at time.Time) [][2]time.Time {
			s := at.Truncate(2 * minute)
			var ws [][2]time.Time
			for e := s.Add(half); !e.After(s.Add(2 * minute)); e = e.Add(half) {
				if e.After(at) {
					ws = append(ws, [2]time.Time{s, e})
				}
			}
			return ws
		}},
	} {
		for _, via := range []string{"kafka", "kafka-sharegroup"} {
			t.Run(c.name+"/"+via, func(t *testing.T) {
				table, opts := "o", []kshare.QueryOption(nil)
				if via == "kafka-sharegroup" {
					table = "q_" + c.name
					exec(t, eng, `CREATE TABLE `+table+` (customer STRING, price BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) WITH (
				  'connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`',
				  'share-group-id' = '`+kafkatest.GroupName(t)+`', 'scan.startup.mode' = 'earliest-offset')`)
					opts = append(opts, kshare.IdleTimeout(kafkatest.Idle()))
				}
				want := map[string]string{} // window and customer: "count sum"
				type agg struct{ n, sum int64 }
				sums := map[string]*agg{}
				for _, r := range recs {
					for _, w := range c.windows(r.at) {
						k := fmt.Sprintf("%s %s %s", w[0].Format("15:04:05"), w[1].Format("15:04:05"), r.customer)
						if sums[k] == nil {
							sums[k] = &agg{}
						}
						sums[k].n++
						sums[k].sum += r.price
					}
				}
				for k, a := range sums {
					want[k] = fmt.Sprintf("+I %d %d", a.n, a.sum)
				}
				rows, err := eng.Query(kafkatest.Context(t), `SELECT window_start, window_end, customer, COUNT(*), SUM(price) FROM TABLE(`+
					strings.Replace(c.tvf, "TABLE o", "TABLE "+table, 1)+`)
				GROUP BY window_start, window_end, customer`, opts...)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				dup := 0
				for rows.Next() {
					rec := rows.RecordBatch()
					for i := range int(rec.NumRows()) {
						k := fmt.Sprintf("%s %s %s", rec.Column(0).(*array.Timestamp).Value(i).ToTime(arrow.Millisecond).Format("15:04:05"),
							rec.Column(1).(*array.Timestamp).Value(i).ToTime(arrow.Millisecond).Format("15:04:05"), rec.Column(2).ValueStr(i))
						if _, ok := got[k]; ok {
							dup++
						}
						got[k] = fmt.Sprintf("%s %d %d", rows.Op(i), rec.Column(3).(*array.Int64).Value(i), rec.Column(4).(*array.Int64).Value(i))
					}
				}
				if err := rows.Close(); err != nil {
					t.Fatal(err)
				}
				if dup > 0 || !maps.Equal(got, want) {
					t.Errorf("%d windows and customers got more than one row; rows (window, customer: op count sum) %v, want %v", dup, got, want)
				}
				if s := rows.Stats(); s.Late != 0 {
					t.Errorf("%d records came late", s.Late)
				}
			})
		}
	}
}

// A record later than every window it falls in updates nothing; under
// 'scan.on-eval-error' = 'dead-letter' it goes to the dead-letter topic,
// saying why, and is counted, while the windows' rows stay as they were.
func TestKafkaLateRecordDeadLettered(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic, dlq := kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 1)
	group := kafkatest.GroupName(t)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for _, r := range []struct {
		v  string
		at time.Duration
	}{{"a", 10 * time.Second}, {"b", 50 * time.Second}, {"c", 90 * time.Second}, {"late", 20 * time.Second}} {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(r.v), Timestamp: base.Add(r.at)})
	}
	kafkatest.ProduceRecords(t, addr, recs...)
	// One record a poll and a batch: the watermark c moves (01:29) has
	// dropped [00:00, 01:00) when the late record comes.
	eng := windowEngine(t, addr, topic, group, `'properties.max.poll.records' = '1', 'properties.share.acquire.mode' = 'record_limit',
	  'scan.batch-size' = '1', 'scan.on-eval-error' = 'dead-letter', 'scan.dead-letter.topic' = '`+dlq+`'`)
	exec(t, eng, "SET 'window.allowed-lateness' = '0 s'")
	got, _, st := windowCounts(kafkatest.Context(t), t, eng, `SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(kts), INTERVAL '1' MINUTES))
	  GROUP BY window_start, window_end`, kshare.IdleTimeout(kafkatest.Idle()))
	want := map[int64]int64{base.UnixMilli(): 2, base.Add(time.Minute).UnixMilli(): 1}
	if !maps.Equal(got, want) || st.BeyondLateness != 1 {
		t.Errorf("windows %v, %d beyond the lateness; want %v and 1", got, st.BeyondLateness, want)
	}
	dead := kafkatest.ReadTopic(t, addr, dlq, 1)
	var why string
	for _, h := range dead[0].Headers {
		if h.Key == kafkaclient.HeaderError {
			why = string(h.Value)
		}
	}
	if string(dead[0].Value) != "late" || !strings.Contains(why, "late: its event time 2024-01-01 00:00:20.000 falls only in windows") {
		t.Errorf("dead letter %q with %s %q; want the late record, saying why", dead[0].Value, kafkaclient.HeaderError, why)
	}
	if left, _ := values(t, eng, "SELECT v FROM w", kshare.IdleTimeout(kafkatest.Idle())); len(left) != 0 {
		t.Errorf("the group still has %v after the query", left)
	}
}
