package kshare_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/table"
)

// tableDDL is a kafka-sharegroup table t of raw values with its partition
// and offset, over topic on addr, read by group from the earliest offset.
func tableDDL(name, addr, topic, group string) string {
	return `CREATE TABLE ` + name + ` (v STRING, ` + "`partition` INT METADATA VIRTUAL, `offset` BIGINT METADATA VIRTUAL" + `) WITH (
	  'connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '` + addr + `', 'topic' = '` + topic + `',
	  'share-group-id' = '` + group + `', 'scan.startup.mode' = 'earliest-offset')`
}

func exec(t *testing.T, eng *kshare.Engine, sql string) *table.Result {
	t.Helper()
	res, err := eng.Exec(kafkatest.Context(t), sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

// TestClusterChoice: the statements about the cluster run on the cluster
// SET names, else on the one the tables name; with none or several they
// say how to pick one.
func TestClusterChoice(t *testing.T) {
	eng := kshare.New()
	ctx := context.Background()
	_, err := eng.Exec(ctx, "SHOW TOPICS")
	if !errors.Is(err, kshare.ErrNoCluster) || !strings.Contains(err.Error(), "SET 'properties.bootstrap.servers' = 'host:9092'") {
		t.Errorf("no cluster: %v", err)
	}
	exec(t, eng, tableDDL("a", "a.example:9092", "t", "g"))
	exec(t, eng, tableDDL("b", "b.example:9092", "t", "g"))
	exec(t, eng, tableDDL("c", "b.example:9092", "u", "g"))
	_, err = eng.Exec(ctx, "SHOW SHARE GROUPS")
	want := "no cluster chosen: the session's tables read 2 clusters: a.example:9092 (tables 'a'); b.example:9092 (tables 'b', 'c'); pick one with SET 'properties.bootstrap.servers'"
	if !errors.Is(err, kshare.ErrNoCluster) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("two clusters: %v", err)
	}

	// SET checks each key as a table's WITH clause does, masks secrets,
	// and lists them under SET.
	for sql, want := range map[string]string{
		"SET 'properties.max.poll.records' = '10'":   "unsupported option 'properties.max.poll.records' for the session's cluster",
		"SET 'properties.security.protocol' = 'TLS'": "'properties.security.protocol'",
		"SET 'properties.bootstrap.servers' = 'h'":   "properties.bootstrap.servers",
	} {
		if _, err := eng.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to mention %q", sql, err, want)
		}
	}
	res := exec(t, eng, "SET 'properties.sasl.password' = 'hunter22'")
	if strings.Contains(res.Message, "hunter22") {
		t.Errorf("SET shows the password: %s", res.Message)
	}
	list := exec(t, eng, "SET")
	if !strings.Contains(fmt.Sprint(list.Rows), "[properties.sasl.password ******]") {
		t.Errorf("SET does not list the masked password: %v", list.Rows)
	}
	// The rules between keys are checked when the cluster is used.
	exec(t, eng, "SET 'bootstrap.servers' = 'a.example:9092'")
	if _, err := eng.Exec(ctx, "SHOW TOPICS"); err == nil || !strings.Contains(err.Error(), "'properties.sasl.password' needs 'properties.security.protocol'") {
		t.Errorf("password without SASL: %v", err)
	}
	exec(t, eng, "RESET 'properties.sasl.password'")

	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 2)
	exec(t, eng, "SET 'properties.bootstrap.servers' = '"+addr+"'")
	res = exec(t, eng, "SHOW TOPICS")
	if !strings.Contains(fmt.Sprint(res.Rows), "["+topic+" 2 0 ") {
		t.Errorf("SHOW TOPICS on the SET cluster does not list %s with 2 partitions: %v", topic, res.Rows)
	}
	// RESET forgets the SET cluster: the tables' two clusters are back,
	// though a security key of the SET cluster stays set for the next.
	exec(t, eng, "SET 'properties.security.protocol' = 'SASL_SSL'")
	exec(t, eng, "RESET 'properties.bootstrap.servers'")
	if _, err := eng.Exec(ctx, "SHOW TOPICS"); !errors.Is(err, kshare.ErrNoCluster) {
		t.Errorf("after RESET: %v", err)
	}
}

