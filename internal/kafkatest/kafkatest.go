package kafkatest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare/internal/kafkaadmin"
	"github.com/kshare/kshare/internal/watch"
)

// Environment variables that scripts/test.sh (via scripts/kafka.sh) exports
// for a real broker.
const (
	// EnvBootstrap is the PLAINTEXT host:port of the real broker. When it is
	// unset, tests run against kfake.
	EnvBootstrap = "KSHARE_KAFKA_BOOTSTRAP"
	// EnvSASLBootstrap is the broker's SASL_SSL host:port.
	EnvSASLBootstrap = "KSHARE_KAFKA_SASL_BOOTSTRAP"
	// EnvSASLUser and EnvSASLPassword are a SCRAM user created at format
	// time, for both SCRAM-SHA-256 and SCRAM-SHA-512.
	EnvSASLUser     = "KSHARE_KAFKA_SASL_USER"
	EnvSASLPassword = "KSHARE_KAFKA_SASL_PASSWORD"
	// EnvSASLMechanisms lists the mechanisms the SASL_SSL listener enables,
	// comma separated.
	EnvSASLMechanisms = "KSHARE_KAFKA_SASL_MECHANISMS"
	// EnvCAFile is the PEM file of the CA that signed the broker's
	// certificate (for 127.0.0.1 and localhost).
	EnvCAFile = "KSHARE_KAFKA_CA_FILE"
)

// Timeout bounds each wait of this package. It is generous because the race
// detector and a busy two-core machine slow everything down; a healthy wait
// ends in well under a second.
const Timeout = 60 * time.Second

// Test timings shared by kfake and scripts/kafka.sh's broker, so that a test
// behaves the same on both.
const (
	LockDuration      = 10 * time.Second
	SessionTimeout    = 6 * time.Second
	HeartbeatInterval = 500 * time.Millisecond
)

// Idle is the idle timeout of a test's query or job that must end once
// its share group has no more records. A query's first wait counts from
// its start, so it covers joining the group: seconds on the real broker,
// a heartbeat interval or two on kfake, and more on a busy machine under
// the race detector (with 1 s there, a query of CI's kfake run ended
// before its first record came).
func Idle() time.Duration {
	switch {
	case Real():
		return 8 * time.Second
	case raceDetector:
		return 3 * time.Second
	}
	return 2 * time.Second
}

// Real reports whether tests run against a real broker (EnvBootstrap set).
func Real() bool { return os.Getenv(EnvBootstrap) != "" }

// RequireReal skips the test unless a real broker is configured.
func RequireReal(t testing.TB) {
	t.Helper()
	if !Real() {
		t.Skipf("needs a real Kafka broker: set %s (scripts/test.sh does)", EnvBootstrap)
	}
}

// Bootstrap returns the address of a cluster for this test: the real broker
// when EnvBootstrap is set, else a new kfake cluster (see Fake).
func Bootstrap(t testing.TB) string {
	t.Helper()
	if addr := os.Getenv(EnvBootstrap); addr != "" {
		return addr
	}
	return Fake(t).ListenAddrs()[0]
}

// FakeOpts are the options Fake starts kfake with: one broker (so a
// bootstrap address names the whole cluster) and the test timings above.
// The lock sweep runs every 100 ms rather than kfake's 5 s so that an
// expired lock is noticed about when it expires, as on a real broker.
func FakeOpts() []kfake.Opt {
	return []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.BrokerConfigs(map[string]string{
			"group.share.record.lock.duration.ms": strconv.Itoa(int(LockDuration.Milliseconds())),
			"share.record.lock.sweep.interval.ms": "100",
			"group.share.session.timeout.ms":      strconv.Itoa(int(SessionTimeout.Milliseconds())),
			"group.share.heartbeat.interval.ms":   strconv.Itoa(int(HeartbeatInterval.Milliseconds())),
		}),
	}
}

