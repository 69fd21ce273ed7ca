package sharegroup_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	_ "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/internal/cputime"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// orderValues makes n orders JSON values with varied fields, like the
// benchmark suite's.
func orderValues(n int) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = fmt.Appendf(nil, `{"order_id":%d,"customer_id":"C%03d","quantity":%d,"price":%d.%02d}`,
			1000+i, i%500, 1+i%5, 5+i%200, i%100)
	}
	return vs
}

var benchTopics struct {
	sync.Mutex
	byParts map[int32]string
}

// benchTopic loads N orders once per partition count and reuses the topic
// across sub-benchmarks; each run reads it with a fresh group.
func benchTopic(b *testing.B, addr string, parts int32, n int) string {
	benchTopics.Lock()
	defer benchTopics.Unlock()
	if benchTopics.byParts == nil {
		benchTopics.byParts = map[int32]string{}
	}
	if t, ok := benchTopics.byParts[parts]; ok {
		return t
	}
	t := kafkatest.Topic(b, addr, parts)
	vs := orderValues(n)
	for i := 0; i < n; i += 50000 {
		kafkatest.Produce(b, addr, t, vs[i:min(n, i+50000)]...)
	}
	benchTopics.byParts[parts] = t
	return t
}

// ordersSource binds the orders table; extra are more WITH pairs, key then
// value.
func ordersSource(b *testing.B, addr, topic, group string, parallelism int, extra ...string) flow.Source {
	opts := map[string]string{
		"connector":          sharegroup.Name,
		"format":             "json",
		"bootstrap.servers":  addr,
		"topic":              topic,
		"share-group-id":     group,
		"source.parallelism": strconv.Itoa(parallelism),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		opts[extra[i]] = extra[i+1]
	}
	def := table.NewDefinition("orders", []types.Column{
		{Name: "order_id", Type: types.BigIntType()},
		{Name: "customer_id", Type: types.StringType()},
		{Name: "quantity", Type: types.IntType()},
		{Name: "price", Type: types.DecimalType(10, 2)},
	}, opts)
	t, err := table.NewTable(def)
	if err != nil {
		b.Fatal(err)
	}
	return t.Source
}

// BenchmarkSourceOrders reads N orders JSON records through the source
// (decode into Arrow, at-least-once settling of every batch) and reports
// records/s and the process's CPU seconds per 100k records, for 1 and 4
// members, on 1 and 4 partitions, without prefetch (the connector's policy)
// and with one fetch of prefetch.
//
//	KSHARE_BENCH_N=200000 go test -run '^$' -bench BenchmarkSourceOrders ./sharegroup
func BenchmarkSourceOrders(b *testing.B) {
	n, addr := benchN(b), kafkatest.Bootstrap(b)
	for _, parts := range []int32{1, 4} {
		topic := benchTopic(b, addr, parts, n)
		for _, par := range []int{1, 4} {
			for _, prefetch := range []int{0, 1} {
				b.Run(fmt.Sprintf("partitions=%d/members=%d/prefetch=%d", parts, par, prefetch), func(b *testing.B) {
					defer sharegroup.SetPolicy(prefetch, true)()
					var total, cpu time.Duration
					for i := 0; i < b.N; i++ {
						group := kafkatest.ShareGroup(b, addr)
						src := ordersSource(b, addr, topic, group, par)
						start, cpu0 := time.Now(), cputime.Process()
						st := readOrders(b, src, n)
						total += time.Since(start)
						st.Close()
						cpu += cputime.Process() - cpu0
					}
					b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "records/s")
					// The process's CPU (client, decoding, reader): what a
					// busy shared machine disturbs less than records/s.
					b.ReportMetric(cpu.Seconds()*1e5/(float64(n)*float64(b.N)), "cpu-s/100k")
				})
			}
		}
	}
}

// BenchmarkAcquireMode reads N orders with each acquisition mode and poll
// size, on 1 and 8 partitions with 1 and 4 members, and reports records/s
// (docs/delivery.md has the figures that chose the defaults). Use -count
// to repeat it: the modes of one configuration run one after the other,
// so a busy machine disturbs them alike.
//
//	KSHARE_BENCH_N=100000 go test -run '^$' -bench BenchmarkAcquireMode -benchtime 1x -count 2 ./sharegroup
func BenchmarkAcquireMode(b *testing.B) {
	n, addr := benchN(b), kafkatest.Bootstrap(b)
	for _, parts := range []int32{1, 8} {
		topic := benchTopic(b, addr, parts, n)
		for _, par := range []int{1, 4} {
			for _, mode := range []struct{ name, poll string }{
				{sharegroup.AcquireBatchOptimized, "500"}, {sharegroup.AcquireRecordLimit, "500"}, {sharegroup.AcquireRecordLimit, "125"},
			} {
				b.Run(fmt.Sprintf("partitions=%d/members=%d/mode=%s/poll=%s", parts, par, mode.name, mode.poll), func(b *testing.B) {
					var total time.Duration
					for i := 0; i < b.N; i++ {
						group := kafkatest.ShareGroup(b, addr)
						src := ordersSource(b, addr, topic, group, par,
							sharegroup.OptShareAcquireMode, mode.name, sharegroup.OptMaxPollRecords, mode.poll)
						start := time.Now()
						st := readOrders(b, src, n)
						total += time.Since(start)
						st.Close()
					}
					b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "records/s")
				})
			}
		}
	}
}

// benchN is how many records a benchmark reads: KSHARE_BENCH_N, or 100k.
func benchN(b *testing.B) int {
	s := os.Getenv("KSHARE_BENCH_N")
	if s == "" {
		return 100000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("KSHARE_BENCH_N=%q: want a number of records >= 1", s)
	}
	return n
}

// readOrders opens src and reads n rows, settling each batch as delivered;
// the caller closes the stream.
func readOrders(b *testing.B, src flow.Source, n int) flow.Stream {
	st, err := src.Open(context.Background(), flow.OpenOptions{Alloc: memory.NewGoAllocator()})
	if err != nil {
		b.Fatal(err)
	}
	for got := 0; got < n; {
		bt, err := st.Next(kafkatest.Context(b))
		if err != nil {
			b.Fatalf("after %d rows: %v", got, err)
		}
		got += int(bt.Record.NumRows())
		bt.Record.Release()
		bt.Ack.Done()
	}
	return st
}
