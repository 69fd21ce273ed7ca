package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Buffer is a bytes.Buffer that writers (a process's output, a logger, a
// status line) and the test may use at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Wait calls check until it returns nil, and then returns nil. It is the
// one wait for conditions nothing signals (a broker's view, a log line,
// what a screen shows) in kshare's tests: it checks at once, then after 5
// ms, and at twice the interval each time up to 50 ms, so that a condition
// soon true is seen soon and one slow to come does not flood a broker.
// When ctx ends first, its error says what check said last: a check that
// failed only because ctx ended says nothing new, and the one before it is
// kept. Tests with a testing.TB call kafkatest.Eventually, which fails
// the test with that error.
func Wait(ctx context.Context, check func() error) error {
	const most = 50 * time.Millisecond
	wait := 5 * time.Millisecond
	t := time.NewTimer(wait)
	defer t.Stop()
	var last error
	for {
		err := check()
		if err == nil {
			return nil
		}
		if ctx.Err() == nil || last == nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %v)", context.Cause(ctx), last)
		case <-t.C:
		}
		wait = min(2*wait, most)
		t.Reset(wait)
	}
}

// errNotYet is Until's check failing.
var errNotYet = errors.New("not yet")

// Until is Wait for a condition without a reason, bounded by d, and says
// whether it held in time; the caller fails the test with what it saw.
func Until(d time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return Wait(ctx, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}
