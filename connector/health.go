package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/options"
)

// How a stream notices that no broker answers. franz-go retries a lost
// connection forever and says nothing to the poll loop, so the stream
// watches its members' clients through franz-go's broker hooks: a read,
// write or connect that fails starts an outage, and any read that succeeds
// ends it.
var (
	// outageNotice is how long every contact must fail before the stream
	// says so: a dropped connection that the next dial restores at once is
	// not worth a word.
	outageNotice = 2 * time.Second
	// watchEvery is how often the stream looks at its health.
	watchEvery = 250 * time.Millisecond
	// closeSilence bounds each step of a member's Close (flushing its
	// acknowledgements, leaving the group) while no broker answers: a
	// living broker answers those requests in milliseconds, and Ctrl-C
	// must return within a second whatever the broker does.
	closeSilence = 750 * time.Millisecond
)

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

// health follows whether any broker answers the members of one stream. It
// is a franz-go hook shared by the members' clients.
type health struct {
	seeds string

	mu      sync.Mutex
	lastOK  time.Time // the last read that succeeded
	failing time.Time // the first failure after lastOK; zero when none
	lastErr error
	told    time.Time // since when no broker answers, as announced; zero when not
}

var (
	_ kgo.HookBrokerRead    = (*health)(nil)
	_ kgo.HookBrokerWrite   = (*health)(nil)
	_ kgo.HookBrokerConnect = (*health)(nil)
)

func newHealth(seeds []string) *health {
	return &health{seeds: strings.Join(seeds, ","), lastOK: time.Now()}
}

func (h *health) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	h.note(err)
}

func (h *health) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	// A write that succeeds proves nothing about the broker (the kernel
	// buffers it); only its failure counts.
	if err != nil {
		h.note(err)
	}
}

func (h *health) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.note(err)
	}
}

func (h *health) note(err error) {
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed)) {
		return // our own doing, not the broker's
	}
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.lastOK, h.failing = now, time.Time{}
		return
	}
	if h.failing.IsZero() {
		h.failing = now
	}
	h.lastErr = err
}

// announce says on log when no broker has answered for outageNotice, and
// when one answers again; it returns since when none answers (the zero time
// while they do) and the last failure. Whoever owns the health calls it now
// and then, from one goroutine.
func (h *health) announce(log *slog.Logger) (since time.Time, err error) {
	h.mu.Lock()
	since, err = h.failing, h.lastErr
	var msg string
	switch {
	case since.IsZero() && !h.told.IsZero():
		h.told = time.Time{}
		msg = fmt.Sprintf("Kafka at %s answers again", h.seeds)
	case !since.IsZero() && h.told.IsZero() && time.Since(since) >= outageNotice:
		h.told = since
		msg = fmt.Sprintf("cannot reach Kafka at %s since %s, retrying", h.seeds, since.Format("15:04:05"))
	}
	h.mu.Unlock()
	switch {
	case msg == "":
	case since.IsZero():
		log.Warn(msg)
	default:
		log.Warn(msg, "err", err)
	}
	return since, err
}

// outage is since when no broker answers, once announced; zero otherwise.
func (h *health) outage() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.told
}

// unavailable is the error that ends a reader or a writer whose brokers
// have not answered since since, for limit, the table's option key.
func (h *health) unavailable(table string, since time.Time, limit time.Duration, key string, err error) error {
	return fmt.Errorf("table '%s': no answer from Kafka at %s since %s (%s, the table's '%s'); check that the broker is running: %w",
		options.Cut(table), h.seeds, since.Format("15:04:05"), limit, key, err)
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
		since, err := st.health.announce(st.log)
		if limit := st.src.unavailable; limit > 0 && !since.IsZero() && time.Since(since) >= limit {
			st.send(ctx, item{err: st.health.unavailable(st.src.name, since, limit, OptBrokerUnavailableTimeout, err)})
			return
		}
	}
}

// closeContext bounds one step of a member's shutdown, which began at
// start: it ends after limit, or once no broker has answered for
// closeSilence, whichever comes first. Silence counts from start, or from
// the last answer when contacts were failing already. A broker that answers
// keeps the step going; a dead or frozen one cannot hold Close up.
func (h *health) closeContext(start time.Time, limit time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	done := make(chan struct{})
	silent := func() bool {
		h.mu.Lock()
		last, failing := h.lastOK, !h.failing.IsZero()
		h.mu.Unlock()
		if !failing && start.After(last) {
			last = start
		}
		return time.Since(last) >= closeSilence
	}
	if silent() {
		cancel()
	}
	go func() {
		t := time.NewTicker(closeSilence / 5)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				close(done)
				return
			case <-t.C:
			}
			if silent() {
				cancel()
			}
		}
	}()
	return ctx, func() {
		cancel()
		<-done
	}
}

// BrokerHealth follows whether any broker answers the clients it hooks
// into, for readers outside a share group (the 'kafka' connector's plain
// reader): the same account a stream keeps of its members.
type BrokerHealth struct{ h *health }

// NewBrokerHealth follows the brokers of 'bootstrap.servers' seeds.
func NewBrokerHealth(seeds []string) *BrokerHealth { return &BrokerHealth{newHealth(seeds)} }

// Opt is the franz-go option that reports a client's contacts with its
// brokers to b.
func (b *BrokerHealth) Opt() kgo.Opt { return kgo.WithHooks(b.h) }

// Announce says on log when no broker has answered for OutageNotice
// ("cannot reach Kafka at host:port since 15:04:05, retrying") and when one
// answers again; it returns since when none answers (the zero time while
// they do) and the last failure. Call it now and then from one goroutine.
func (b *BrokerHealth) Announce(log *slog.Logger) (since time.Time, err error) {
	return b.h.announce(log)
}

// Outage is since when no broker answers, once Announce said so; the zero
// time otherwise.
func (b *BrokerHealth) Outage() time.Time { return b.h.outage() }

// Unavailable is the error that ends the work of table when no broker has
// answered since since, for limit, which the table's option key sets; err
// is the last failure.
func (b *BrokerHealth) Unavailable(table string, since time.Time, limit time.Duration, key string, err error) error {
	return b.h.unavailable(table, since, limit, key, err)
}

// Seeds are the brokers followed, as 'bootstrap.servers' lists them.
func (b *BrokerHealth) Seeds() string { return b.h.seeds }

// OutageNotice is how long every contact must fail before a reader says
// that no broker answers: a dropped connection that the next dial restores
// at once is not worth a word.
func OutageNotice() time.Duration { return outageNotice }
