package kshare_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
)

// A reader far slower than the record lock keeps every record it was handed
// until it settles it, and a second reader of the same share group never
// gets one of them: the records are small, so one fetch holds many polls'
// worth, and the slow reader holds the last of them for many lock durations
// while its first rows are still on their way. Each reader's accepted count
// is what it delivered, and the broker has every record settled at the end.
func TestSlowReaderKeepsItsRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		with string // extra WITH options of the slow reader's table
	}{
		{"default", ""},
		{"batch_optimized", `, 'properties.share.acquire.mode' = 'batch_optimized'`},
		{"record_limit", `, 'properties.share.acquire.mode' = 'record_limit'`},
		{"four-members", `, 'source.parallelism' = '4'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slowReaderScenario(t, tc.with)
		})
	}
}

func slowReaderScenario(t *testing.T, with string) {
	// The broker's lock floor is 1 s. 4 s, not less: a lock's deadline is
	// known to the client only from when the fetch's answer was decoded,
	// and under the race detector on a loaded two-core machine (CI runs the
	// packages side by side) that can be a good part of a second after the
	// broker started the lock. The keeper's margins are fractions of the
	// lock: a 2 s lock left too little of them for that skew (seen in CI
	// with four members), while a production lock (30 s by default) leaves
	// seconds.
	const (
		lock   = 4 * time.Second
		n      = 3000
		perRow = 8 * time.Millisecond // 24 s for every row: six lock durations
	)
	addr, topic, group := kafkatest.LockedGroup(t, lock)
	vals := make([][]byte, n)
	for i := range vals {
		// About 150 bytes, as a queue of small jobs has.
		vals[i] = fmt.Appendf(nil, `{"id": %d, "customer_id": "cust-%05d", "note": "%0100d"}`, i, i%97, i)
	}
	kafkatest.Produce(t, addr, topic, vals...)
	ddl := func(extra string) string {
		return `CREATE TABLE t (id BIGINT, customer_id STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		  'bootstrap.servers' = '` + addr + `', 'topic' = '` + topic + `', 'share-group-id' = '` + group + `'` + extra + `)`
	}
	ctx := kafkatest.Context(t)

	var (
		mu    sync.Mutex
		got   = [2]map[int64]bool{{}, {}}
		stats [2]flow.Stats
		errs  [2]error
	)
	union := func() int {
		mu.Lock()
		defer mu.Unlock()
		u := len(got[0])
		for id := range got[1] {
			if !got[0][id] {
				u++
			}
		}
		return u
	}
	// The slow reader stops once every id was delivered, by either reader:
	// it may be waiting in Next for records it will never get.
	slowCtx, stopSlow := context.WithCancel(ctx)
	defer stopSlow()
	// read runs reader r's query until ctx ends, sleeping perRow after each
	// row (0: no sleep); its records are accepted as it moves on.
	read := func(r int, ctx context.Context, extra string, perRow time.Duration) {
		eng := kshare.New()
		if _, err := eng.Exec(ctx, ddl(extra)); err != nil {
			errs[r] = err
			return
		}
		rows, err := eng.Query(ctx, "SELECT id FROM t")
		if err != nil {
			errs[r] = err
			return
		}
		for rows.Next() {
			ids := rows.RecordBatch().Column(0).(*array.Int64)
			for i := range ids.Len() {
				mu.Lock()
				got[r][ids.Value(i)] = true
				mu.Unlock()
				if perRow > 0 {
					time.Sleep(perRow) // the slow work itself
				}
			}
			if union() == n {
				stopSlow()
			}
		}
		if err := rows.Close(); err != nil && ctx.Err() == nil {
			errs[r] = err
		}
		stats[r] = rows.Stats().Source
	}

	slowDone := make(chan struct{})
	fastCtx, stopFast := context.WithCancel(ctx)
	defer stopFast()
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(slowDone)
		read(0, slowCtx, with, perRow)
	})
	// The second reader starts once the slow one has its first records,
	// and reads until two lock durations after the slow one is done: any
	// lock that ran out meanwhile hands it records.
	kafkatest.Eventually(t, "the slow reader's first rows", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(got[0]) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	wg.Go(func() {
		read(1, fastCtx, "", 0)
	})
	select {
	case <-slowDone:
	case <-ctx.Done():
		t.Fatalf("the readers did not deliver all %d ids: %d", n, union())
	}
	time.Sleep(2 * lock) // time for a lost lock to show, not a wait for a condition
	stopFast()
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("reader %d: %v", r, err)
		}
	}

	both := 0
	for id := range got[0] {
		if got[1][id] {
			both++
		}
	}
	if both > 0 {
		t.Errorf("%d ids were delivered to both readers (slow %d, second %d)", both, len(got[0]), len(got[1]))
	}
	if u := union(); u != n {
		t.Errorf("%d distinct ids delivered, want %d", u, n)
	}
	// Records that the client fetched ahead and handed over with their
	// locks nearly run out are released undelivered (ExpiredOnArrival):
	// not delivered twice, and not accepted.
	for r, s := range stats {
		if s.Accepted != int64(len(got[r])) || s.LockExpired != 0 || s.AckRefused != 0 || s.AckUnconfirmed != 0 {
			t.Errorf("reader %d delivered %d ids; its stats say %+v", r, len(got[r]), s)
		}
	}
	if stats[0].Renewed == 0 {
		t.Errorf("the slow reader renewed no lock: %+v", stats[0])
	}
	// What the broker says: every record settled, none left to deliver.
	kafkatest.WaitLag(t, addr, group, topic, 0)
	t.Logf("slow reader %d ids, second %d; %d lock renewals; %d records released on arrival", len(got[0]), len(got[1]), stats[0].Renewed, stats[0].ExpiredOnArrival)
}
