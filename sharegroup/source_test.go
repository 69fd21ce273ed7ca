package sharegroup_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// idFormat decodes a value "123" into one BIGINT row; any other value is a
// decode error. It keeps these tests about the connector, not a format.
type idFormat struct{}

func (idFormat) Name() string          { return "test-id" }
func (idFormat) Options() *options.Set { return &options.Set{Owner: "format 'test-id'"} }
func (idFormat) NewDecoder(cols []types.Column, _ options.Values) (table.Decoder, error) {
	if len(cols) != 1 || cols[0].Type.Kind != types.BigInt {
		return nil, errors.New("test-id needs one BIGINT column")
	}
	return idDecoder{}, nil
}

type idDecoder struct{}

func (idDecoder) Decode(v []byte, cols []array.Builder) (int, error) {
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, &table.DecodeError{Field: "id", Msg: fmt.Sprintf("expected BIGINT, got %q", v)}
	}
	cols[0].(*array.Int64Builder).Append(n)
	return 1, nil
}

// newSource binds a kafka-sharegroup table of one BIGINT column 'id' (plus
// the given metadata columns) to topic and group.
func newSource(t testing.TB, addr, topic, group string, extra map[string]string, meta ...types.Column) flow.Source {
	t.Helper()
	opts := map[string]string{"topic": topic}
	for k, v := range extra {
		opts[k] = v
	}
	return newSourceOpts(t, addr, group, opts, meta...)
}

// newSourceOpts is newSource with the topic (or topic-pattern) in opts.
func newSourceOpts(t testing.TB, addr, group string, opts map[string]string, meta ...types.Column) flow.Source {
	t.Helper()
	kvs := []options.KV{
		{Key: "connector", Value: sharegroup.Name},
		{Key: "format", Value: "test-id"},
		{Key: "bootstrap.servers", Value: addr},
		{Key: "share-group-id", Value: group},
	}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kvs = append(kvs, options.KV{Key: k, Value: opts[k]})
	}
	f := idFormat{}
	vals, err := options.Parse(kvs, []string{"connector", "format"}, sharegroup.Options, f.Options())
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	def := &table.Definition{Name: "ids", Options: kvs, Schema: types.Schema{Columns: append([]types.Column{
		{Name: "id", Type: types.BigIntType()},
	}, meta...)}}
	c, err := table.LookupConnector(sharegroup.Name)
	if err != nil {
		t.Fatal(err)
	}
	src, err := c.NewSource(&table.Bound{Def: def, Connector: c, Format: f, Options: vals})
	if err != nil {
		t.Fatalf("NewSource: %v", err)
	}
	return src
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func open(t testing.TB, src flow.Source, mem memory.Allocator) flow.Stream {
	t.Helper()
	st, err := src.Open(kafkatest.Context(t), flow.OpenOptions{Alloc: mem})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

// reader reads a stream and remembers every id delivered and how often.
type reader struct {
	t    testing.TB
	st   flow.Stream
	seen map[int64]int
	rows int
}

func newReader(t testing.TB, st flow.Stream) *reader {
	return &reader{t: t, st: st, seen: map[int64]int{}}
}

// next takes one batch and returns its ids; the batch is not settled yet.
func (r *reader) next(ctx context.Context) (flow.Batch, []int64, error) {
	b, err := r.st.Next(ctx)
	if err != nil {
		return b, nil, err
	}
	col := b.Record.Column(0).(*array.Int64)
	ids := make([]int64, col.Len())
	for i := range ids {
		ids[i] = col.Value(i)
	}
	return b, ids, nil
}

// until delivers batches (settling each as delivered) until done says stop.
func (r *reader) until(ctx context.Context, what string, done func() bool) {
	r.t.Helper()
	for !done() {
		b, ids, err := r.next(ctx)
		if err != nil {
			r.t.Fatalf("waiting for %s (have %d distinct ids, %d rows): %v", what, len(r.seen), r.rows, err)
		}
		for _, id := range ids {
			r.seen[id]++
		}
		r.rows += len(ids)
		b.Record.Release()
		b.Ack.Done()
	}
}

// TestParallelMembersOnePartition is the share-group promise: more members
// than partitions, each gets work, every record is delivered once.
func TestParallelMembersOnePartition(t *testing.T) {
	const n = 20000
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(n)...)

	mem := tabletest.CheckedAlloc(t)
	st := open(t, newSource(t, addr, topic, group, map[string]string{
		"source.parallelism": "4",
		// Small polls so that the four members take turns on the one
		// partition rather than one member taking most of it.
		"properties.max.poll.records": "100",
	}), mem)
	r := newReader(t, st)
	r.until(kafkatest.Context(t), "all records", func() bool { return len(r.seen) == n })
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for id, c := range r.seen {
		if c != 1 {
			t.Errorf("id %d delivered %d times in the happy path", id, c)
		}
	}
	s := st.Stats()
	if len(s.Consumers) != 4 {
		t.Fatalf("stats name %d consumers, want 4", len(s.Consumers))
	}
	for _, c := range s.Consumers {
		if c.Records == 0 {
			t.Errorf("member %s received no records: %+v", c.Name, s.Consumers)
		}
	}
	if s.Accepted != n || s.Released != 0 || s.Rejected != 0 {
		t.Errorf("accepted/released/rejected = %d/%d/%d, want %d/0/0", s.Accepted, s.Released, s.Rejected, n)
	}
}

