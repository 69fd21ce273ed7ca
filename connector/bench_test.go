package connector_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/connector"
	_ "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/table"
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

func ordersSource(b *testing.B, addr, topic, group string, parallelism int) table.Source {
	def := table.NewDefinition("orders", []table.Column{
		{Name: "order_id", Type: table.BigIntType()},
		{Name: "customer_id", Type: table.StringType()},
		{Name: "quantity", Type: table.IntType()},
		{Name: "price", Type: table.DecimalType(10, 2)},
	}, map[string]string{
		"connector":          connector.Name,
		"format":             "json",
		"bootstrap.servers":  addr,
		"topic":              topic,
		"share-group-id":     group,
		"source.parallelism": strconv.Itoa(parallelism),
	})
	t, err := table.NewTable(def)
	if err != nil {
		b.Fatal(err)
	}
	return t.Source
}

// BenchmarkSourceOrders reads N orders JSON records through the source
// (decode into Arrow, at-least-once settling of every batch) and reports
// records/s, for 1 and 4 members, on 1 and 4 partitions, without prefetch
// (the connector's policy) and with one fetch of prefetch.
//
//	KSHARE_BENCH_N=200000 go test -run '^$' -bench BenchmarkSourceOrders ./connector
func BenchmarkSourceOrders(b *testing.B) {
	n := 100000
	if s := os.Getenv("KSHARE_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	addr := kafkatest.Bootstrap(b)
	for _, parts := range []int32{1, 4} {
		topic := benchTopic(b, addr, parts, n)
		for _, par := range []int{1, 4} {
			for _, prefetch := range []int{0, 1} {
				b.Run(fmt.Sprintf("partitions=%d/members=%d/prefetch=%d", parts, par, prefetch), func(b *testing.B) {
					defer connector.SetPolicy(prefetch, true)()
					var total time.Duration
					for i := 0; i < b.N; i++ {
						group := kafkatest.ShareGroup(b, addr)
						src := ordersSource(b, addr, topic, group, par)
						start := time.Now()
						st, err := src.Open(context.Background(), table.OpenOptions{Alloc: memory.NewGoAllocator()})
						if err != nil {
							b.Fatal(err)
						}
						got := 0
						for got < n {
							bt, err := st.Next(kafkatest.Context(b))
							if err != nil {
								b.Fatalf("after %d rows: %v", got, err)
							}
							got += int(bt.Record.NumRows())
							bt.Record.Release()
							bt.Ack.Done()
						}
						total += time.Since(start)
						st.Close()
					}
					b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "records/s")
				})
			}
		}
	}
}
