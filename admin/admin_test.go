package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"go.uber.org/goleak"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
)

// These tests run on kfake, or on the real broker that scripts/test.sh
// starts (KSHARE_KAFKA_BOOTSTRAP); claims about Kafka are proven by the
// latter.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newAdmin(t *testing.T, addr string) *admin.Admin {
	t.Helper()
	return admin.New(kafkatest.Client(t, addr))
}

// readAndAccept reads topic through share group group, accepting every
// record polled, until at least n are accepted; then it closes the reader,
// which releases whatever it fetched beyond. It returns the records
// accepted per partition.
func readAndAccept(t *testing.T, addr, group, topic string, n int) map[int32]int64 {
	t.Helper()
	ctx := kafkatest.Context(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.MaxConcurrentFetches(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32]int64{}
	total := 0
	for total < n {
		fs := cl.PollRecords(ctx, n-total)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %d records of %s through %s: %d read when the wait ended: %v", n, topic, group, total, err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("reading partition %d: %v", p, err) })
		rs := fs.Records()
		cl.MarkAcks(kgo.AckAccept, rs...)
		for _, r := range rs {
			got[r.Partition]++
		}
		total += len(rs)
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatalf("flushing acknowledgements: %v", err)
	}
	return got
}

// waitEmpty waits until the share group has no members: a closed reader
// leaves at once, but the coordinator says so a moment later.
func waitEmpty(t *testing.T, adm *admin.Admin, group string) {
	t.Helper()
	ctx := kafkatest.Context(t)
	kafkatest.Eventually(t, "share group "+group+" to be empty", func() error {
		d, err := adm.Group(ctx, group)
		if err != nil {
			return err
		}
		if len(d.Members) > 0 {
			return fmt.Errorf("%d members", len(d.Members))
		}
		return nil
	})
}

// settledGroup is a topic of partitions holding records values, read by a
// share group that accepted one record and then left: the group has state
// and no member. adm administers the broker at addr.
func settledGroup(t *testing.T, partitions int32, records int) (adm *admin.Admin, addr, topic, group string) {
	t.Helper()
	addr, topic, group = kafkatest.Queue(t, partitions, kafkatest.Values(records)...)
	readAndAccept(t, addr, group, topic, 1)
	adm = newAdmin(t, addr)
	waitEmpty(t, adm, group)
	return adm, addr, topic, group
}

// TestGroupLagMatchesUnaccepted: on a
// topic of 10,000 records read halfway by a share group whose reader then
// stopped, the lag of every partition is the count of its records not
// accepted, counted independently from the end offsets and what the reader
// accepted; SHOW SHARE GROUPS' total is their sum.
func TestGroupLagMatchesUnaccepted(t *testing.T) {
	t.Parallel()
	const records = 10000
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 3)
	// Keyed, so that the records spread over every partition (unkeyed
	// ones may all land in one batch, one partition): a partition the
	// group never reads has no state and no lag to compare.
	rs := make([]*kgo.Record, records)
	for i, v := range kafkatest.Values(records) {
		rs[i] = &kgo.Record{Topic: topic, Key: v, Value: v}
	}
	kafkatest.ProduceRecords(t, addr, rs...)
	group := kafkatest.ShareGroup(t, addr)
	accepted := readAndAccept(t, addr, group, topic, records/2)

	adm := newAdmin(t, addr)
	ends, err := kafkatest.Admin(t, addr).ListEndOffsets(kafkatest.Context(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	var wantTotal, total int64
	ends.Each(func(o kadm.ListedOffset) {
		want[o.Partition] = o.Offset - accepted[o.Partition]
		wantTotal += want[o.Partition]
		total += o.Offset
	})
	if total != records {
		t.Fatalf("end offsets sum to %d, want %d", total, records)
	}
	// The broker's figures come from the group's persisted state, which
	// trails the last acknowledgements by a moment.
	var d *admin.GroupDescription
	ctx := kafkatest.Context(t)
	kafkatest.Eventually(t, "the lag to match the unaccepted records", func() error {
		d, err = adm.Group(ctx, group)
		if err != nil {
			return err
		}
		if len(d.Members) > 0 {
			return fmt.Errorf("%d members", len(d.Members))
		}
		if len(d.Partitions) != len(want) {
			return fmt.Errorf("%d partitions described, want %d", len(d.Partitions), len(want))
		}
		for _, p := range d.Partitions {
			if p.Lag != want[p.Partition] {
				return fmt.Errorf("partition %d: lag %d, want %d (end %d, accepted %d)", p.Partition, p.Lag, want[p.Partition], p.EndOffset, accepted[p.Partition])
			}
		}
		return nil
	})
	for _, p := range d.Partitions {
		if p.Topic != topic || p.EndOffset != want[p.Partition]+accepted[p.Partition] || p.StartOffset < 0 || p.StartOffset > p.EndOffset {
			t.Errorf("partition row %+v: want topic %s, end offset %d, a start offset within the log", p, topic, want[p.Partition]+accepted[p.Partition])
		}
	}
	t.Logf("accepted %v of %d records; described %+v", accepted, records, d.Partitions)

	rows, err := adm.Groups(kafkatest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rows {
		if r.Name != group {
			continue
		}
		found = true
		if r.Lag != wantTotal || r.Members != 0 || r.State != "Empty" || strings.Join(r.Topics, ",") != topic {
			t.Errorf("SHOW SHARE GROUPS row %+v, want lag %d, 0 members, state Empty, topics [%s]", r, wantTotal, topic)
		}
	}
	if !found {
		t.Errorf("SHOW SHARE GROUPS does not list %s: %+v", group, rows)
	}
}

// TestResetToEarliestRereads: on an empty group, RESET TO EARLIEST makes the
// next SELECT (through the kshare Go API) read the topic from its first
// record again; RESET TO OFFSET, TIMESTAMP and LATEST move to the offset
// asked for.
func TestResetToEarliestRereads(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	old := time.Now().Add(-time.Hour)
	var rs []*kgo.Record
	for i := range 20 {
		ts := old
		if i >= 10 {
			ts = time.Now().Add(-time.Minute)
		}
		rs = append(rs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i)), Timestamp: ts})
	}
	kafkatest.ProduceRecords(t, addr, rs...)
	group := kafkatest.ShareGroup(t, addr)
	adm := newAdmin(t, addr)
	ctx := kafkatest.Context(t)

	if got := readAndAccept(t, addr, group, topic, 20); got[0] != 20 {
		t.Fatalf("first read accepted %v, want 20 records of partition 0", got)
	}
	waitEmpty(t, adm, group)
	rows, err := adm.Reset(ctx, group, admin.ResetTo{Kind: admin.ResetEarliest}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Topic != topic || rows[0].Partition != 0 || rows[0].After != 0 {
		t.Fatalf("reset rows %+v, want one row for %s/0 with start offset after 0", rows, topic)
	}
	// The next SELECT through the group reads the topic from its start.
	eng := kshare.New()
	if _, err := eng.Exec(ctx, `CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`')`); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Query(ctx, "SELECT v FROM t", kshare.MaxRows(20))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for res.Next() {
		col := res.RecordBatch().Column(0).(*array.String)
		for i := range col.Len() {
			seen[col.Value(i)] = true
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	res.Close()
	if len(seen) != 20 || !seen["0"] || !seen["19"] {
		t.Fatalf("SELECT after RESET TO EARLIEST read %d distinct records (%v), want all 20 from 0", len(seen), seen)
	}

	waitEmpty(t, adm, group)
	cutoff := time.Now().Add(-30 * time.Minute)
	for _, c := range []struct {
		to   admin.ResetTo
		want int64
	}{
		{admin.ResetTo{Kind: admin.ResetOffset, Offset: 15}, 15},
		{admin.ResetTo{Kind: admin.ResetTimestamp, Time: cutoff}, 10},
		{admin.ResetTo{Kind: admin.ResetLatest}, 20},
	} {
		rows, err := adm.Reset(ctx, group, c.to, topic)
		if err != nil {
			t.Fatalf("RESET TO %s: %v", c.to, err)
		}
		if len(rows) != 1 || rows[0].After != c.want {
			t.Errorf("RESET TO %s: rows %+v, want start offset after %d", c.to, rows, c.want)
		}
		kafkatest.Eventually(t, fmt.Sprintf("start offset %d after RESET TO %s", c.want, c.to), func() error {
			d, err := adm.Group(ctx, group)
			if err != nil {
				return err
			}
			if len(d.Partitions) != 1 || d.Partitions[0].StartOffset != c.want || d.Partitions[0].Lag != 20-c.want {
				return fmt.Errorf("partitions %+v", d.Partitions)
			}
			return nil
		})
	}
}

// TestResetLiveGroupNamesMember: a group with a member is neither reset
// nor dropped, the error names the member, and its offsets stay.
func TestResetLiveGroupNamesMember(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(10)...)
	ctx := kafkatest.Context(t)
	cl := kafkatest.Client(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("live-reader"))
	if fs := cl.PollRecords(ctx, 5); len(fs.Records()) == 0 {
		t.Fatalf("the reader got no records: %v", fs.Err())
	}
	member := kafkatest.WaitShareMembers(t, addr, group, 1).Members[0].MemberID
	adm := newAdmin(t, addr)
	before, err := adm.Group(ctx, group)
	if err != nil {
		t.Fatal(err)
	}

	_, err = adm.Reset(ctx, group, admin.ResetTo{Kind: admin.ResetEarliest}, "")
	if !errors.Is(err, admin.ErrGroupNotEmpty) || !strings.Contains(err.Error(), member) || !strings.Contains(err.Error(), "live-reader") {
		t.Errorf("reset of a live group: got %v, want %v naming member %s of client live-reader", err, admin.ErrGroupNotEmpty, member)
	}
	t.Logf("reset: %v", err)
	err = adm.DropGroup(ctx, group)
	if !errors.Is(err, admin.ErrGroupNotEmpty) || !strings.Contains(err.Error(), member) {
		t.Errorf("drop of a live group: got %v, want %v naming member %s", err, admin.ErrGroupNotEmpty, member)
	}
	after, err := adm.Group(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after.Partitions) != fmt.Sprint(before.Partitions) || len(after.Members) != 1 {
		t.Errorf("the refused reset changed the group: before %+v, after %+v", before, after)
	}
	if len(after.Members) == 1 && (after.Members[0].ClientID != "live-reader" || admin.FormatAssignment(after.Members[0].Assignment) != topic+"[0]") {
		t.Errorf("member row %+v, want client live-reader assigned %s[0]", after.Members[0], topic)
	}
}

// TestBadInput: each mistake gets its own error kind and a message that
// says what to fix, and changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	adm, addr, topic, group := settledGroup(t, 2, 10)
	ctx := kafkatest.Context(t)
	before, err := adm.Group(ctx, group)
	if err != nil {
		t.Fatal(err)
	}

	// A classic consumer group: committing offsets makes one.
	classic := kafkatest.GroupName(t)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if err := kafkatest.Admin(t, addr).CommitAllOffsets(ctx, classic, os); err != nil {
		t.Fatal(err)
	}

	check := func(what string, err, kind error, says ...string) {
		t.Helper()
		if !errors.Is(err, kind) {
			t.Errorf("%s: got %v, want an error wrapping %v", what, err, kind)
			return
		}
		for _, s := range says {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not say %q", what, err, s)
			}
		}
		t.Logf("%s: %v", what, err)
	}
	_, err = adm.Group(ctx, group+"x")
	check("unknown group", err, admin.ErrUnknownGroup, "does not exist", "did you mean '"+group+"'")
	_, err = adm.Group(ctx, classic)
	check("classic group", err, admin.ErrNotShareGroup, "'"+classic+"' is a classic consumer group, not a share group")
	_, err = adm.Reset(ctx, classic, admin.ResetTo{Kind: admin.ResetEarliest}, "")
	check("reset of a classic group", err, admin.ErrNotShareGroup, "classic consumer group")
	_, err = adm.Reset(ctx, group, admin.ResetTo{Kind: admin.ResetTimestamp, Time: time.Now().Add(time.Hour)}, "")
	check("future timestamp", err, admin.ErrFutureTimestamp, "in the future")
	_, err = adm.Reset(ctx, group, admin.ResetTo{Kind: admin.ResetOffset, Offset: 1000}, topic)
	check("offset past the end", err, admin.ErrOffsetOutOfRange, "holds offsets 0 to")
	_, err = adm.Reset(ctx, group, admin.ResetTo{Kind: admin.ResetEarliest}, topic+"x")
	check("unknown topic", err, admin.ErrUnknownTopic, "did you mean '"+topic+"'")
	_, err = adm.Topic(ctx, topic+"x")
	check("describe unknown topic", err, admin.ErrUnknownTopic, "did you mean '"+topic+"'")
	err = adm.DropGroup(ctx, group+"x")
	check("drop unknown group", err, admin.ErrUnknownGroup, "did you mean")
	err = adm.SetGroupConfig(ctx, group, map[string]string{"session.timeout.ms": "1000"})
	check("not a share config", err, admin.ErrInvalidConfig, "not a share group config")
	err = adm.SetGroupConfig(ctx, group, map[string]string{"share.no.such.config": "1"})
	check("unknown config", err, admin.ErrInvalidConfig, "share.no.such.config")
	// kfake checks config names, not values; Kafka refuses values out of
	// its range, and the error gives the range from the broker's configs.
	if kafkatest.Real() {
		err = adm.SetGroupConfig(ctx, group, map[string]string{"share.record.lock.duration.ms": "100"})
		check("lock duration out of range", err, admin.ErrInvalidConfig, "share.record.lock.duration.ms from 1000 to 60000")
		err = adm.SetGroupConfig(ctx, group, map[string]string{"share.delivery.count.limit": "100"})
		check("delivery count out of range", err, admin.ErrInvalidConfig, "share.delivery.count.limit from 2 to 10")
	}

	after, err := adm.Group(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("bad input changed the group: before %+v, after %+v", before, after)
	}
	cfg, err := adm.GroupConfigs(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg {
		if c.Name == "share.record.lock.duration.ms" && c.Source == "GROUP_CONFIG" {
			t.Errorf("a refused value was kept: %+v", c)
		}
	}
}

// TestGroupConfigsAndDrop: a config set shows with source GROUP_CONFIG, and
// an empty group can be dropped, after which it is unknown.
func TestGroupConfigsAndDrop(t *testing.T) {
	t.Parallel()
	adm, _, _, group := settledGroup(t, 1, 3)
	ctx := kafkatest.Context(t)

	if err := adm.SetGroupConfig(ctx, group, map[string]string{"share.record.lock.duration.ms": "5000"}); err != nil {
		t.Fatal(err)
	}
	want := []admin.Config{
		{Name: "share.record.lock.duration.ms", Value: "5000", Source: "GROUP_CONFIG"},
		{Name: "share.auto.offset.reset", Value: "earliest", Source: "GROUP_CONFIG"},
	}
	// Kafka applies a config change through its metadata log: a describe
	// sent at once may still show the old value.
	kafkatest.Eventually(t, "the configs set to show", func() error {
		cfg, err := adm.GroupConfigs(ctx, group)
		if err != nil {
			return err
		}
		got := map[string]admin.Config{}
		for _, c := range cfg {
			if !strings.HasPrefix(c.Name, "share.") {
				t.Errorf("config %s is not a share group's", c.Name)
			}
			got[c.Name] = c
		}
		for _, w := range want {
			if got[w.Name] != w {
				return fmt.Errorf("config %s: got %+v, want %+v", w.Name, got[w.Name], w)
			}
		}
		return nil
	})

	if err := adm.DropGroup(ctx, group); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.Group(ctx, group); !errors.Is(err, admin.ErrUnknownGroup) {
		t.Errorf("describing a dropped group: got %v, want %v", err, admin.ErrUnknownGroup)
	}
}

// TestTopics: SHOW TOPICS counts a topic's partitions and records; DESCRIBE
// TOPIC gives each partition's leader and offsets and the configs a reader
// cares about.
func TestTopics(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 2)
	kafkatest.Produce(t, addr, topic, kafkatest.Values(25)...)
	adm := newAdmin(t, addr)
	ctx := kafkatest.Context(t)

	rows, err := adm.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var row *admin.TopicRow
	for i := range rows {
		if rows[i].Name == topic {
			row = &rows[i]
		}
	}
	if row == nil || row.Partitions != 2 || row.Records != 25 {
		t.Fatalf("SHOW TOPICS row for %s: %+v, want 2 partitions and 25 records", topic, row)
	}
	if kafkatest.Real() && row.Size <= 0 {
		t.Errorf("SHOW TOPICS size %d, want the log's bytes", row.Size)
	}
	cols, vals := admin.Table(rows)
	if strings.Join(cols, ",") != "name,partitions,records,size" || len(vals) != len(rows) {
		t.Errorf("table of SHOW TOPICS: columns %v, %d rows", cols, len(vals))
	}

	d, err := adm.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var records int64
	for i, p := range d.Partitions {
		if p.Partition != int32(i) || p.Leader < 0 || p.StartOffset != 0 || p.Records != p.EndOffset {
			t.Errorf("partition row %+v", p)
		}
		records += p.Records
	}
	if len(d.Partitions) != 2 || records != 25 {
		t.Errorf("DESCRIBE TOPIC partitions %+v, want 2 holding 25 records", d.Partitions)
	}
	var names []string
	for _, c := range d.Configs {
		names = append(names, c.Name)
		if c.Value == "" || c.Source == "" {
			t.Errorf("config row %+v", c)
		}
	}
	if g := strings.Join(names, ","); g != strings.Join(admin.ReaderConfigs, ",") {
		t.Errorf("DESCRIBE TOPIC configs %s, want %s", g, strings.Join(admin.ReaderConfigs, ","))
	}
}

