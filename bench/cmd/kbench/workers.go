package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kshare/kshare/bench/internal/measure"
)

// workersResult is one slow-worker configuration.
type workersResult struct {
	members, procs int
	pollRecords    int // 'properties.max.poll.records'; 0 for the default
	rate           float64
	redelivered    int64
	err            error
}

// workersConfig is one process's share of a slow-worker configuration:
// members goroutines, each its own member of group (a stream of parallelism
// 1), each spending delay on every row. Rows finished inside [from, to)
// count; before from the group is still filling up.
type workersConfig struct {
	bootstrap, topic, group string
	members                 int
	delay                   time.Duration
	pollRecords             int
	from, to                time.Time
}

type workersReport struct {
	Rows        int64 `json:"rows"`
	Redelivered int64 `json:"redelivered"`
}

func workersDDL(wc workersConfig) string {
	extra := ""
	if wc.pollRecords > 0 {
		// A slow member should take few records at a time: the broker locks
		// what a member took until it is settled, and caps the locks of one
		// partition (group.share.partition.max.record.locks, 2000 by
		// default), so big polls would leave most members idle.
		extra = fmt.Sprintf(", 'properties.max.poll.records' = '%d', 'scan.batch-size' = '%d'", wc.pollRecords, wc.pollRecords)
	}
	return fmt.Sprintf("CREATE TABLE orders (order_id BIGINT, customer_id STRING, quantity INT, price DECIMAL(10, 2)) "+
		"WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', "+
		"'share-group-id' = '%s', 'format' = 'json', 'source.parallelism' = '1'%s)", wc.bootstrap, wc.topic, wc.group, extra)
}

