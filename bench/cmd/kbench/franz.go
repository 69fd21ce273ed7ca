package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franzReport is what the plain loop prints when it is done, one JSON line.
type franzReport struct {
	Records int64 `json:"records"`
	// Seconds runs from the first poll that returned records to the poll
	// that brought the Nth: the loop's own view, without process start-up
	// and group join.
	Seconds float64 `json:"seconds"`
}

// runFranz is the baseline a Go user would write by hand against franz-go:
// K clients in one share group, each polling, counting and accepting, with
// franz-go's defaults (50 MiB fetch window, 500 records per fetch,
// batch_optimized, prefetching on) unless the policy flags say otherwise.
// It decodes nothing. It stops when the clients together have seen n
// records.
func runFranz(ctx context.Context, args []string) error {
	var (
		bootstrap, topic, group string
		n                       int64
		consumers               int
		policy                  franzPolicy
	)
	fs := flag.NewFlagSet("franz", flag.ContinueOnError)
	readFlags(fs, &bootstrap, &topic, &group, &n, "records")
	fs.IntVar(&consumers, "consumers", 1, "share consumers (clients) in the group")
	policy.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if bootstrap == "" || topic == "" || group == "" || n <= 0 || consumers < 1 {
		return errors.New("--bootstrap, --topic, --group, --n > 0 and --consumers >= 1 are required")
	}
	rep, err := franzLoop(ctx, bootstrap, topic, group, n, consumers, policy.opts()...)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// franzPolicy is the fetch policy of the loop. Its zero value, with
// prefetch -1, is franz-go's defaults: what a Go user who writes the loop by
// hand gets. The other values are the settings kshare's connector chose, to
// tell what the policy brings apart from what kshare's own code costs.
type franzPolicy struct {
	fetchMaxBytes int32 // kgo.FetchMaxBytes; 0: franz-go's default, 50 MiB
	maxRecords    int32 // kgo.ShareMaxRecords; 0: franz-go's default, 500
	strict        bool  // kgo.ShareMaxRecordsStrict: the record_limit acquisition mode
	prefetch      int   // kgo.MaxConcurrentFetches; -1: franz-go's default
}

// franzDefaults is the policy of a loop that sets nothing.
var franzDefaults = franzPolicy{prefetch: -1}

// register declares the policy's flags of `kbench franz`; args writes them
// back, so that the suite's contestants and the loop agree on their names.
func (p *franzPolicy) register(fs *flag.FlagSet) {
	*p = franzDefaults
	fs.Func("fetch-max-bytes", "kgo.FetchMaxBytes: most bytes one ShareFetch may return (default franz-go's, 50 MiB)", positiveInt32(&p.fetchMaxBytes))
	fs.Func("max-records", "kgo.ShareMaxRecords: records one ShareFetch asks for (default franz-go's, 500)", positiveInt32(&p.maxRecords))
	fs.BoolVar(&p.strict, "strict", false, "kgo.ShareMaxRecordsStrict: the record_limit acquisition mode (default batch_optimized)")
	fs.IntVar(&p.prefetch, "prefetch", -1, "kgo.MaxConcurrentFetches (-1: franz-go's default; the connector uses 0)")
}

// positiveInt32 parses a flag that franz-go takes as a positive int32.
func positiveInt32(dst *int32) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return fmt.Errorf("want a number between 1 and %d, got %q", int32(1<<31-1), v)
		}
		*dst = int32(n)
		return nil
	}
}

func (p franzPolicy) args() []string {
	var a []string
	if p.fetchMaxBytes > 0 {
		a = append(a, "--fetch-max-bytes", strconv.Itoa(int(p.fetchMaxBytes)))
	}
	if p.maxRecords > 0 {
		a = append(a, "--max-records", strconv.Itoa(int(p.maxRecords)))
	}
	if p.strict {
		a = append(a, "--strict")
	}
	if p.prefetch >= 0 {
		a = append(a, "--prefetch", strconv.Itoa(p.prefetch))
	}
	return a
}

func (p franzPolicy) opts() []kgo.Opt {
	var o []kgo.Opt
	if p.fetchMaxBytes > 0 {
		o = append(o, kgo.FetchMaxBytes(p.fetchMaxBytes))
	}
	if p.maxRecords > 0 {
		o = append(o, kgo.ShareMaxRecords(p.maxRecords))
	}
	if p.strict {
		o = append(o, kgo.ShareMaxRecordsStrict())
	}
	if p.prefetch >= 0 {
		o = append(o, kgo.MaxConcurrentFetches(p.prefetch))
	}
	return o
}

// String is the policy for a contestant's name: "1 MiB window,
// batch_optimized, no prefetch".
func (p franzPolicy) String() string {
	if p == franzDefaults {
		return "franz-go defaults"
	}
	var parts []string
	if p.fetchMaxBytes > 0 {
		parts = append(parts, byteSize(int64(p.fetchMaxBytes))+" window")
	}
	if p.maxRecords > 0 {
		parts = append(parts, fmt.Sprintf("%d records per fetch", p.maxRecords))
	}
	if p.strict {
		parts = append(parts, "record_limit")
	} else {
		parts = append(parts, "batch_optimized")
	}
	if p.prefetch == 0 {
		parts = append(parts, "no prefetch")
	} else if p.prefetch > 0 {
		parts = append(parts, fmt.Sprintf("%d fetches ahead", p.prefetch))
	}
	return strings.Join(parts, ", ")
}

// byteSize writes n in KiB or MiB when it is a whole number of them.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// franzLoop reads n records of topic with consumers clients in group; opts
// are added to each client's.
func franzLoop(ctx context.Context, bootstrap, topic, group string, n int64, consumers int, opts ...kgo.Opt) (franzReport, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		total     atomic.Int64
		firstOnce sync.Once
		first     time.Time
		last      atomic.Int64 // unix ns of the poll that reached n
		wg        sync.WaitGroup
		errMu     sync.Mutex
		firstErr  error
	)
	for k := 0; k < consumers; k++ {
		cl, err := newClient(bootstrap, append([]kgo.Opt{kgo.ShareGroup(group), kgo.ConsumeTopics(topic)}, opts...)...)
		if err != nil {
			cancel()
			wg.Wait()
			return franzReport{}, err
		}
		wg.Go(func() {
			defer cl.Close() // sends pending acks, releases the rest, leaves
			for ctx.Err() == nil {
				fetches := cl.PollFetches(ctx)
				fetches.EachError(func(t string, p int32, err error) {
					if errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
						return
					}
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("fetching %s[%d]: %w", t, p, err)
					}
					errMu.Unlock()
					cancel()
				})
				got := int64(fetches.NumRecords())
				if got == 0 {
					continue
				}
				firstOnce.Do(func() { first = time.Now() })
				cl.MarkAcks(kgo.AckAccept)
				if total.Add(got) >= n {
					last.CompareAndSwap(0, time.Now().UnixNano())
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return franzReport{}, firstErr
	}
	if total.Load() < n {
		return franzReport{}, fmt.Errorf("stopped after %d of %d records: %w", total.Load(), n, context.Cause(ctx))
	}
	return franzReport{Records: total.Load(), Seconds: time.Unix(0, last.Load()).Sub(first).Seconds()}, nil
}