// TestUnreadPartitionLag: a partition the group has not read has no state
// on the broker (Kafka 4.3 says -1 for its start offset and lag); DESCRIBE
// then shows where share.auto.offset.reset will start the group, so that
// the lag of an earliest-starting group counts the records waiting there.
func TestUnreadPartitionLag(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 2)
	// Partition 1 stays empty, so no fetch ever gives the group state
	// there.
	p0 := make([]*kgo.Record, 5)
	for i := range p0 {
		p0[i] = &kgo.Record{Topic: topic, Partition: 0, Value: []byte{'a' + byte(i)}}
	}
	cl := kafkatest.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(kafkatest.Context(t), p0...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	group := kafkatest.ShareGroup(t, addr)
	readAndAccept(t, addr, group, topic, 5)
	adm := newAdmin(t, addr)
	waitEmpty(t, adm, group)
	ctx := kafkatest.Context(t)
	kafkatest.Eventually(t, "partition rows with known lags", func() error {
		d, err := adm.Group(ctx, group)
		if err != nil {
			return err
		}
		if len(d.Partitions) != 2 {
			return fmt.Errorf("partitions %+v, want 2", d.Partitions)
		}
		// Kafka 4.3.1 keeps start offset 0 here: it persists the
		// acknowledgements, not the start offset they let move on, until
		// its next write. The lag is exact all the same.
		if p := d.Partitions[0]; p.StartOffset < 0 || p.StartOffset > 5 || p.Lag != 0 || p.Estimated {
			return fmt.Errorf("partition 0: %+v, want a start offset from 0 to 5, lag 0 from the broker", p)
		}
		if p := d.Partitions[1]; p.StartOffset != 0 || p.Lag != 0 || p.EndOffset != 0 {
			return fmt.Errorf("partition 1: %+v, want start offset 0, lag 0", p)
		}
		t.Logf("the empty partition: %+v", d.Partitions[1])
		return nil
	})
}