// Fake starts a kfake cluster with FakeOpts followed by opts (later options
// win), listening on loopback, and closes it when the test ends. Use it
// directly for what only kfake can do, such as ACLs or fault injection.
func Fake(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append(FakeOpts(), opts...)...)
	if err != nil {
		t.Fatalf("starting kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// SASL describes the real broker's SASL_SSL listener.
type SASL struct {
	Bootstrap  string
	User       string
	Password   string
	Mechanisms []string
	CAFile     string
}

// RequireSASL returns the real broker's SASL_SSL settings, or skips the test
// when they are not all set.
func RequireSASL(t testing.TB) SASL {
	t.Helper()
	s := SASL{
		Bootstrap: os.Getenv(EnvSASLBootstrap),
		User:      os.Getenv(EnvSASLUser),
		Password:  os.Getenv(EnvSASLPassword),
		CAFile:    os.Getenv(EnvCAFile),
	}
	if m := os.Getenv(EnvSASLMechanisms); m != "" {
		s.Mechanisms = strings.Split(m, ",")
	}
	if s.Bootstrap == "" || s.User == "" || s.Password == "" || s.CAFile == "" {
		t.Skipf("needs a real broker's SASL_SSL listener: set %s, %s, %s and %s (scripts/test.sh does)",
			EnvSASLBootstrap, EnvSASLUser, EnvSASLPassword, EnvCAFile)
	}
	return s
}

// TLSConfig returns a TLS client config that trusts only the test CA
// (CAFile), which signed the broker's certificate for 127.0.0.1 and
// localhost.
func (s SASL) TLSConfig(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatalf("reading the test CA (%s): %v", EnvCAFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s (%s) holds no PEM certificate", EnvCAFile, s.CAFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Opts returns the client options for the SASL_SSL listener with
// mechanism "SCRAM-SHA-256" or "SCRAM-SHA-512": seed, TLS and SCRAM login.
func (s SASL) Opts(t testing.TB, mechanism string) []kgo.Opt {
	t.Helper()
	auth := scram.Auth{User: s.User, Pass: s.Password}
	var m sasl.Mechanism
	switch mechanism {
	case "SCRAM-SHA-256":
		m = auth.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = auth.AsSha512Mechanism()
	default:
		t.Fatalf("unknown SASL mechanism %q (known: SCRAM-SHA-256, SCRAM-SHA-512)", mechanism)
	}
	return []kgo.Opt{kgo.SeedBrokers(s.Bootstrap), kgo.DialTLSConfig(s.TLSConfig(t)), kgo.SASL(m)}
}

// Context returns a context that ends after Timeout, at the test's deadline
// if that comes first, or when the test ends.
func Context(t testing.TB) context.Context {
	t.Helper()
	d := time.Now().Add(Timeout)
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		// Leave a moment before the test binary's own deadline so that
		// the failure names the wait rather than a panic dump.
		if td, ok := tt.Deadline(); ok && td.Add(-5*time.Second).Before(d) {
			d = td.Add(-5 * time.Second)
		}
	}
	ctx, cancel := context.WithDeadline(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// Client returns a client for addr with opts, closed when the test ends.
func Client(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl := newClient(t, addr, opts...)
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client for addr, closed when the test ends.
func Admin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(Client(t, addr))
}

// TopicSize is how many records topic holds: the sum of its partitions'
// end offsets (a test's topics are never trimmed).
func TopicSize(t testing.TB, addr, topic string) int64 {
	t.Helper()
	ends, err := Admin(t, addr).ListEndOffsets(Context(t), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// TopicName returns a topic name unique to this call, built from the test's
// name so that a broker's topic list tells which test made what.
func TopicName(t testing.TB) string {
	t.Helper()
	return uniqueName("t", t.Name())
}

// GroupName returns a group name unique to this call.
func GroupName(t testing.TB) string {
	t.Helper()
	return uniqueName("g", t.Name())
}

func uniqueName(prefix, testName string) string {
	var b strings.Builder
	b.WriteString("kshare-")
	b.WriteString(prefix)
	b.WriteByte('-')
	// Topic names allow [a-zA-Z0-9._-]; '.' and '_' collide in Kafka's
	// metric names, so only '-' is used as a separator.
	for _, r := range testName {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() > 150 {
			break
		}
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	b.WriteByte('-')
	b.WriteString(hex.EncodeToString(rnd[:]))
	return b.String()
}

// CreateTopic creates topic name with the given number of partitions and the
// broker's default replication factor, and waits until every partition has
// a leader: a real broker answers CreateTopics before its metadata shows the
// topic, and a produce or share fetch sent in that gap fails.
func CreateTopic(t testing.TB, addr, name string, partitions int32) {
	t.Helper()
	ctx := Context(t)
	adm := kadm.NewClient(newClient(t, addr))
	defer adm.Close()
	resp, err := adm.CreateTopic(ctx, partitions, -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating topic %q with %d partitions on %s: %v", name, partitions, addr, err)
	}
	Eventually(t, fmt.Sprintf("topic %q to have leaders for %d partitions", name, partitions), func() error {
		md, err := adm.Metadata(ctx, name)
		if err != nil {
			return err
		}
		td, ok := md.Topics[name]
		switch {
		case !ok:
			return errors.New("not in metadata")
		case td.Err != nil:
			return td.Err
		case len(td.Partitions) != int(partitions):
			return fmt.Errorf("%d partitions in metadata", len(td.Partitions))
		}
		for _, p := range td.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("partition %d has no leader (%v)", p.Partition, p.Err)
			}
		}
		return nil
	})
}

// Topic creates a topic with a unique name and returns the name.
func Topic(t testing.TB, addr string, partitions int32) string {
	t.Helper()
	name := TopicName(t)
	CreateTopic(t, addr, name, partitions)
	return name
}

// Values returns n values "0", "1", ..., "n-1", a convenient payload whose
// every record is distinct.
func Values(n int) [][]byte {
	vs := make([][]byte, n)
	for i := range vs {
		vs[i] = strconv.AppendInt(nil, int64(i), 10)
	}
	return vs
}

// Produce writes one record per value to topic (partitioned by the client's
// default, sticky, partitioner) and returns when every record is acked. The
// client batches, so thousands of values take one or a few requests.
func Produce(t testing.TB, addr, topic string, values ...[]byte) {
	t.Helper()
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: topic, Value: v}
	}
	ProduceRecords(t, addr, rs...)
}

// ProduceRecords writes rs (each naming its topic; keys and headers as set;
// the partition the default partitioner picks, whatever Partition says)
// and returns when every record is acked.
func ProduceRecords(t testing.TB, addr string, rs ...*kgo.Record) {
	t.Helper()
	cl := newClient(t, addr, kgo.ProducerLinger(0))
	defer cl.Close()
	if err := cl.ProduceSync(Context(t), rs...).FirstErr(); err != nil {
		t.Fatalf("producing %d records to %s: %v", len(rs), addr, err)
	}
}

// ReadTopic reads topic from its start, as a plain consumer (with opts
// too), until it has n records (or more, from the last fetch), and returns
// them.
func ReadTopic(t testing.TB, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := Client(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var out []*kgo.Record
	ctx := Context(t)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of topic %q: %v", len(out), n, topic, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// SetGroupConfig sets group-level configs on group (see
// kafkaadmin.SetShareGroupConfig).
func SetGroupConfig(t testing.TB, addr, group string, cfg map[string]string) {
	t.Helper()
	cl := newClient(t, addr)
	defer cl.Close()
	if err := kafkaadmin.SetShareGroupConfig(Context(t), cl, group, cfg); err != nil {
		t.Fatalf("%v", err)
	}
}

// ShareGroup returns a unique share group name whose consumers start at the
// earliest offset (share.auto.offset.reset=earliest), so that records
// produced before the group's first fetch are delivered too.
func ShareGroup(t testing.TB, addr string) string {
	t.Helper()
	g := GroupName(t)
	SetGroupConfig(t, addr, g, map[string]string{"share.auto.offset.reset": "earliest"})
	return g
}

// Queue makes a topic of partitions partitions holding values, and a share
// group (as ShareGroup makes it) to read it, on the test's broker.
func Queue(t testing.TB, partitions int32, values ...[]byte) (addr, topic, group string) {
	t.Helper()
	addr = Bootstrap(t)
	topic = Topic(t, addr, partitions)
	group = ShareGroup(t, addr)
	Produce(t, addr, topic, values...)
	return addr, topic, group
}

// LockedGroup returns a one-partition topic and a share group (as
// ShareGroup makes it) whose records are locked for lock once delivered:
// on the real broker the group's share.record.lock.duration.ms says so, on
// kfake a cluster of the test's own with that broker-wide lock.
func LockedGroup(t testing.TB, lock time.Duration) (addr, topic, group string) {
	t.Helper()
	return LockedQueue(t, lock, 1)
}

// LockedQueue is LockedGroup with a topic of partitions partitions.
func LockedQueue(t testing.TB, lock time.Duration, partitions int32) (addr, topic, group string) {
	t.Helper()
	ms := strconv.Itoa(int(lock.Milliseconds()))
	if Real() {
		addr = Bootstrap(t)
	} else {
		addr = Fake(t, kfake.BrokerConfigs(map[string]string{
			"group.share.record.lock.duration.ms": ms,
			"share.record.lock.sweep.interval.ms": "100",
		})).ListenAddrs()[0]
	}
	topic = Topic(t, addr, partitions)
	group = ShareGroup(t, addr)
	SetGroupConfig(t, addr, group, map[string]string{"share.record.lock.duration.ms": ms})
	return addr, topic, group
}

// WaitShareMembers waits until share group group has exactly n members, each
// with at least one partition in its target assignment, and returns the
// group's description. A member that heartbeats once is counted before the
// group coordinator assigns it anything; waiting for the assignment too is
// what makes "all n members consume" true a moment later.
func WaitShareMembers(t testing.TB, addr, group string, n int) kadm.DescribedShareGroup {
	t.Helper()
	ctx := Context(t)
	adm := kadm.NewClient(newClient(t, addr))
	defer adm.Close()
	var got kadm.DescribedShareGroup
	Eventually(t, fmt.Sprintf("share group %q to have %d assigned members", group, n), func() error {
		ds, err := adm.DescribeShareGroups(ctx, group)
		if err != nil {
			return err
		}
		d, ok := ds[group]
		switch {
		case !ok:
			return errors.New("group not described")
		case errors.Is(d.Err, kerr.GroupIDNotFound):
			return errors.New("group does not exist yet")
		case d.Err != nil:
			return d.Err
		case len(d.Members) != n:
			return fmt.Errorf("%d members", len(d.Members))
		}
		for _, m := range d.Members {
			if len(m.Assignment) == 0 {
				return fmt.Errorf("member %s has no assignment yet", m.MemberID)
			}
		}
		got = d
		return nil
	})
	return got
}

// newClient is Client without the cleanup, for helpers that close their
// client before returning.
func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("creating kafka client for %s: %v", addr, err)
	}
	return cl
}

// Eventually calls check until it returns nil (see watch.Wait), and fails
// the test with check's last error when the test's wait (Context) ends
// first. It is the wait for a condition that all of kshare's tests use.
func Eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	if err := watch.Wait(Context(t), check); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// DescribeOnFailure logs share group group's state (its members and what
// each is assigned, its start offset and lag per partition) when the test
// fails: what a failure that ends in waiting for records needs to tell a
// group that never started from one whose records went elsewhere.
func DescribeOnFailure(t testing.TB, addr, group string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		adm := kadm.NewClient(newClient(t, addr))
		defer adm.Close()
		gs, err := adm.DescribeShareGroups(ctx, group)
		g := gs[group]
		t.Logf("share group %s: state %q, epoch %d, assignment epoch %d, %d members (%v)", group, g.GroupState, g.GroupEpoch, g.AssignmentEpoch, len(g.Members), errors.Join(err, g.Err))
		for _, m := range g.Members {
			t.Logf("  member %s (client %s): assigned %v", m.MemberID, m.ClientID, m.Assignment.Sorted())
		}
		offs, err := adm.DescribeShareGroupOffsets(ctx, group)
		o := offs[group]
		t.Logf("share group %s offsets (%v):", group, errors.Join(err, o.Err))
		for topic, ps := range o.Offsets {
			for p, so := range ps {
				t.Logf("  %s[%d]: start offset %d, lag %d (%v)", topic, p, so.StartOffset, so.Lag, so.Err)
			}
		}
	})
}

// WaitLag waits until share group group's lag on topic is want: that many
// records, over all its partitions, are neither accepted nor archived, as
// the broker says (Kafka 4.3 persists a group's start offset a few seconds
// after the acknowledgements that move it). A partition that holds no
// record counts as no lag: the broker may never report a start offset for
// it (keyless records all went to the other partition of a two-partition
// topic, and its lag stayed unknown for a minute).
func WaitLag(t testing.TB, addr, group, topic string, want int64) {
	t.Helper()
	adm := Admin(t, addr)
	Eventually(t, fmt.Sprintf("the group's lag at %d", want), func() error {
		ends, err := adm.ListEndOffsets(Context(t), topic)
		if err != nil {
			return err
		}
		res, err := adm.DescribeShareGroupOffsets(Context(t), group)
		if err != nil {
			return err
		}
		var lag int64
		var errs []error
		ends.Each(func(e kadm.ListedOffset) {
			if e.Err != nil {
				errs = append(errs, e.Err)
				return
			}
			if e.Offset == 0 {
				return // holds no record
			}
			o, ok := res[group].Offsets.Lookup(topic, e.Partition)
			if !ok || o.Err != nil || o.Lag < 0 {
				errs = append(errs, fmt.Errorf("partition %d: offsets %+v (found %v)", e.Partition, o, ok))
				return
			}
			lag += o.Lag
		})
		if len(errs) > 0 {
			return fmt.Errorf("want lag %d: %w", want, errors.Join(errs...))
		}
		if lag != want {
			return fmt.Errorf("lag %d over the topic's partitions, want %d", lag, want)
		}
		return nil
	})
}

// MetricOf is the value of reg's counter name for share group group (its
// "group" label), -1 when there is none.
func MetricOf(t testing.TB, reg *prometheus.Registry, name, group string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "group" && l.GetValue() == group {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}