// readRows reads up to n rows of sql and returns how many came from each
// partition; Close settles them (accepts what was delivered).
func readRows(t *testing.T, eng *kshare.Engine, sql string, n int64) (map[string]int64, []string) {
	t.Helper()
	per := map[string]int64{}
	var offsets []string
	eachRow(t, eng, sql, func(b arrow.RecordBatch, i int) {
		p, o := b.Column(1).(*array.Int32).Value(i), b.Column(2).(*array.Int64).Value(i)
		per[fmt.Sprint(p)]++
		offsets = append(offsets, fmt.Sprintf("%d/%d", p, o))
	}, kshare.MaxRows(n))
	return per, offsets
}

// TestDescribeShareGroupLag: on a topic of 10,000
// records read halfway by a share group whose reader then stopped,
// DESCRIBE SHARE GROUP shows per partition the records not accepted, as the
// reader counted them, and the lag metric says the same.
func TestDescribeShareGroupLag(t *testing.T) {
	addr, topic, group := kafkatest.Queue(t, 3, kafkatest.Values(10_000)...)
	eng := kshare.New()
	exec(t, eng, tableDDL("t", addr, topic, group))
	accepted, _ := readRows(t, eng, "SELECT v, `partition`, `offset` FROM t", 5_000)
	ends := map[string]int64{}
	res := exec(t, eng, "DESCRIBE TOPIC "+topic)
	for _, r := range res.Rows {
		var end int64
		fmt.Sscan(r[3], &end)
		ends[r[0]] = end
	}
	// A partition the producer's sticky batches left empty has no share
	// state for the group to report (kfake reports no row for it; Kafka
	// reports lag 0): only partitions that hold records are compared.
	want := map[string]string{}
	var total int64
	for p, end := range ends {
		if end == 0 {
			continue
		}
		want[p] = fmt.Sprint(end - accepted[p])
		total += end - accepted[p]
	}
	holding := func(m map[string]string) map[string]string {
		for p := range m {
			if ends[p] == 0 {
				delete(m, p)
			}
		}
		return m
	}
	if total != 5_000 {
		t.Fatalf("%d records left of 10,000 after reading 5,000: %v", total, accepted)
	}
	adm := admin.New(kafkatest.Client(t, addr))
	reg := prometheus.NewRegistry()
	reg.MustRegister(admin.NewLagCollector(adm, func() []string { return []string{group} }, 1))
	// Kafka persists the group's start offsets a moment after the
	// acknowledgements: wait for the figures to settle.
	kafkatest.Eventually(t, "DESCRIBE SHARE GROUP and the metric to show the lag counted", func() error {
		res, err := eng.Exec(kafkatest.Context(t), "DESCRIBE SHARE GROUP '"+group+"'")
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, r := range res.Rows {
			got[r[1]] = r[4]
		}
		if fmt.Sprint(holding(got)) != fmt.Sprint(want) {
			return fmt.Errorf("DESCRIBE SHARE GROUP lag by partition %v, counted %v", got, want)
		}
		if !strings.Contains(res.Message, fmt.Sprint("lag ", total)) {
			return fmt.Errorf("message %q does not give the total lag %d", res.Message, total)
		}
		mfs, err := reg.Gather()
		if err != nil {
			return err
		}
		metric := map[string]string{}
		for _, mf := range mfs {
			if mf.GetName() != "kshare_share_group_lag" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var p string
				for _, l := range m.GetLabel() {
					if l.GetName() == "partition" {
						p = l.GetValue()
					}
				}
				metric[p] = fmt.Sprint(m.GetGauge().GetValue())
			}
		}
		if fmt.Sprint(holding(metric)) != fmt.Sprint(want) {
			return fmt.Errorf("kshare_share_group_lag by partition %v, counted %v", metric, want)
		}
		return nil
	})
}