// TestNotAuthorized: a principal without DESCRIBE on a group is told which
// operation on which resource it lacks. kfake only: the real test broker
// runs without an authorizer.
func TestNotAuthorized(t *testing.T) {
	t.Parallel()
	c := kafkatest.Fake(t, kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "reader", "reader", kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationDescribe, Allow: true,
		}))
	login := scram.Auth{User: "reader", Pass: "reader"}.AsSha256Mechanism()
	adm := admin.New(kafkatest.Client(t, c.ListenAddrs()[0], kgo.SASL(login)))
	ctx := kafkatest.Context(t)
	_, err := adm.Group(ctx, "orders-readers")
	if !errors.Is(err, admin.ErrNotAuthorized) || !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("describing a group without the ACL: got %v, want %v wrapping %v", err, admin.ErrNotAuthorized, kerr.GroupAuthorizationFailed)
	}
	for _, s := range []string{"not authorized to describe share group 'orders-readers'", "DESCRIBE on share group 'orders-readers'"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not say %q", err, s)
		}
	}
	t.Logf("%v", err)
}

// TestShareGroupsUnsupported: a cluster without the share-group requests
// (kfake posing as Kafka 3.9; the shared real broker cannot turn share
// groups off) gets one clear error, not franz-go's "broker is too old".
func TestShareGroupsUnsupported(t *testing.T) {
	t.Parallel()
	c := kafkatest.Fake(t, kfake.MaxVersions(kversion.V3_9_0()))
	adm := newAdmin(t, c.ListenAddrs()[0])
	ctx := kafkatest.Context(t)
	_, err := adm.Groups(ctx)
	if !errors.Is(err, admin.ErrNoShareGroups) || !strings.Contains(err.Error(), "does not support share groups") {
		t.Errorf("SHOW SHARE GROUPS: got %v, want %v", err, admin.ErrNoShareGroups)
	}
	_, err = adm.Reset(ctx, "g", admin.ResetTo{Kind: admin.ResetEarliest}, "")
	if !errors.Is(err, admin.ErrNoShareGroups) {
		t.Errorf("RESET: got %v, want %v", err, admin.ErrNoShareGroups)
	}
	t.Logf("%v", err)

	// A cluster that does not answer is not one without share groups.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Addr().String()
	l.Close()
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = newAdmin(t, gone).Groups(short)
	if err == nil || errors.Is(err, admin.ErrNoShareGroups) {
		t.Errorf("SHOW SHARE GROUPS on a closed port: got %v, want a connection error", err)
	}
	t.Logf("closed port: %v", err)
}