// slowWorkers runs wc's members until wc.to and reports their rows.
func slowWorkers(ctx context.Context, wc workersConfig) (workersReport, error) {
	var (
		rows, redelivered atomic.Int64
		wg                sync.WaitGroup
		errMu             sync.Mutex
		firstErr          error
	)
	ctx, cancel := context.WithDeadline(ctx, wc.to)
	defer cancel()
	for k := 0; k < wc.members; k++ {
		wg.Go(func() {
			err := slowMember(ctx, wc, &rows, &redelivered)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errMu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				errMu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	return workersReport{Rows: rows.Load(), Redelivered: redelivered.Load()}, firstErr
}

func slowMember(ctx context.Context, wc workersConfig, rows, redelivered *atomic.Int64) error {
	rr, err := openQuery(ctx, workersDDL(wc), "SELECT * FROM orders")
	if err != nil {
		return err
	}
	defer func() {
		redelivered.Add(rr.Redelivered())
		rr.Close()
	}()
	for {
		b, err := rr.Next()
		if err != nil {
			return err
		}
		for i := 0; i < int(b.NumRows()); i++ {
			// The work a row costs: a call to another service, say. It
			// waits rather than computes, which is why members scale past
			// the machine's cores.
			time.Sleep(wc.delay)
			if now := time.Now(); !now.Before(wc.from) && now.Before(wc.to) {
				rows.Add(1)
			}
		}
	}
}

// runWorkers is one process of a multi-process slow-worker configuration;
// the suite starts several and adds up their reports.
func runWorkers(ctx context.Context, args []string) error {
	var wc workersConfig
	var from, to int64
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	fs.StringVar(&wc.bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.StringVar(&wc.topic, "topic", "", "topic to read (required)")
	fs.StringVar(&wc.group, "group", "", "share group (required)")
	fs.IntVar(&wc.members, "members", 1, "members in this process")
	fs.DurationVar(&wc.delay, "delay", 5*time.Millisecond, "work per row")
	fs.IntVar(&wc.pollRecords, "poll-records", 50, "'properties.max.poll.records' (0: the connector's default)")
	fs.Int64Var(&from, "from", 0, "start of the counted window, Unix nanoseconds (default: in 3 s)")
	fs.Int64Var(&to, "to", 0, "end of the counted window, Unix nanoseconds (default: 10 s after --from)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if wc.bootstrap == "" || wc.topic == "" || wc.group == "" || wc.members < 1 {
		return errors.New("--bootstrap, --topic, --group and --members >= 1 are required")
	}
	wc.from = time.Now().Add(3 * time.Second)
	if from > 0 {
		wc.from = time.Unix(0, from)
	}
	wc.to = wc.from.Add(10 * time.Second)
	if to > 0 {
		wc.to = time.Unix(0, to)
	}
	rep, err := slowWorkers(ctx, wc)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// workersSection loads a one-partition topic and measures rows/s of slow
// members for 1, 4 and 16 members, in one process and in several.
func workersSection(ctx context.Context, cfg *suiteConfig) []workersResult {
	topic := fmt.Sprintf("kbench-workers-%s", cfg.runID)
	if _, err := load(ctx, loadConfig{bootstrap: cfg.bootstrap, topic: topic, partitions: 1, n: cfg.workersRecords}); err != nil {
		return []workersResult{{members: 1, procs: 1, err: err}}
	}
	defer deleteTopics(context.Background(), cfg.bootstrap, topic)
	configs := []workersResult{
		{members: 1, procs: 1, pollRecords: 50},
		{members: 4, procs: 1, pollRecords: 50},
		{members: 16, procs: 1, pollRecords: 50},
		{members: 16, procs: 4, pollRecords: 50},
		// The connector's defaults, which the target is judged on.
		{members: 1, procs: 1},
		{members: 4, procs: 1},
		{members: 16, procs: 1},
	}
	measured := time.Duration(cfg.workersSeconds) * time.Second
	// Long enough for every member to open, join and fetch on a busy
	// machine; rows finished before it do not count.
	const warmup = 4 * time.Second
	var out []workersResult
	for i, r := range configs {
		if ctx.Err() != nil {
			break
		}
		wc := workersConfig{
			bootstrap: cfg.bootstrap, topic: topic,
			group:   fmt.Sprintf("kbench-%s-workers-%d-m%d-x%d", cfg.runID, i, r.members, r.procs),
			members: r.members / r.procs, delay: cfg.workersDelay, pollRecords: r.pollRecords,
		}
		if err := freshGroup(ctx, cfg.bootstrap, wc.group); err != nil {
			r.err = err
			out = append(out, r)
			continue
		}
		wc.from = time.Now().Add(warmup)
		wc.to = wc.from.Add(measured)
		var rep workersReport
		var err error
		if r.procs == 1 {
			rep, err = slowWorkers(ctx, wc)
		} else {
			rep, err = workerProcs(ctx, cfg, wc, r.procs)
		}
		r.err = err
		r.rate = float64(rep.Rows) / measured.Seconds()
		r.redelivered = rep.Redelivered
		if err != nil {
			logf("slow workers, %d members in %d processes: %v", r.members, r.procs, err)
		} else {
			logf("slow workers, %d members in %d process%s (max.poll.records %s): %.0f rows/s, %d redelivered",
				r.members, r.procs, map[bool]string{true: "", false: "es"}[r.procs == 1], pollLabel(r.pollRecords), r.rate, r.redelivered)
		}
		out = append(out, r)
		select {
		case <-ctx.Done():
		case <-time.After(cfg.pause):
		}
	}
	return out
}

func pollLabel(n int) string {
	if n == 0 {
		return "default"
	}
	return strconv.Itoa(n)
}

// workerProcs runs wc in procs processes of `kbench workers` at once.
func workerProcs(ctx context.Context, cfg *suiteConfig, wc workersConfig, procs int) (workersReport, error) {
	var (
		total workersReport
		mu    sync.Mutex
		errs  []error
		wg    sync.WaitGroup
	)
	for p := 0; p < procs; p++ {
		wg.Go(func() {
			argv := []string{cfg.self, "workers", "--bootstrap", wc.bootstrap, "--topic", wc.topic, "--group", wc.group,
				"--members", strconv.Itoa(wc.members), "--delay", wc.delay.String(), "--poll-records", strconv.Itoa(wc.pollRecords),
				"--from", strconv.FormatInt(wc.from.UnixNano(), 10), "--to", strconv.FormatInt(wc.to.UnixNano(), 10)}
			res, err := measure.Run(ctx, argv, measure.Options{Capture: true, Timeout: time.Until(wc.to) + time.Minute})
			var rep workersReport
			if err == nil {
				err = json.Unmarshal(bytes.TrimSpace(res.Stdout), &rep)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("worker process %d: %w", p, err))
				return
			}
			total.Rows += rep.Rows
			total.Redelivered += rep.Redelivered
		})
	}
	wg.Wait()
	return total, errors.Join(errs...)
}
