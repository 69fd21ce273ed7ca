package sharegroup

import (
	"context"
	"sync"
	"time"

	"github.com/kshare/kshare/kafkaclient"
)

// A stream watches its members' clients through one kafkaclient.Health: it
// says when no broker answers and when one answers again, and ends once an
// outage outlasts 'scan.broker-unavailable-timeout'.

// watchEvery is how often the stream looks at its health.
var watchEvery = 250 * time.Millisecond

// closing counts the franz-go clients whose Close outlived their stream's
// Close: without a broker, franz-go takes seconds to stop its fetch loops.
// It owns those goroutines; WaitClosed waits for them.
var closing sync.WaitGroup

// WaitClosed waits until every Kafka client of a closed stream has stopped,
// or ctx ends. A program that exits need not call it (the broker drops a
// member that went away); a test that checks for leaked goroutines does.
func WaitClosed(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		closing.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch runs for the stream's lifetime: it says when no broker answers and
// when one answers again, and ends the stream with an error once the outage
// outlasts 'scan.broker-unavailable-timeout' (0: never).
func (st *stream) watch(ctx context.Context) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		since, err := st.health.Announce(st.log)
		if limit := st.src.unavailable; limit > 0 && !since.IsZero() && time.Since(since) >= limit {
			st.send(ctx, item{err: st.health.Unavailable(st.src.name, since, limit, kafkaclient.OptBrokerUnavailableTimeout, err)}, nil)
			return
		}
	}
}
