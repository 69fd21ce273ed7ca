package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/bench/internal/orders"
)

// latencyResult is one consumer configuration's latency figures.
type latencyResult struct {
	name          string
	kshare        bool
	par           int
	count         int64
	p50, p99, max time.Duration
	err           error
}

// latencyConfig is one latency measurement: a producer writes rate records
// per second for warmup+measure; a consumer that joined before it reads
// them; the latencies of records the broker stamped inside the measured
// window count.
type latencyConfig struct {
	bootstrap  string
	partitions int
	rate       int
	warmup     time.Duration
	measure    time.Duration
	par        int
	kshare     bool // kshare's Go side, else the plain franz-go loop
	tag        string
}

func latencySection(ctx context.Context, cfg *suiteConfig) []latencyResult {
	var out []latencyResult
	// The first share group a freshly started broker serves waits on the
	// broker's share-state start-up: on a fresh broker the first run of
	// kshare at parallelism 1 gave p99 1593 ms and the next two 58 and
	// 43 ms (the "latency tail"). A short unreported run takes that
	// wait instead of whichever configuration comes first.
	warm := latencyConfig{bootstrap: cfg.bootstrap, partitions: 1, rate: 200,
		warmup: time.Second, measure: time.Second, par: 1, tag: cfg.runID + "-warm"}
	if r := measureLatency(ctx, warm); r.err != nil {
		logf("latency warm-up: %v", r.err)
	}
	for _, kshare := range []bool{true, false} {
		for _, par := range []int{1, 4} {
			lc := latencyConfig{
				bootstrap: cfg.bootstrap, partitions: 4, rate: cfg.latencyRate,
				warmup: 3 * time.Second, measure: time.Duration(cfg.latencySeconds) * time.Second,
				par: par, kshare: kshare, tag: cfg.runID,
			}
			if ctx.Err() != nil {
				return out
			}
			r := measureLatency(ctx, lc)
			if r.err != nil {
				logf("latency %s, parallelism %d: %v", r.name, par, r.err)
			} else {
				logf("latency %s, parallelism %d: %d records, p50 %.1f ms, p99 %.1f ms, max %.1f ms", r.name, par, r.count, ms(r.p50), ms(r.p99), ms(r.max))
			}
			out = append(out, r)
		}
	}
	return out
}

