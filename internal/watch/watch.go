// Package watch holds what a test uses to watch work that goes on in other
// goroutines or processes: a buffer they write while the test reads it, and
// a poll of a condition with a deadline.
package watch

import (
	"bytes"
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

// Until checks cond every 10 ms until it holds, and says whether it did
// within d. It is for conditions nothing signals (a log line, what a
// screen shows, a broker's view); the caller fails the test with what it
// saw when Until says no.
func Until(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with a deadline
	}
	return true
}
