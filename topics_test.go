package kshare_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/admin"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/options"
)

// execErr runs sql, which must fail with an error of kind that says each
// of says.
func execErr(t *testing.T, eng *kshare.Engine, sql string, kind error, says ...string) {
	t.Helper()
	_, err := eng.Exec(kafkatest.Context(t), sql)
	if !errors.Is(err, kind) {
		t.Errorf("%s: got %v, want %v", sql, err, kind)
		return
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: %q does not say %q", sql, err, s)
		}
	}
}

// TestCreateTopicForSink: a sink topic made with CREATE TOPIC takes an
// INSERT at once, on the cluster of the session's tables, with the
// partitions and configs of its WITH clause; a second CREATE is refused
// unless IF NOT EXISTS, and bad keys are refused before the cluster is
// asked.
func TestCreateTopicForSink(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(5)...)
	sink := kafkatest.TopicName(t)
	eng := kshare.New()
	exec(t, eng, tableDDL("t", addr, topic, group))

	// The sink writes no key, which a compacted topic would refuse.
	res := exec(t, eng, "CREATE TOPIC "+sink+" WITH ('partitions' = '2', 'retention.ms' = '3600000', 'max.message.bytes' = '65536')")
	if want := "topic '" + sink + "' created: 2 partition(s), replication 1; retention.ms = '3600000', max.message.bytes = '65536'"; res.Message != want {
		t.Errorf("CREATE TOPIC says %q, want %q", res.Message, want)
	}
	res = exec(t, eng, "DESCRIBE TOPIC "+sink)
	if len(res.Rows) != 2 || !strings.Contains(res.Message, "retention.ms = 3600000 (DYNAMIC_TOPIC_CONFIG)") ||
		!strings.Contains(res.Message, "max.message.bytes = 65536 (DYNAMIC_TOPIC_CONFIG)") {
		t.Errorf("DESCRIBE TOPIC of the new topic: %d rows, %q", len(res.Rows), res.Message)
	}
	execErr(t, eng, "CREATE TOPIC "+sink, admin.ErrTopicExists, "topic '"+sink+"' already exists")
	if res := exec(t, eng, "CREATE TOPIC IF NOT EXISTS "+sink+" WITH ('partitions' = '5')"); res.Message != "topic '"+sink+"' already exists; nothing changed" {
		t.Errorf("CREATE TOPIC IF NOT EXISTS of an existing topic says %q", res.Message)
	}
	execErr(t, eng, "CREATE TOPIC other WITH ('partitions' = '0', 'partiton' = '3')", options.ErrInvalid,
		"topic 'other': ", "'partitions' must be 1 or more", "(did you mean 'partitions'?)")
	execErr(t, eng, "CREATE TOPIC other WITH ('replication' = '100')", admin.ErrInvalidConfig, "creating topic 'other': the broker refused 'replication' = '100'")

	exec(t, eng, `CREATE TABLE out (v STRING) WITH ('connector' = 'kafka', 'format' = 'raw',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+sink+`', 'scan.bounded.mode' = 'latest-offset')`)
	exec(t, eng, "SET 'idle-timeout' = '0'")
	job := exec(t, eng, "INSERT INTO out SELECT v FROM t").Job
	kafkatest.Eventually(t, "5 rows written and accepted", func() error {
		if st := job.Stats(); st.Written != 5 || st.Accepted != 5 {
			return fmt.Errorf("%s: %d written, %d accepted (%v)", st.State, st.Written, st.Accepted, st.Err)
		}
		return nil
	})
	job.Stop()
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}
	if got := kafkatest.ReadTopic(t, addr, sink, 5); len(got) != 5 {
		t.Errorf("%d records in the sink topic, want 5", len(got))
	}
}

// TestDropTopic: DROP TOPIC refuses a topic that a running query or job of
// the session reads, naming each and its share group, and deletes it once
// none does; a missing topic is an error unless IF EXISTS.
func TestDropTopic(t *testing.T) {
	t.Parallel()
	addr, topic, group := kafkatest.Queue(t, 1, kafkatest.Values(3)...)
	eng := kshare.New()
	exec(t, eng, tableDDL("t", addr, topic, group))

	ctx, cancel := context.WithCancel(kafkatest.Context(t))
	defer cancel()
	rows, err := eng.Query(ctx, "SELECT v FROM t")
	if err != nil {
		t.Fatal(err)
	}
	execErr(t, eng, "DROP TOPIC "+topic, kshare.ErrTopicInUse,
		"cannot drop topic '"+topic+"': topic in use by the session: a query (SELECT v FROM t) through share group '"+group+"'",
		"stop what reads it first (end the query)")
	// Another topic is not this one.
	execErr(t, eng, "DROP TOPIC "+topic+"x", admin.ErrUnknownTopic, "topic '"+topic+"x' does not exist (did you mean '"+topic+"'?)")
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}

	exec(t, eng, `CREATE TABLE out (v STRING) WITH ('connector' = 'blackhole')`)
	exec(t, eng, "SET 'idle-timeout' = '0'")
	job := exec(t, eng, "INSERT INTO out SELECT v FROM t").Job
	execErr(t, eng, "DROP TOPIC `"+topic+"`", kshare.ErrTopicInUse,
		"job 1 (INSERT INTO 'out') through share group '"+group+"'", "(STOP JOB '1')")
	exec(t, eng, "STOP JOB '1'")
	if err := job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatal(err)
	}

	if res := exec(t, eng, "DROP TOPIC '"+topic+"'"); res.Message != "topic '"+topic+"' dropped, with every record in it" {
		t.Errorf("DROP TOPIC says %q", res.Message)
	}
	execErr(t, eng, "DESCRIBE TOPIC "+topic, admin.ErrUnknownTopic, "does not exist")
	execErr(t, eng, "DROP TOPIC "+topic, admin.ErrUnknownTopic, "topic '"+topic+"' does not exist")
	if res := exec(t, eng, "DROP TOPIC IF EXISTS "+topic); res.Message != "topic '"+topic+"' does not exist; nothing dropped" {
		t.Errorf("DROP TOPIC IF EXISTS of a missing topic says %q", res.Message)
	}

	// With no table and no SET, there is no cluster to drop from.
	execErr(t, kshare.New(), "DROP TOPIC "+topic, kshare.ErrNoCluster, "SET 'properties.bootstrap.servers'")
	execErr(t, kshare.New(), "CREATE TOPIC "+topic, kshare.ErrNoCluster, "SET 'properties.bootstrap.servers'")
}
