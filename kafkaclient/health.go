package kafkaclient

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

	"github.com/kshare/kshare/table"
)

// How a reader or a writer notices that no broker answers. franz-go retries
// a lost connection forever and says nothing to its caller, so Health
// watches clients through franz-go's broker hooks: a read, write or connect
// that fails starts an outage, and any read that succeeds ends it.

// outageNotice is how long every contact must fail before Announce says
// so: a dropped connection that the next dial restores at once is not
// worth a word.
const outageNotice = 2 * time.Second

// OutageNotice is how long every contact must fail before Announce says
// that no broker answers.
func OutageNotice() time.Duration { return outageNotice }

// CloseSilence bounds each step of a client's Close (flushing what it
// owes the brokers, leaving a group) while no broker answers: a living
// broker answers those requests in milliseconds, and Ctrl-C must return
// within a second whatever the broker does (see CloseContext).
const CloseSilence = 750 * time.Millisecond

// Health follows whether any broker answers the clients it hooks into
// (Opt): a share-group stream's members, a plain reader, a sink's
// producers. Whoever owns it calls Announce now and then, from one
// goroutine.
type Health struct {
	seeds string

	mu      sync.Mutex
	lastOK  time.Time // the last read that succeeded
	failing time.Time // the first failure after lastOK; zero when none
	lastErr error
	told    time.Time // since when no broker answers, as announced; zero when not
}

var (
	_ kgo.HookBrokerRead    = (*Health)(nil)
	_ kgo.HookBrokerWrite   = (*Health)(nil)
	_ kgo.HookBrokerConnect = (*Health)(nil)
)

// NewHealth follows the brokers of 'bootstrap.servers' seeds.
func NewHealth(seeds []string) *Health {
	return &Health{seeds: strings.Join(seeds, ","), lastOK: time.Now()}
}

// Opt is the franz-go option that reports a client's contacts with its
// brokers to h.
func (h *Health) Opt() kgo.Opt { return kgo.WithHooks(h) }

// Seeds are the brokers followed, as 'bootstrap.servers' lists them.
func (h *Health) Seeds() string { return h.seeds }

func (h *Health) OnBrokerRead(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	h.note(err)
}

func (h *Health) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, err error) {
	// A write that succeeds proves nothing about the broker (the kernel
	// buffers it); only its failure counts.
	if err != nil {
		h.note(err)
	}
}

func (h *Health) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		h.note(err)
	}
}

func (h *Health) note(err error) {
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

// Announce says on log when no broker has answered for OutageNotice
// ("cannot reach Kafka at host:port since 15:04:05, retrying") and when one
// answers again; it returns since when none answers (the zero time while
// they do) and the last failure. Call it now and then from one goroutine.
func (h *Health) Announce(log *slog.Logger) (since time.Time, err error) {
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

// Outage is since when no broker answers, once Announce said so; the zero
// time otherwise.
func (h *Health) Outage() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.told
}

// Unavailable is the error that ends the work of table when no broker has
// answered since since, for limit, which the table's option key sets; err
// is the last failure.
func (h *Health) Unavailable(name string, since time.Time, limit time.Duration, key string, err error) error {
	return table.Errorf(name, "no answer from Kafka at %s since %s (%s, the table's '%s'); check that the broker is running: %w", h.seeds, since.Format("15:04:05"), limit, key, err)
}

// CloseContext bounds one step of a client's shutdown, which began at
// start: it ends after limit, or once no broker has answered for
// CloseSilence, whichever comes first. Silence counts from start, or from
// the last answer when contacts were failing already. A broker that answers
// keeps the step going; a dead or frozen one cannot hold Close up.
func (h *Health) CloseContext(start time.Time, limit time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	done := make(chan struct{})
	silent := func() bool {
		h.mu.Lock()
		last, failing := h.lastOK, !h.failing.IsZero()
		h.mu.Unlock()
		if !failing && start.After(last) {
			last = start
		}
		return time.Since(last) >= CloseSilence
	}
	if silent() {
		cancel()
	}
	go func() {
		t := time.NewTicker(CloseSilence / 5)
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