// TestWaitsForReader: a stream says it waits for its reader once the
// reader took every batch there is while a member holds some unsettled,
// never while a batch is queued, and no more once the reader settles what
// it holds (the members poll again). With two members, one of which has
// nothing (two partitions, the ten records produced at once land on one),
// the one holding records is enough: the other is fetching.
func TestWaitsForReader(t *testing.T) {
	for _, tc := range []struct {
		parallelism string
		partitions  int32
	}{{"1", 1}, {"2", 2}} {
		t.Run("parallelism="+tc.parallelism, func(t *testing.T) {
			addr, topic, group := kafkatest.Queue(t, tc.partitions, kafkatest.Values(10)...)
			mem := tabletest.CheckedAlloc(t)
			st := open(t, newSource(t, addr, topic, group, map[string]string{"source.parallelism": tc.parallelism, "scan.batch-size": "5"}), mem)
			w, ok := st.(flow.ReaderWaiter)
			if !ok {
				t.Fatalf("%T is not a flow.ReaderWaiter", st)
			}
			waitUntil(t, 10*time.Second, "the records fetched", func() bool { return st.Stats().Records == 10 })
			if w.WaitsForReader() {
				t.Errorf("WaitsForReader before the reader took a batch")
			}
			r := newReader(t, st)
			var held []flow.Batch
			for n := 0; n < 10; {
				b, ids, err := r.next(kafkatest.Context(t))
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, b)
				n += len(ids)
			}
			waitUntil(t, 3*time.Second, "the stream waiting for the reader", w.WaitsForReader)
			for _, b := range held {
				b.Record.Release()
				b.Ack.Done()
			}
			waitUntil(t, 3*time.Second, "the members polling again", func() bool { return !w.WaitsForReader() })
			if err := st.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if s := st.Stats(); s.Accepted != 10 {
				t.Errorf("accepted %d records, want 10", s.Accepted)
			}
		})
	}
}

// TestEarlyEndReleases: a reader that stops after 100 rows releases the rest
// of what it holds, and a second reader in the group delivers it all.
func TestEarlyEndReleases(t *testing.T) {
	const n = 10000
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(n)...)
	mem := tabletest.CheckedAlloc(t)
	src := newSource(t, addr, topic, group, nil)
	ctx := kafkatest.Context(t)

	first := open(t, src, mem)
	delivered := map[int64]bool{}
	for len(delivered) < 100 {
		b, ids, err := newReader(t, first).next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if len(delivered) < 100 {
				delivered[id] = true
			} else {
				b.Ack.Mark(i, flow.Release) // LIMIT reached: not delivered
			}
		}
		b.Record.Release()
		b.Ack.Done()
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if s := first.Stats(); s.Accepted != 100 || s.Released != s.Records-100 {
		t.Errorf("first reader: accepted %d released %d of %d records; want 100 accepted and the rest released", s.Accepted, s.Released, s.Records)
	}

	second := open(t, src, mem)
	defer second.Close()
	r := newReader(t, second)
	r.until(ctx, "the records the first reader did not deliver", func() bool { return len(r.seen) == n-100 })
	for id := range r.seen {
		if delivered[id] {
			t.Errorf("id %d was accepted by the first reader and delivered again", id)
		}
	}
}

func poisoned(n, at int) [][]byte {
	vs := kafkatest.Values(n)
	vs[at] = []byte("poison")
	return vs
}