// TestNotAuthorizedReal: on the real broker (scripts/kafka.sh runs it with an
// authorizer that allows what no ACL names), an ACL denies the SASL user
// DESCRIBE on one share group; describing it is refused, and the error
// names the operation and the group. kfake has no such broker: there
// TestNotAuthorized shows the same with kfake's ACLs.
func TestNotAuthorizedReal(t *testing.T) {
	t.Parallel()
	sasl := kafkatest.RequireSASL(t)
	addr := kafkatest.Bootstrap(t)
	ctx := kafkatest.Context(t)
	group := kafkatest.GroupName(t)
	res, err := kafkatest.Admin(t, addr).CreateACLs(ctx, kadm.NewACLs().
		Groups(group).ResourcePatternType(kadm.ACLPatternLiteral).
		Deny("User:"+sasl.User).DenyHosts("*").Operations(kadm.OpDescribe))
	if err == nil && len(res) > 0 {
		err = res[0].Err
	}
	if err != nil {
		t.Fatalf("denying DESCRIBE on %s to User:%s: %v", group, sasl.User, err)
	}
	adm := admin.New(kafkatest.Client(t, "", sasl.Opts(t, "SCRAM-SHA-256")...))
	// The ACL reaches the broker through its metadata log: wait for it.
	kafkatest.Eventually(t, "DESCRIBE to be refused", func() error {
		_, err := adm.Group(ctx, group)
		if !errors.Is(err, admin.ErrNotAuthorized) {
			return fmt.Errorf("got %v", err)
		}
		if want := "not authorized to describe share group '" + group + "': the broker refused DESCRIBE on share group '" + group + "'"; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q does not begin with %q", err, want)
		}
		t.Logf("%v", err)
		return nil
	})
}
