package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/bench/internal/orders"
)

// defaultBatchBytes is Kafka's own producer default (batch.size = 16384):
// how the topics of most users are written. The batch size matters to the
// consumers: a share consumer that asks the broker for at most N records
// (kshare does, see sharegroup/member.go) is still sent whole batches and
// parses every record of them, so big batches cost it more.
const defaultBatchBytes = 16 << 10

// loadConfig is one topic to fill with orders.
type loadConfig struct {
	bootstrap  string
	topic      string
	partitions int
	n          int64
	// batchBytes bounds a producer batch; 0 means defaultBatchBytes.
	batchBytes int
	// customers is how many customer ids the orders draw from; 0 means
	// orders.Customers.
	customers int
	// logAppendTime makes the broker stamp each record when it appends
	// it, so that a record's timestamp is the broker's clock: what the
	// latency measurement starts from.
	logAppendTime bool
}

func runLoad(ctx context.Context, args []string) error {
	var c loadConfig
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.StringVar(&c.bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.StringVar(&c.topic, "topic", "", "topic to create and fill (required)")
	fs.IntVar(&c.partitions, "partitions", 1, "partitions of the topic")
	fs.Int64Var(&c.n, "n", 20000, "orders to produce")
	fs.IntVar(&c.batchBytes, "batch-bytes", defaultBatchBytes, "most bytes of one producer batch")
	fs.IntVar(&c.customers, "customers", orders.Customers, "distinct customer ids (the keys of a GROUP BY customer_id)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.bootstrap == "" || c.topic == "" {
		return errors.New("--bootstrap and --topic are required")
	}
	if c.customers < 1 {
		return fmt.Errorf("--customers must be positive, got %d", c.customers)
	}
	st, err := load(ctx, c)
	if err != nil {
		return err
	}
	logf("loaded %d orders (%.1f MB) into %s in %v (%.0f records/s); per partition: %v",
		c.n, float64(st.bytes)/1e6, c.topic, st.took.Round(time.Millisecond), float64(c.n)/st.took.Seconds(), st.perPartition)
	return nil
}

type loadStats struct {
	// start is when the first record was produced: the records'
	// timestamps (CreateTime) run from start to start+took.
	start        time.Time
	took         time.Duration
	bytes        int64
	perPartition []int64
}

func newClient(bootstrap string, opts ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client for %s: %w", bootstrap, err)
	}
	return cl, nil
}

func newAdmin(cl *kgo.Client) *kadm.Client { return kadm.NewClient(cl) }

// createTopic creates topic and waits until every partition has a leader: a
// broker acknowledges CreateTopics before it serves the topic.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, int32(partitions), 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return fmt.Errorf("metadata of topic %s: %w", topic, err)
		}
		td := md.Topics[topic]
		ready := td.Err == nil && len(td.Partitions) == partitions
		for _, p := range td.Partitions {
			ready = ready && p.Err == nil && p.Leader >= 0
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leader for every partition after 30s (%v)", topic, td.Err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// load creates c.topic and produces orders 0..n-1 into it as fast as the
// broker takes them.
func load(ctx context.Context, c loadConfig) (loadStats, error) {
	var st loadStats
	batchBytes := c.batchBytes
	if batchBytes <= 0 {
		batchBytes = defaultBatchBytes
	}
	cl, err := newClient(c.bootstrap,
		// Uncompressed: every contestant then reads the same bytes and no
		// one's numbers include decompression. franz-go's default would be
		// snappy.
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(int32(batchBytes)),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200_000),
		// Keyless records move to another partition after every 256 KiB,
		// so partitions fill evenly with big batches.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(256<<10, false, false, nil)),
		// A topic just created may not be in the broker's metadata for
		// every partition at once; the default 5 s before asking again
		// would be most of a small load's time.
		kgo.MetadataMinAge(100*time.Millisecond),
	)
	if err != nil {
		return st, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var configs map[string]*string
	if c.logAppendTime {
		v := "LogAppendTime"
		configs = map[string]*string{"message.timestamp.type": &v}
	}
	if err := createTopic(ctx, adm, c.topic, c.partitions, configs); err != nil {
		return st, err
	}

	var (
		failed   atomic.Pointer[error]
		perPart  = make([]atomic.Int64, c.partitions)
		onceFail sync.Once
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			onceFail.Do(func() { failed.Store(&err) })
			return
		}
		perPart[r.Partition].Add(1)
	}
	customers := c.customers
	if customers <= 0 {
		customers = orders.Customers
	}
	start := time.Now()
	st.start = start
	for i := int64(0); i < c.n; i++ {
		if p := failed.Load(); p != nil {
			break
		}
		v := orders.AtKeys(i, customers).Append(make([]byte, 0, 80))
		st.bytes += int64(len(v))
		cl.Produce(ctx, &kgo.Record{Topic: c.topic, Value: v}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return st, fmt.Errorf("flushing orders to %s: %w", c.topic, err)
	}
	st.took = time.Since(start)
	if p := failed.Load(); p != nil {
		return st, fmt.Errorf("producing orders to %s: %w", c.topic, *p)
	}
	var total int64
	for i := range perPart {
		st.perPartition = append(st.perPartition, perPart[i].Load())
		total += perPart[i].Load()
	}
	if total != c.n {
		return st, fmt.Errorf("topic %s: the broker acknowledged %d of %d orders", c.topic, total, c.n)
	}
	return st, nil
}

// deleteTopics removes the benchmark's topics so that a long run does not
// keep gigabytes on disk; the broker is thrown away at the end anyway.
func deleteTopics(ctx context.Context, bootstrap string, topics ...string) error {
	cl, err := newClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).DeleteTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("deleting topics %v: %w", topics, err)
	}
	for _, r := range resp {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("deleting topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