// readPastPoison reads the 999 good records of 1000 whose 501st does not
// decode, under 'scan.on-decode-error' = mode. The stream closes when the
// test ends, before its memory is checked.
func readPastPoison(t *testing.T, mode string) flow.Stream {
	addr, topic, group := kafkatest.Queue(t, 1, poisoned(1000, 500)...)
	st := open(t, newSource(t, addr, topic, group, map[string]string{"scan.on-decode-error": mode}), tabletest.CheckedAlloc(t))
	t.Cleanup(func() { st.Close() })
	r := newReader(t, st)
	r.until(kafkatest.Context(t), "the good records", func() bool { return len(r.seen) == 999 })
	return st
}

func TestDecodeErrorReject(t *testing.T) {
	st := readPastPoison(t, "reject")
	waitStats(t, st, "the poison record rejected", func(s flow.Stats) bool { return s.Rejected == 1 && s.DecodeErrors == 1 })
}

func TestDecodeErrorRelease(t *testing.T) {
	st := readPastPoison(t, "release")
	// Released, the poison comes back (delivery count + 1) until the
	// broker's delivery limit archives it; the stream flows meanwhile.
	waitStats(t, st, "the poison record redelivered", func(s flow.Stats) bool { return s.DecodeErrors >= 2 && s.Redelivered >= 1 })
}

func TestDecodeErrorFail(t *testing.T) {
	addr, topic, group := kafkatest.Queue(t, 1, poisoned(1000, 500)...)
	mem := tabletest.CheckedAlloc(t)
	ctx := kafkatest.Context(t)
	src := newSource(t, addr, topic, group, nil)
	st := open(t, src, mem)
	r := newReader(t, st)
	var failure error
	for failure == nil {
		b, ids, err := r.next(ctx)
		if err != nil {
			failure = err
			break
		}
		for _, id := range ids {
			r.seen[id]++
		}
		b.Record.Release()
		b.Ack.Done()
	}
	var re *sharegroup.RecordError
	if !errors.As(failure, &re) || re.Topic != topic || re.Partition != 0 || re.Offset != 500 || re.DeliveryCount != 1 {
		t.Fatalf("error = %v, want a RecordError at %s[0]@500, first delivery", failure, topic)
	}
	// The error is what a user reads: it names the option and both ways
	// past the record, and how often it was handed out.
	hint := "; under 'scan.on-decode-error' = 'fail' every query stops at this record until the broker's delivery limit archives it; " +
		"to read past it, ALTER TABLE `ids` SET ('scan.on-decode-error' = 'reject') to drop it, or 'release' to hand it back and read on"
	if want := fmt.Sprintf("%s[0]@500 (delivery 1): field \"id\": expected BIGINT, got \"poison\"", topic) + hint; failure.Error() != want {
		t.Errorf("error text = %q, want %q", failure.Error(), want)
	}
	st.Close()
	if len(r.seen) > 500 {
		t.Errorf("delivered %d rows; only the 500 before the poison record may pass", len(r.seen))
	}
	// The next query under 'fail' stops on the same record, handed out
	// again: what the message warns of. Usually on its second delivery; a
	// fetch the first query's client had in flight when it closed may have
	// acquired it once more, which the broker released when the member
	// left (seen in CI: delivery 3).
	again := open(t, src, mem)
	ra := newReader(t, again)
	for {
		b, ids, err := ra.next(ctx)
		if err != nil {
			if !errors.As(err, &re) || re.Offset != 500 || re.DeliveryCount < 2 {
				t.Fatalf("second query: error = %v, want the record at offset 500 on a later delivery", err)
			}
			break
		}
		for _, id := range ids {
			r.seen[id]++
		}
		b.Record.Release()
		b.Ack.Done()
	}
	again.Close()
	// Nothing was lost: the poison record and the rest come back.
	st2 := open(t, newSource(t, addr, topic, group, map[string]string{"scan.on-decode-error": "reject"}), mem)
	defer st2.Close()
	r2 := newReader(t, st2)
	r2.until(ctx, "the rest after the failure", func() bool {
		for i := int64(0); i < 1000; i++ {
			if i != 500 && r.seen[i] == 0 && r2.seen[i] == 0 {
				return false
			}
		}
		return true
	})
	waitStats(t, st2, "the poison record seen again", func(s flow.Stats) bool { return s.DecodeErrors == 1 })
}

