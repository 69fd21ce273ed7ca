package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
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
// franz-go's defaults (500 records per fetch, prefetching on). It decodes
// nothing. It stops when the clients together have seen n records.
func runFranz(ctx context.Context, args []string) error {
	var (
		bootstrap, topic, group string
		n                       int64
		consumers               int
		policy                  franzPolicy
	)
	fs := flag.NewFlagSet("franz", flag.ContinueOnError)
	fs.StringVar(&bootstrap, "bootstrap", bootstrapDefault(), "Kafka `host:port`")
	fs.StringVar(&topic, "topic", "", "topic to read (required)")
	fs.StringVar(&group, "group", "", "share group; set share.auto.offset.reset=earliest on it first (required)")
	fs.Int64Var(&n, "n", 0, "records to read before stopping (required)")
	fs.IntVar(&consumers, "consumers", 1, "share consumers (clients) in the group")
	fs.BoolVar(&policy.strict, "strict", false, "kgo.ShareMaxRecordsStrict, as the connector uses")
	fs.IntVar(&policy.prefetch, "prefetch", -1, "kgo.MaxConcurrentFetches (-1: franz-go's default; the connector uses 0)")
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

// franzPolicy is the fetch policy of the loop: franz-go's defaults unless
// asked to do as the connector does, which tells the policy's cost apart
// from the cost of kshare's code.
type franzPolicy struct {
	strict   bool
	prefetch int
}

func (p franzPolicy) opts() []kgo.Opt {
	var o []kgo.Opt
	if p.strict {
		o = append(o, kgo.ShareMaxRecordsStrict())
	}
	if p.prefetch >= 0 {
		o = append(o, kgo.MaxConcurrentFetches(p.prefetch))
	}
	return o
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
		wg.Add(1)
		go func() {
			defer wg.Done()
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
		}()
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