// TestResetToEarliest: RESET TO EARLIEST of an empty
// group makes the next SELECT read the topic from the start; while a query
// reads, the reset is refused naming its member, and nothing moves.
func TestResetToEarliest(t *testing.T) {
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(20)...)
	eng := kshare.New()
	exec(t, eng, tableDDL("t", addr, topic, group))
	const sel = "SELECT v, `partition`, `offset` FROM t"
	_, first := readRows(t, eng, sel, 20)
	if len(first) != 20 {
		t.Fatalf("first read: %v", first)
	}

	// A live member: the reset names it.
	rows, err := eng.Query(kafkatest.Context(t), sel)
	if err != nil {
		t.Fatal(err)
	}
	d := kafkatest.WaitShareMembers(t, addr, group, 1)
	_, err = eng.Exec(kafkatest.Context(t), "ALTER SHARE GROUP '"+group+"' RESET TO EARLIEST")
	if !errors.Is(err, admin.ErrGroupNotEmpty) || !strings.Contains(err.Error(), d.Members[0].MemberID) {
		t.Errorf("reset of a group with member %s: %v", d.Members[0].MemberID, err)
	}
	rows.Close()
	kafkatest.WaitShareMembers(t, addr, group, 0)

	res := exec(t, eng, "ALTER SHARE GROUP '"+group+"' RESET TO EARLIEST")
	if want := fmt.Sprint([][]string{{topic, "0", res.Rows[0][2], "0"}}); fmt.Sprint(res.Rows) != want {
		t.Errorf("reset rows %v, want %s", res.Rows, want)
	}
	_, again := readRows(t, eng, sel, 20)
	if fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("after RESET TO EARLIEST read %v, want the topic again from the start: %v", again, first)
	}
}

// demoOrders are the demo's orders (testdata/orders.jsonl), one JSON
// object a value, and their customers.
func demoOrders(t *testing.T) (values [][]byte, customers []string) {
	t.Helper()
	b, err := os.ReadFile("testdata/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var o struct{ Customer string }
		if err := json.Unmarshal(l, &o); err != nil {
			t.Fatal(err)
		}
		values, customers = append(values, l), append(customers, o.Customer)
	}
	return values, customers
}

// TestDescribeTopicProposal: DESCRIBE TOPIC on a topic
// of the demo's orders proposes a CREATE TABLE that, run as it is printed,
// makes a table whose SELECT returns the records.
func TestDescribeTopicProposal(t *testing.T) {
	orders, customers := demoOrders(t)
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, orders...)
	eng := kshare.New()
	exec(t, eng, "SET 'properties.bootstrap.servers' = '"+addr+"'")
	res := exec(t, eng, "DESCRIBE TOPIC "+topic)
	const lead = "then run it:\n"
	i := strings.Index(res.Message, lead)
	if i < 0 || !strings.Contains(res.Message, fmt.Sprintf("latest %d record(s)", len(orders))) {
		t.Fatalf("no proposal from %d records in:\n%s", len(orders), res.Message)
	}
	ddl := res.Message[i+len(lead):]
	exec(t, eng, ddl)
	got, _ := values(t, eng, "SELECT customer FROM `"+topic+"`", kshare.MaxRows(int64(len(orders))))
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(customers)) {
		t.Errorf("the proposed table gave the customers %v, want %v", sorted(got), sorted(customers))
	}
}