func waitStats(t testing.TB, st flow.Stream, what string, ok func(flow.Stats) bool) {
	t.Helper()
	ctx := kafkatest.Context(t)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ok(st.Stats()) {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: stats %+v", what, st.Stats())
		case <-tick.C:
		}
	}
}

// TestMetadataColumns fills every metadata key the connector declares.
func TestMetadataColumns(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.ShareGroup(t, addr)
	ts := time.UnixMilli(1764670530123)
	kafkatest.ProduceRecords(t, addr, &kgo.Record{Topic: topic, Key: []byte("k1"), Value: []byte("7"), Timestamp: ts,
		Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
	var meta []types.Column
	for _, k := range sharegroup.Metadata {
		meta = append(meta, types.Column{Name: "m_" + k.Key, Type: k.Type, Metadata: true, MetadataKey: k.Key, Virtual: true})
	}
	st := open(t, newSource(t, addr, topic, group, nil, meta...), tabletest.CheckedAlloc(t))
	defer st.Close()
	b, err := st.Next(kafkatest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Record.Release()
	defer b.Ack.Done()
	got := map[string]string{}
	for i, f := range b.Record.Schema().Fields() {
		got[f.Name] = b.Record.Column(i).ValueStr(0)
	}
	want := map[string]string{
		"id":               "7",
		"m_topic":          topic,
		"m_partition":      "0",
		"m_offset":         "0",
		"m_key":            "azE=", // base64 of k1, as arrow prints binary
		"m_delivery-count": "1",
		"m_timestamp-type": "CreateTime",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if got["m_timestamp"] != "2025-12-02T10:15:30.123Z" {
		t.Errorf("m_timestamp = %q, want the record's timestamp", got["m_timestamp"])
	}
	if got["m_acquisition-deadline"] == "" || got["m_acquisition-deadline"] == "(null)" {
		t.Errorf("m_acquisition-deadline is empty")
	}
	if !strings.Contains(got["m_headers"], "h") {
		t.Errorf("m_headers = %q, want the header h", got["m_headers"])
	}
}

// TestSlowReaderKeepsLocks holds a batch three times as long as the record
// lock while the member still has more batches of the same poll to hand
// over. With renewal (the connector's policy) no other member gets those
// records while they are being delivered, the locks being kept from the
// fetch on, not from the hand-over of the poll's last batch; without it,
// the same hold hands them to the other member, which is what the renewal
// is for, and the late settlement is counted as such, never as accepted.
func TestSlowReaderKeepsLocks(t *testing.T) {
	t.Run("renew", func(t *testing.T) {
		stolen, held, s, _ := holdSlowly(t)
		if stolen != 0 {
			t.Errorf("%d of %d held records went to another member while they were being delivered", stolen, held)
		}
		if s.Renewed == 0 {
			t.Errorf("no lock was renewed: %+v", s)
		}
		if s.Accepted != int64(held) || s.LockExpired != 0 {
			t.Errorf("stats %+v: want the %d held records accepted and no lock expired", s, held)
		}
	})
	t.Run("no-renew", func(t *testing.T) {
		defer sharegroup.SetPolicy(0, false)()
		stolen, held, s, group := holdSlowly(t)
		if stolen == 0 {
			t.Errorf("without renewal none of %d held records went elsewhere in three lock durations; the test proves nothing", held)
		}
		t.Logf("without renewal %d of %d held records were delivered to another member meanwhile", stolen, held)
		// The broker may answer the late acknowledgements as applied (it
		// does for records the other member has settled since): they must
		// not count as accepted.
		if s.Accepted != 0 || s.LockExpired < int64(held) {
			t.Errorf("stats %+v: want none accepted and at least the %d held records counted as settled after their lock expired", s, held)
		}
		// Prometheus counts them as Stats does (the group is the test's own).
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(sharegroup.Collector())
		if got := kafkatest.MetricOf(t, reg, "kshare_source_lock_expired_total", group); got != float64(s.LockExpired) {
			t.Errorf("kshare_source_lock_expired_total = %v, Stats.LockExpired = %d", got, s.LockExpired)
		}
	})
}

// fetchedAhead is a stream whose client always fetches ahead (prefetch 1)
// over two producer batches of 100 records, with a lock of 2 s, its first
// batch read, and another consumer of the group that accepts what it gets:
// the fetched-ahead records, once their locks run out.
type fetchedAhead struct {
	st    flow.Stream
	r     *reader
	first flow.Batch
	ids   []int64
	other *otherConsumer
}

const fetchedAheadLock = 2 * time.Second

func newFetchedAhead(t *testing.T, batchSize string) *fetchedAhead {
	t.Cleanup(sharegroup.SetPolicy(1, true))
	addr, topic, group := kafkatest.LockedGroup(t, fetchedAheadLock)
	// Two producer batches: in batch_optimized mode a fetch takes one.
	kafkatest.Produce(t, addr, topic, kafkatest.Values(100)...)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(200)[100:]...)
	f := &fetchedAhead{st: open(t, newSource(t, addr, topic, group, map[string]string{"properties.max.poll.records": "100", "scan.batch-size": batchSize}), tabletest.CheckedAlloc(t))}
	t.Cleanup(func() { f.st.Close() })
	f.r = newReader(t, f.st)
	var err error
	if f.first, f.ids, err = f.r.next(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	f.other = pollOther(t, addr, topic, group, kgo.AckAccept)
	return f
}

// deliverFirst counts the first batch delivered and settles it.
func (f *fetchedAhead) deliverFirst() {
	for _, id := range f.ids {
		f.r.seen[id]++
	}
	f.first.Record.Release()
	f.first.Ack.Done()
}

// check waits two more lock durations, in which a refused accept would
// hand the delivered rows to the other consumer, closes the stream, checks
// that no row the reader delivered went to the other consumer and that the
// reader's stats count every one accepted, and returns the stats and what
// the other consumer got.
func (f *fetchedAhead) check(t *testing.T) (flow.Stats, map[int64]int) {
	time.Sleep(2 * fetchedAheadLock) // waiting for something that must not happen
	otherSeen := f.other.stop()
	if err := f.st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for id := range f.r.seen {
		if otherSeen[id] > 0 {
			t.Errorf("id %d was delivered by the reader and by the other consumer", id)
		}
	}
	s := f.st.Stats()
	if s.Accepted != int64(len(f.r.seen)) || s.AckRefused != 0 || s.AcceptsLost != 0 || s.LockExpired != 0 {
		t.Errorf("the reader delivered %d ids; stats %+v", len(f.r.seen), s)
	}
	return s, otherSeen
}

// A poll whose records the client fetched ahead, while the poll before was
// still being delivered, can come with its locks run out: another consumer
// may hold those records by then. They are released undelivered, and their
// release goes out apart from the accepts of the poll before: Kafka refuses
// all of a partition's acknowledgements in a request when one is invalid,
// which would hand the delivered rows out a second time. franz-go fetches
// ahead now and then on a busy machine; prefetch 1 makes it do so always.
func TestFetchedAheadReleasedAlone(t *testing.T) {
	f := newFetchedAhead(t, "20")
	ctx := kafkatest.Context(t)
	time.Sleep(2 * fetchedAheadLock) // the slow work itself, not a wait for a condition
	f.deliverFirst()
	// The rest of the first poll, then whatever comes while the other
	// consumer takes the second.
	f.r.until(ctx, "the first poll's rows", func() bool { return len(f.r.seen) >= 100 })
	waitStats(t, f.st, "the fetched-ahead poll released", func(s flow.Stats) bool { return s.ExpiredOnArrival > 0 })
	otherGot := len(f.other.seen())
	kafkatest.Eventually(t, "the other consumer to take every record the reader did not deliver", func() error {
		if n := len(f.other.seen()); n+len(f.r.seen) < 200 {
			return fmt.Errorf("%d + %d of 200", n, len(f.r.seen))
		}
		return nil
	})
	s, otherSeen := f.check(t)
	t.Logf("reader delivered %d, other consumer %d (%d before the release); %d released on arrival", len(f.r.seen), len(otherSeen), otherGot, s.ExpiredOnArrival)
}

// Records the client fetched ahead that are still in its buffer when the
// stream stops are released as it leaves, and that release goes out apart
// from the accepts of the rows delivered last: by then the fetched-ahead
// records' locks may have run out and another consumer may hold them, and
// a release of one of them sent with the accepts would have the broker
// refuse those too.
func TestFetchedAheadReleasedAloneOnClose(t *testing.T) {
	f := newFetchedAhead(t, "100")
	if len(f.ids) != 100 {
		t.Fatalf("the first batch has %d rows, want the whole first poll of 100", len(f.ids))
	}
	kafkatest.Eventually(t, "the other consumer to take the fetched-ahead records", func() error {
		if n := len(f.other.seen()); n < 100 {
			return fmt.Errorf("%d of 100", n)
		}
		return nil
	})
	// The reader is done with its rows and the stream stops: the member
	// leaves with the fetched-ahead poll still in its client's buffer.
	f.st.(flow.FetchStopper).StopFetching()
	f.deliverFirst()
	s, otherSeen := f.check(t)
	if s.FetchedAhead == 0 {
		t.Errorf("nothing was fetched ahead; the test proves nothing: %+v", s)
	}
	t.Logf("reader delivered %d, other consumer %d; %d fetched ahead", len(f.r.seen), len(otherSeen), s.FetchedAhead)
}

// otherConsumer is a second consumer of a share group that polls in the
// background until stop, settles every record it gets with ack, and counts
// the ids (the values) it got.
type otherConsumer struct {
	mu    sync.Mutex
	got   map[int64]int
	quit  chan struct{}
	ended sync.WaitGroup
}

func pollOther(t *testing.T, addr, topic, group string, ack kgo.AckStatus) *otherConsumer {
	cl := kafkatest.Client(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(50))
	ctx := kafkatest.Context(t)
	o := &otherConsumer{got: map[int64]int{}, quit: make(chan struct{})}
	o.ended.Go(func() {
		for {
			select {
			case <-o.quit:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := cl.PollRecords(pctx, 0)
			cancel()
			for _, rec := range fs.Records() {
				n, _ := strconv.ParseInt(string(rec.Value), 10, 64)
				o.mu.Lock()
				o.got[n]++
				o.mu.Unlock()
				rec.Ack(ack)
			}
			if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("other consumer: %v", err)
			}
		}
	})
	return o
}

// seen is a copy of the counts so far.
func (o *otherConsumer) seen() map[int64]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.got)
}

// stop ends the polling and returns the counts.
func (o *otherConsumer) stop() map[int64]int {
	close(o.quit)
	o.ended.Wait()
	return o.seen()
}

// holdSlowly reads one batch of a poll of 200 records in batches of 20,
// holds it for three lock durations while a second member of the group
// polls, then settles it and closes the stream (which releases the rest).
// It returns how many held records the other member received meanwhile,
// the stream's stats once it closed, and the share group.
func holdSlowly(t *testing.T) (stolen, held int, stats flow.Stats, group string) {
	const lock = 2 * time.Second
	addr, topic, group := kafkatest.LockedGroup(t, lock)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(200)...)
	ctx := kafkatest.Context(t)

	st := open(t, newSource(t, addr, topic, group, map[string]string{"properties.max.poll.records": "200", "scan.batch-size": "20"}), tabletest.CheckedAlloc(t))
	defer st.Close()
	r := newReader(t, st)
	b, ids, err := r.next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The other member releases what it gets: not its to keep.
	other := pollOther(t, addr, topic, group, kgo.AckRelease)
	time.Sleep(3 * lock) // the slow work itself, not a wait for a condition
	b.Record.Release()
	b.Ack.Done()
	otherSeen := other.stop()
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for _, id := range ids {
		if otherSeen[id] > 0 {
			stolen++
		}
	}
	return stolen, len(ids), st.Stats(), group
}

// TestUnreachableBroker: a broker that is not there is an error at Open,
// promptly, naming the address.
func TestUnreachableBroker(t *testing.T) {
	src := newSource(t, "127.0.0.1:1", "t", "g", map[string]string{"properties.request.timeout.ms": "2000"})
	start := time.Now()
	_, err := src.Open(context.Background(), flow.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Open = %v, want an error naming 127.0.0.1:1", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Open took %s to fail", d)
	}
}

