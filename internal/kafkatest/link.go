package kafkatest

import (
	"context"
	"net"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Link stands between Kafka clients and their broker, on loopback, and can
// be cut: cutting closes every connection it opened and refuses new ones,
// as a broker that died does; mending lets dials through again. A test gives
// Opt to the clients it means to cut off, and only those.
type Link struct {
	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

// NewLink returns a Link that lets everything through.
func NewLink() *Link { return &Link{conns: map[net.Conn]struct{}{}} }

// Opt makes a client dial through l.
func (l *Link) Opt() kgo.Opt { return kgo.Dialer(l.dial) }

func (l *Link) dial(ctx context.Context, network, host string) (net.Conn, error) {
	refused := &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	l.mu.Lock()
	cut := l.cut
	l.mu.Unlock()
	if cut {
		return nil, refused
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut {
		c.Close()
		return nil, refused
	}
	l.conns[c] = struct{}{}
	return c, nil
}

// Set cuts the link (true) or mends it (false).
func (l *Link) Set(cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = cut
	if cut {
		for c := range l.conns {
			c.Close()
		}
		clear(l.conns)
	}
}
