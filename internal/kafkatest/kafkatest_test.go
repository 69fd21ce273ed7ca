package kafkatest_test

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/internal/kafkatest"
)

// TestMain checks for leaked goroutines after every test and its cleanups
// have run: kfake clusters and clients are closed by t.Cleanup, which runs
// after a deferred goleak.VerifyNone would.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestShareGroupSpreadsOnePartition is the harness's proof that share
// groups do what kshare is built on: four consumers of one share group on a
// one-partition topic all receive records, and together they receive all of
// them. A classic consumer group would leave three of the four idle.
func TestShareGroupSpreadsOnePartition(t *testing.T) {
	const (
		consumers = 4
		records   = 2000
		// Small fetches, split by the broker even inside a batch, so
		// that no consumer can take the whole partition in one go.
		maxRecords = 10
	)
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.ShareGroup(t, addr)
	ctx, cancel := context.WithCancel(kafkatest.Context(t))
	defer cancel()

	var (
		mu      sync.Mutex
		seen    = make(map[string]int) // value -> deliveries
		per     [consumers]int         // records each consumer got
		started sync.WaitGroup         // done once per consumer on its first records
		allGot  = make(chan struct{})  // closed when every consumer has records
		done    = make(chan struct{})  // closed when every record was seen
		errs    = make(chan error, consumers)
	)
	started.Add(consumers)
	go func() { started.Wait(); close(allGot) }()

	var wg sync.WaitGroup
	for i := range consumers {
		cl := kafkatest.Client(t, addr,
			kgo.ShareGroup(group),
			kgo.ConsumeTopics(topic),
			kgo.ShareMaxRecords(maxRecords),
			kgo.ShareMaxRecordsStrict(),
		)
		wg.Go(func() {
			first := true
			for {
				fs := cl.PollRecords(ctx, 0)
				if ctx.Err() != nil {
					return
				}
				var ferr error
				fs.EachError(func(topic string, p int32, err error) {
					ferr = errors.Join(ferr, err)
				})
				if ferr != nil {
					errs <- ferr
					return
				}
				rs := fs.Records()
				if len(rs) == 0 {
					continue
				}
				mu.Lock()
				per[i] += len(rs)
				for _, r := range rs {
					seen[string(r.Value)]++
				}
				complete := len(seen) == records
				mu.Unlock()
				if complete {
					select {
					case <-done:
					default:
						close(done)
					}
				}
				if first {
					// Holding this batch (not polling again, so not
					// accepting it) until every consumer has its own
					// keeps the others from finding the partition
					// drained before their assignment arrives: the
					// held records stay locked to us.
					first = false
					started.Done()
					select {
					case <-allGot:
					case <-ctx.Done():
						return
					}
				}
			}
		})
	}

	kafkatest.WaitShareMembers(t, addr, group, consumers)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(records)...)

	select {
	case <-done:
	case err := <-errs:
		t.Errorf("share fetch: %v", err)
	case <-ctx.Done():
		t.Errorf("not every record was delivered before the deadline")
	}
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != records {
		t.Errorf("delivered %d distinct records, want %d", len(seen), records)
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	t.Logf("records per consumer: %v, redeliveries: %d", per, dups)
	for i, n := range per {
		if n == 0 {
			t.Errorf("consumer %d received no records (per consumer: %v)", i, per)
		}
	}
}

func TestTopicNameIsUniqueAndValid(t *testing.T) {
	a, b := kafkatest.TopicName(t), kafkatest.TopicName(t)
	if a == b {
		t.Fatalf("two calls gave the same name %q", a)
	}
	for _, r := range a {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			t.Fatalf("name %q has character %q that topic names should not use", a, r)
		}
	}
}

func TestRequireRealSkipsWithoutBroker(t *testing.T) {
	// Runs with and without a real broker: the variable is cleared for
	// this test only, so CI (which always has a broker) runs it too.
	t.Setenv(kafkatest.EnvBootstrap, "")
	ran := false
	t.Run("inner", func(t *testing.T) {
		kafkatest.RequireReal(t)
		ran = true
	})
	if ran {
		t.Fatalf("RequireReal did not skip without %s", kafkatest.EnvBootstrap)
	}
}

// TestSASLListener proves scripts/kafka.sh's SASL_SSL listener works as the
// connector's security tests will use it: TLS verified against the CA file,
// then SCRAM with the user made at format time, for each mechanism.
func TestSASLListener(t *testing.T) {
	s := kafkatest.RequireSASL(t)
	if len(s.Mechanisms) != 2 {
		t.Errorf("%s=%v, want both SCRAM mechanisms", kafkatest.EnvSASLMechanisms, s.Mechanisms)
	}
	for _, m := range s.Mechanisms {
		t.Run(m, func(t *testing.T) {
			cl := kafkatest.Client(t, s.Bootstrap, s.Opts(t, m)...)
			if err := cl.Ping(kafkatest.Context(t)); err != nil {
				t.Fatalf("ping over SASL_SSL with %s: %v", m, err)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		bad := s
		bad.Password += "x"
		cl := kafkatest.Client(t, s.Bootstrap, bad.Opts(t, "SCRAM-SHA-256")...)
		if err := cl.Ping(kafkatest.Context(t)); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("ping with a wrong password: got %v, want %v", err, kerr.SaslAuthenticationFailed)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		// Without the test CA the broker's certificate must not verify:
		// proof that TLS is really checked, not merely switched on.
		cl := kafkatest.Client(t, s.Bootstrap, kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
		err := cl.Ping(kafkatest.Context(t))
		if _, ok := errors.AsType[*tls.CertificateVerificationError](err); !ok {
			t.Fatalf("ping trusting only the system CAs: got %v, want a certificate verification error", err)
		}
	})
}
