package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/kafkatest"
)

// windowOrders produces n orders of ten customers to topic's four
// partitions, order i at 20 ms after the last and to partition i%4, then
// one order of customer "end" per partition 100 s after the last, whose
// watermark closes every window of the others. It returns each (window
// start, customer)'s count and sum of prices, keyed "start|customer", the
// start as the sink's JSON writes it.
func windowOrders(t *testing.T, addr, topic string, n int) map[string][2]int64 {
	t.Helper()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	truth := map[string][2]int64{}
	var rs []*kgo.Record
	add := func(i int, customer string, at time.Time, price int64) {
		v := fmt.Appendf(nil, `{"customer": %q, "price": %d, "ts": %q}`, customer, price, at.Format("2006-01-02 15:04:05.000"))
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % 4), Value: v})
	}
	for i := range n {
		at := base.Add(time.Duration(i) * 20 * time.Millisecond)
		c, price := fmt.Sprintf("c%d", i*7%10), int64(100+i%97)
		add(i, c, at, price)
		k := at.Truncate(time.Minute).Format("2006-01-02 15:04:05") + "|" + c
		truth[k] = [2]int64{truth[k][0] + 1, truth[k][1] + price}
	}
	last := base.Add(time.Duration(n)*20*time.Millisecond + 100*time.Second)
	for p := range 4 {
		add(p, "end", last, 0)
	}
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(kafkatest.Context(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return truth
}

// committedRows reads every row a read_committed reader sees in topic now,
// keyed "window_start|customer", with how many times each came and its
// last count and sum.
func committedRows(t *testing.T, addr, topic string) (rows map[string][2]int64, times map[string]int) {
	t.Helper()
	rows, times = map[string][2]int64{}, map[string]int{}
	for _, r := range committedRecords(t, addr, topic) {
		var row struct {
			WindowStart string `json:"window_start"`
			Customer    string `json:"customer"`
			N, Total    int64
		}
		if err := json.Unmarshal(r.Value, &row); err != nil {
			t.Fatalf("sink record %s: %v", r.Value, err)
		}
		k := row.WindowStart + "|" + row.Customer
		rows[k] = [2]int64{row.N, row.Total}
		times[k]++
	}
	return rows, times
}

// committedRecords reads every record a read_committed reader sees in
// topic now, in each partition's order.
func committedRecords(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	adm := kafkatest.Admin(t, addr)
	ctx := kafkatest.Context(t)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cl := kafkatest.Client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var out []*kgo.Record
	// Read up to the end offsets listed (those of read_uncommitted: the
	// last stable offset is at or before them), or until nothing more
	// comes for a while: a transaction left open holds the reader back.
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	for len(left) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if pctx.Err() != nil && fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= left[r.Partition] {
				delete(left, r.Partition)
			}
			out = append(out, r)
		})
	}
	return out
}

// TestRunWindowsExactlyOnceKilled: `kshare run --state-dir` of a one-minute
// TUMBLE count and sum per customer over a share group of four partitions,
// written to a plain 'kafka' topic with 'sink.delivery-guarantee' =
// 'exactly-once', is SIGKILLed three times at random points and started
// again on the same state directory each time. A read_committed reader of
// the topic sees each (window, customer) exactly once, with exactly the
// count and sum of its orders: each run continues the open windows the
// last one stored, records handed out again are not counted twice, and a
// transaction a kill left prepared is committed by the next run.
func TestRunWindowsExactlyOnceKilled(t *testing.T) {
	const n = 50000
	addr, topic, group := kafkatest.LockedQueue(t, 3*time.Second, 4)
	out := kafkatest.Topic(t, addr, 2)
	truth := windowOrders(t, addr, topic, n)
	script := fmt.Sprintf(`CREATE TABLE orders (customer STRING, price BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
WITH ('connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s',
  'properties.max.poll.records' = '200');
CREATE TABLE per_minute (window_start TIMESTAMP(3), window_end TIMESTAMP(3), customer STRING, n BIGINT, total BIGINT)
WITH ('connector' = 'kafka', 'format' = 'json', 'properties.bootstrap.servers' = '%s', 'topic' = '%s',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = '%s');
INSERT INTO per_minute SELECT window_start, window_end, customer, COUNT(*), SUM(price)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '1' MINUTE)) GROUP BY window_start, window_end, customer;
`, addr, topic, group, addr, out, out)
	path := filepath.Join(t.TempDir(), "windows.sql")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	written := func() int {
		rows, _ := committedRows(t, addr, out)
		return len(rows)
	}
	all := len(truth)
	cmd, stderr := killRuns(t, []string{"run", "--state-dir", stateDir, "-f", path}, all, "window rows in "+out, written)
	kafkatest.Eventually(t, fmt.Sprintf("all %d window rows in %s", all, out), func() error {
		if got := written(); got < all {
			return fmt.Errorf("%d rows", got)
		}
		return nil
	})
	stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	rows, times := committedRows(t, addr, out)
	for k, want := range truth {
		if rows[k] != want || times[k] != 1 {
			t.Errorf("window|customer %s: %d rows, the last %v; want one, %v", k, times[k], rows[k], want)
		}
	}
	if len(rows) != all {
		t.Errorf("%d window rows, want %d", len(rows), all)
	}
}