func TestMissingTopic(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	src := newSource(t, addr, "no-such-topic-"+kafkatest.GroupName(t), kafkatest.GroupName(t), nil)
	_, err := src.Open(kafkatest.Context(t), flow.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Open = %v, want a topic-not-found error", err)
	}
}

// TestKilledProcessLosesNothing kills a reading process with SIGKILL in the
// middle of the stream; a second reader then delivers everything the first
// had not delivered.
func TestKilledProcessLosesNothing(t *testing.T) {
	const n = 5000
	var addr string
	lockMs := "2000"
	if kafkatest.Real() {
		addr = kafkatest.Bootstrap(t)
	} else {
		// kfake must persist nothing here, but the child is another
		// process: it needs a fixed address both can reach.
		addr = kafkatest.Fake(t, kfake.BrokerConfigs(map[string]string{"group.share.record.lock.duration.ms": lockMs})).ListenAddrs()[0]
	}
	topic := kafkatest.Topic(t, addr, 2)
	group := kafkatest.ShareGroup(t, addr)
	kafkatest.SetGroupConfig(t, addr, group, map[string]string{"share.record.lock.duration.ms": lockMs})
	kafkatest.Produce(t, addr, topic, kafkatest.Values(n)...)

	out := filepath.Join(t.TempDir(), "delivered")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "KSHARE_CHILD_OUT="+out, "KSHARE_CHILD_ADDR="+addr, "KSHARE_CHILD_TOPIC="+topic, "KSHARE_CHILD_GROUP="+group)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := kafkatest.Context(t)
	tick := time.NewTicker(20 * time.Millisecond)
	for len(readIDs(t, out)) < 1000 {
		select {
		case <-ctx.Done():
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child delivered %d ids before the deadline; its stderr:\n%s", len(readIDs(t, out)), stderr.String())
		case <-tick.C:
		}
	}
	tick.Stop()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	childIDs := readIDs(t, out)

	st := open(t, newSource(t, addr, topic, group, nil), tabletest.CheckedAlloc(t))
	defer st.Close()
	r := newReader(t, st)
	r.until(ctx, "every id the killed reader had not delivered", func() bool {
		for i := int64(0); i < n; i++ {
			if !childIDs[i] && r.seen[i] == 0 {
				return false
			}
		}
		return true
	})
	t.Logf("killed child delivered %d ids; the second reader %d (%d of them again)", len(childIDs), len(r.seen), overlap(childIDs, r.seen))
}