func runLatency(ctx context.Context, args []string) error {
	lc := latencyConfig{tag: time.Now().Format("150405")}
	var plain bool
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	fs.StringVar(&lc.bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.IntVar(&lc.partitions, "partitions", 4, "partitions of the latency topic")
	fs.IntVar(&lc.rate, "rate", 2000, "records per second")
	fs.DurationVar(&lc.warmup, "warmup", 3*time.Second, "producing before the measured window")
	fs.DurationVar(&lc.measure, "measure", 10*time.Second, "measured window")
	fs.IntVar(&lc.par, "parallelism", 1, "share consumers")
	fs.BoolVar(&plain, "franz", false, "measure the plain franz-go loop instead of kshare")
	if err := fs.Parse(args); err != nil {
		return err
	}
	lc.kshare = !plain
	r := measureLatency(ctx, lc)
	if r.err != nil {
		return r.err
	}
	fmt.Printf("%s, parallelism %d: %d records, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", r.name, r.par, r.count, ms(r.p50), ms(r.p99), ms(r.max))
	return nil
}

// latencyDDL is the latency table: the orders plus the broker's timestamp.
func latencyDDL(bootstrap, topic, group string, par int) string {
	return fmt.Sprintf("CREATE TABLE orders (order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2), "+
		"ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp') WITH ('connector' = 'kafka-sharegroup', "+
		"'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'format' = 'json', "+
		"'source.parallelism' = '%d')", bootstrap, topic, group, par)
}

func measureLatency(ctx context.Context, lc latencyConfig) latencyResult {
	res := latencyResult{name: "kshare Go API, SELECT *, json", kshare: lc.kshare, par: lc.par}
	if !lc.kshare {
		res.name = "plain franz-go loop"
	}
	kind := "franz"
	if lc.kshare {
		kind = "kshare"
	}
	topic := fmt.Sprintf("kbench-latency-%s-%s-p%d", lc.tag, kind, lc.par)
	group := "kbench-" + topic
	fail := func(err error) latencyResult { res.err = err; return res }

	cl, err := newClient(lc.bootstrap, kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return fail(err)
	}
	defer cl.Close()
	adm := newAdmin(cl)
	v := "LogAppendTime"
	if err := createTopic(ctx, adm, topic, lc.partitions, map[string]*string{"message.timestamp.type": &v}); err != nil {
		return fail(err)
	}
	defer deleteTopics(context.Background(), lc.bootstrap, topic)
	if err := freshGroup(ctx, lc.bootstrap, group); err != nil {
		return fail(err)
	}

	// The window is fixed before the consumer starts: records the broker
	// stamps in [from, to) count; the warm-up covers joining the group
	// and the first fetches.
	var (
		mu       sync.Mutex
		lats     []time.Duration
		received atomic.Int64
		produced atomic.Int64
		prodDone = make(chan struct{})
		from     = time.Now().Add(lc.warmup)
		to       = from.Add(lc.measure)
	)
	record := func(ts time.Time, now time.Time) {
		received.Add(1)
		if ts.Before(from) || !ts.Before(to) {
			return
		}
		mu.Lock()
		lats = append(lats, now.Sub(ts))
		mu.Unlock()
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumerErr := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		if lc.kshare {
			consumerErr <- consumeKshareLatency(cctx, lc, topic, group, ready, record)
		} else {
			consumerErr <- consumeFranzLatency(cctx, lc, topic, group, ready, record)
		}
	}()
	select {
	case <-ready:
	case err := <-consumerErr:
		return fail(fmt.Errorf("latency consumer: %w", err))
	}

	go func() {
		defer close(prodDone)
		produceSteady(cctx, cl, topic, lc.rate, to, &produced)
	}()
	select {
	case <-prodDone:
	case err := <-consumerErr:
		return fail(fmt.Errorf("latency consumer stopped early: %w", err))
	}
	if err := cl.Flush(ctx); err != nil {
		return fail(fmt.Errorf("flushing the latency producer: %w", err))
	}
	// Wait until every record arrived (or a generous deadline).
	deadline := time.Now().Add(30 * time.Second)
	for received.Load() < produced.Load() && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-consumerErr; err != nil && !errors.Is(err, context.Canceled) {
		return fail(err)
	}
	if got, want := received.Load(), produced.Load(); got < want {
		return fail(fmt.Errorf("received %d of %d records", got, want))
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lats)
	res.count = int64(len(lats))
	if res.count == 0 {
		return fail(errors.New("no record in the measured window"))
	}
	res.p50, res.p99, res.max = percentile(lats, 50), percentile(lats, 99), lats[len(lats)-1]
	return res
}

// produceSteady writes rate records per second until the time until, each
// at its own moment (not in bursts), and counts what the broker
// acknowledged.
func produceSteady(ctx context.Context, cl *kgo.Client, topic string, rate int, until time.Time, acked *atomic.Int64) {
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	total := int64(until.Sub(start) / interval)
	for i := int64(0); i < total && ctx.Err() == nil; i++ {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		v := orders.At(i).Append(make([]byte, 0, 80))
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: v}, func(_ *kgo.Record, err error) {
			if err == nil {
				acked.Add(1)
			}
		})
	}
}

// consumeKshareLatency reads the table through kshare and records, for each
// row, the time between its broker timestamp and the moment its batch was
// handed over.
func consumeKshareLatency(ctx context.Context, lc latencyConfig, topic, group string, ready chan<- struct{}, record func(ts, now time.Time)) error {
	rr, err := openQuery(ctx, latencyDDL(lc.bootstrap, topic, group, lc.par), "SELECT * FROM orders")
	if err != nil {
		return err
	}
	defer rr.Close()
	// The members have started; joining completes during the warm-up.
	close(ready)
	for {
		b, err := rr.Next()
		if err != nil {
			return err
		}
		now := time.Now()
		ts, err := timestamps(b.Column(int(b.NumCols()) - 1))
		if err != nil {
			return err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			record(ts(i), now)
		}
	}
}

// consumeFranzLatency is the same measurement for the plain franz-go loop,
// as a reference: what the client alone costs.
func consumeFranzLatency(ctx context.Context, lc latencyConfig, topic, group string, ready chan<- struct{}, record func(ts, now time.Time)) error {
	var wg sync.WaitGroup
	errs := make(chan error, lc.par)
	for k := 0; k < lc.par; k++ {
		cl, err := newClient(lc.bootstrap, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer cl.Close()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				now := time.Now()
				fs.EachRecord(func(r *kgo.Record) { record(r.Timestamp, now) })
				cl.MarkAcks(kgo.AckAccept)
				var ferr error
				fs.EachError(func(t string, p int32, err error) {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed) && ferr == nil {
						ferr = fmt.Errorf("fetching %s[%d]: %w", t, p, err)
					}
				})
				if ferr != nil {
					errs <- ferr
					return
				}
			}
		})
	}
	close(ready)
	wg.Wait()
	close(errs)
	return <-errs
}