// TestClusterBadInput: what the scenarios cannot set up, through SQL: a
// classic consumer group named as a share group, a principal the ACLs
// refuse (connected with the session's 'properties.*' SASL keys), and a
// cluster without share groups. Each is a clear error.
func TestClusterBadInput(t *testing.T) {
	ctx := kafkatest.Context(t)
	addr, topic, _ := kafkatest.Queue(t, 1, kafkatest.Values(3)...)
	classic := kafkatest.GroupName(t) + "-classic"
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	if err := kafkatest.Admin(t, addr).CommitAllOffsets(ctx, classic, offs); err != nil {
		t.Fatal(err)
	}
	eng := kshare.New()
	exec(t, eng, "SET 'properties.bootstrap.servers' = '"+addr+"'")
	_, err := eng.Exec(ctx, "DESCRIBE SHARE GROUP '"+classic+"'")
	if !errors.Is(err, admin.ErrNotShareGroup) || !strings.Contains(err.Error(), "'"+classic+"' is a classic consumer group, not a share group") {
		t.Errorf("classic group: %v", err)
	}
	_, err = eng.Exec(ctx, "ALTER SHARE GROUP '"+classic+"' RESET TO EARLIEST")
	if !errors.Is(err, admin.ErrNotShareGroup) {
		t.Errorf("reset of a classic group: %v", err)
	}

	acl := kafkatest.Fake(t, kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin"),
		kfake.User("SCRAM-SHA-256", "reader", "reader", kfake.ACL{
			Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral,
			Operation: kmsg.ACLOperationDescribe, Allow: true,
		}))
	eng = kshare.New()
	_, err = eng.Exec(ctx, `SET 'properties.bootstrap.servers' = '`+acl.ListenAddrs()[0]+`';
		SET 'properties.security.protocol' = 'SASL_PLAINTEXT';
		SET 'properties.sasl.mechanism' = 'SCRAM-SHA-256';
		SET 'properties.sasl.username' = 'reader';
		SET 'properties.sasl.password' = 'reader'`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = eng.Exec(ctx, "DESCRIBE SHARE GROUP 'orders-readers'")
	if !errors.Is(err, admin.ErrNotAuthorized) || !strings.Contains(err.Error(), "the broker refused DESCRIBE on share group 'orders-readers'") {
		t.Errorf("refused by the ACLs: %v", err)
	}

	old := kafkatest.Fake(t, kfake.MaxVersions(kversion.V3_9_0()))
	eng = kshare.New()
	exec(t, eng, "SET 'properties.bootstrap.servers' = '"+old.ListenAddrs()[0]+"'")
	_, err = eng.Exec(ctx, "SHOW SHARE GROUPS")
	if !errors.Is(err, admin.ErrNoShareGroups) || !strings.Contains(err.Error(), "does not support share groups") {
		t.Errorf("a cluster without share groups: %v", err)
	}
}

// TestProposalConnectsAsTheSession: on a cluster that needs SASL, the
// proposed table carries the session's 'properties.*' keys, the password
// masked; with the password put back it reads the records.
func TestProposalConnectsAsTheSession(t *testing.T) {
	ctx := kafkatest.Context(t)
	c := kafkatest.Fake(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "admin", "s3cret-pw"), kfake.SeedTopics(1, "orders"))
	addr := c.ListenAddrs()[0]
	login := scram.Auth{User: "admin", Pass: "s3cret-pw"}.AsSha256Mechanism()
	cl := kafkatest.Client(t, addr, kgo.SASL(login))
	orders, customers := demoOrders(t)
	for _, o := range orders {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Value: o}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	eng := kshare.New()
	exec(t, eng, `SET 'properties.bootstrap.servers' = '`+addr+`';
		SET 'properties.security.protocol' = 'SASL_PLAINTEXT';
		SET 'properties.sasl.mechanism' = 'SCRAM-SHA-256';
		SET 'properties.sasl.username' = 'admin';
		SET 'properties.sasl.password' = 's3cret-pw'`)
	res := exec(t, eng, "DESCRIBE TOPIC orders")
	if strings.Contains(res.Message, "s3cret-pw") {
		t.Fatalf("the proposal shows the password:\n%s", res.Message)
	}
	const lead = "put the secrets in place of ******, then run it:\n"
	i := strings.Index(res.Message, lead)
	if i < 0 {
		t.Fatalf("no proposal with a masked secret in:\n%s", res.Message)
	}
	ddl := res.Message[i+len(lead):]
	for _, want := range []string{"'properties.security.protocol' = 'SASL_PLAINTEXT'", "'properties.sasl.username' = 'admin'", "'properties.sasl.password' = '******'"} {
		if !strings.Contains(ddl, want) {
			t.Errorf("the proposal does not say %s:\n%s", want, ddl)
		}
	}
	exec(t, eng, strings.Replace(ddl, "******", "s3cret-pw", 1))
	got, _ := values(t, eng, "SELECT customer FROM orders", kshare.MaxRows(int64(len(orders))))
	if fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(customers)) {
		t.Errorf("the proposed table gave the customers %v, want %v", sorted(got), sorted(customers))
	}
}

// TestDescribeTableUnreachable: DESCRIBE of a table whose cluster does not
// answer still shows the columns, and says within DescribeLagTimeout that
// the lag is unknown and why.
func TestDescribeTableUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Addr().String()
	l.Close()
	eng := kshare.New()
	exec(t, eng, tableDDL("t", gone, "topic", "g"))
	start := time.Now()
	res := exec(t, eng, "DESCRIBE t")
	if took := time.Since(start); took > kshare.DescribeLagTimeout+2*time.Second {
		t.Errorf("DESCRIBE took %v", took)
	}
	if len(res.Rows) != 3 || !strings.HasPrefix(res.Message, "reads share group 'g' on "+gone+"; lag unknown: ") {
		t.Errorf("DESCRIBE of a table on a closed port: %d rows, %q", len(res.Rows), res.Message)
	}
	t.Log(res.Message)
}