func overlap(a map[int64]bool, b map[int64]int) int {
	n := 0
	for id := range b {
		if a[id] {
			n++
		}
	}
	return n
}

// readIDs reads the ids the child wrote and synced; a torn last line (the
// child died writing it) is not a delivered id.
func readIDs(t testing.TB, path string) map[int64]bool {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	ids := map[int64]bool{}
	lines := strings.Split(string(data), "\n")
	for _, l := range lines[:max(0, len(lines)-1)] {
		if n, err := strconv.ParseInt(l, 10, 64); err == nil {
			ids[n] = true
		}
	}
	return ids
}

// TestMain runs childReader instead of the tests when this test binary is
// started as the process TestKilledProcessLosesNothing kills.
func TestMain(m *testing.M) {
	if out := os.Getenv("KSHARE_CHILD_OUT"); out != "" {
		if err := childReader(out); err != nil {
			fmt.Fprintln(os.Stderr, "child reader:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// childReader delivers rows by writing and syncing them to a file, then
// settles, slowly, until it is killed.
func childReader(out string) error {
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c, err := table.LookupConnector(sharegroup.Name)
	if err != nil {
		return err
	}
	kvs := []options.KV{
		{Key: "bootstrap.servers", Value: os.Getenv("KSHARE_CHILD_ADDR")},
		{Key: "topic", Value: os.Getenv("KSHARE_CHILD_TOPIC")},
		{Key: "share-group-id", Value: os.Getenv("KSHARE_CHILD_GROUP")},
		{Key: "source.parallelism", Value: "2"},
		{Key: "properties.max.poll.records", Value: "100"},
	}
	vals, err := options.Parse(kvs, nil, sharegroup.Options, idFormat{}.Options())
	if err != nil {
		return err
	}
	def := &table.Definition{Name: "ids", Options: kvs, Schema: types.Schema{Columns: []types.Column{{Name: "id", Type: types.BigIntType()}}}}
	src, err := c.NewSource(&table.Bound{Def: def, Connector: c, Format: idFormat{}, Options: vals})
	if err != nil {
		return err
	}
	st, err := src.Open(context.Background(), flow.OpenOptions{})
	if err != nil {
		return err
	}
	for {
		b, err := st.Next(context.Background())
		if err != nil {
			return err
		}
		col := b.Record.Column(0).(*array.Int64)
		var sb strings.Builder
		for i := 0; i < col.Len(); i++ {
			sb.WriteString(strconv.FormatInt(col.Value(i), 10))
			sb.WriteByte('\n')
		}
		if _, err := f.WriteString(sb.String()); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		b.Record.Release()
		b.Ack.Done()
		time.Sleep(20 * time.Millisecond) // slow work, so the kill lands mid-stream
	}
}
