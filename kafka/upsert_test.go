package kafka_test

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	ktable "github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// upsertTable binds an upsert-kafka table (id BIGINT, name STRING) keyed
// by id over topic, with extra WITH pairs.
func upsertTable(t *testing.T, addr, topic, with string) *ktable.Bound {
	t.Helper()
	opts := map[string]string{"connector": "upsert-kafka", "value.format": "json", "key.format": "json", "properties.bootstrap.servers": addr, "topic": topic}
	for _, kv := range strings.Split(with, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			opts[k] = v
		}
	}
	def := ktable.NewDefinition("out", []types.Column{{Name: "id", Type: types.BigIntType().WithNotNull(true)}, {Name: "name", Type: types.StringType()}}, opts)
	def.PrimaryKey = &ktable.PrimaryKey{Columns: []string{"id"}}
	b, err := ktable.Bind(def)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An upsert-kafka writer writes +I and +U as records keyed by the row's
// key, -D as a tombstone, and nothing for -U.
func TestUpsertKafkaChanges(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	s, err := ktable.NewSink(upsertTable(t, addr, topic, ""))
	if err != nil {
		t.Fatal(err)
	}
	if ks, ok := s.(flow.KeyedSink); !ok || fmt.Sprint(ks.PrimaryKey()) != "[0]" {
		t.Fatalf("sink %T: want a KeyedSink keyed by column 0", s)
	}
	w, err := s.Open(kafkatest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cw, ok := w.(flow.ChangelogWriter)
	if !ok {
		t.Fatalf("writer %T takes no changes", w)
	}
	kinds := []flow.RowKind{flow.KindInsert, flow.KindInsert, flow.KindUpdateBefore, flow.KindUpdateAfter, flow.KindDelete}
	res := make(chan error, 1)
	if err := cw.WriteChanges(kafkatest.Context(t), batch(t, 1, 2, 1, 1, 2), kinds, func(err error) { res <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range kafkatest.ReadTopic(t, addr, topic, 4) {
		v := "<tombstone>"
		if r.Value != nil {
			v = string(r.Value)
		}
		got = append(got, string(r.Key)+" "+v)
	}
	want := []string{`{"id":1} {"id":1,"name":"n1"}`, `{"id":2} {"id":2,"name":"n2"}`, `{"id":1} {"id":1,"name":"n1"}`, `{"id":2} <tombstone>`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("topic holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := w.Stats(); st.Written != 5 || st.Acked != 5 {
		t.Errorf("stats %+v, want 5 rows written and acknowledged (the -U at once)", st)
	}
}

// INSERT INTO an upsert-kafka table of a GROUP BY count: the topic's latest
// record of each key is that key's count. An upsert-kafka table is
// refused without a key or a key format, and an aggregate not keyed as it
// is refused. Read back as a table, its rows are the counts.
func TestUpsertKafkaPipeline(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	src, dst := kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 1)
	const n, keys = 300, 7
	want := map[string]int{}
	var values [][]byte
	for i := range n {
		k := fmt.Sprintf("c%d", i*i%keys)
		want[k]++
		values = append(values, []byte(k))
	}
	kafkatest.Produce(t, addr, src, values...)
	eng := kshare.New()
	for _, sql := range []string{
		`CREATE TABLE src (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw', 'bootstrap.servers' = '` + addr +
			`', 'topic' = '` + src + `', 'share-group-id' = '` + kafkatest.ShareGroup(t, addr) + `')`,
		`CREATE TABLE counts (k STRING, n BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', 'topic' = '` + dst +
			`', 'properties.bootstrap.servers' = '` + addr + `', 'key.format' = 'raw', 'value.format' = 'json')`,
	} {
		if _, err := eng.Exec(kafkatest.Context(t), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	res, err := eng.Exec(kafkatest.Context(t), "INSERT INTO counts SELECT v, COUNT(*) FROM src GROUP BY v")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Job.Stop()
	kafkatest.Eventually(t, "every record accepted", func() error {
		if st := res.Job.Stats(); st.Accepted < n {
			return fmt.Errorf("job stats %+v", st)
		}
		return nil
	})
	res.Job.Stop()
	latest := map[string]string{}
	for _, r := range kafkatest.ReadTopic(t, addr, dst, int(kafkatest.TopicSize(t, addr, dst))) {
		latest[string(r.Key)] = string(r.Value)
	}
	for k, c := range want {
		if got, w := latest[k], fmt.Sprintf(`{"k":"%s","n":%d}`, k, c); got != w {
			t.Errorf("key %s: latest record %s, want %s", k, got, w)
		}
	}
	if len(latest) != len(want) {
		t.Errorf("%d keys in the topic, want %d", len(latest), len(want))
	}
	if _, err := eng.Exec(kafkatest.Context(t), `CREATE TABLE counts_now (k STRING, n BIGINT NOT NULL, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', 'topic' = '`+dst+
		`', 'properties.bootstrap.servers' = '`+addr+`', 'key.format' = 'raw', 'value.format' = 'json', 'scan.bounded.mode' = 'latest-offset')`); err != nil {
		t.Fatal(err)
	}
	rows, err := eng.Query(kafkatest.Context(t), "SELECT k, n FROM counts_now")
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]int{}
	for rows.Next() {
		b := rows.RecordBatch()
		for i := range int(b.NumRows()) {
			k, n := b.Column(0).ValueStr(i), b.Column(1).ValueStr(i)
			switch rows.Op(i) {
			case flow.KindInsert, flow.KindUpdateAfter:
				read[k], _ = strconv.Atoi(n)
			case flow.KindDelete:
				delete(read, k)
			}
		}
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(read, want) {
		t.Errorf("read back, the table is %v, want %v", read, want)
	}
	for _, c := range []struct{ sql, want string }{
		{`CREATE TABLE nokey (k STRING) WITH ('connector' = 'upsert-kafka', 'topic' = 'x', 'properties.bootstrap.servers' = '` + addr + `', 'key.format' = 'raw', 'value.format' = 'json')`,
			"needs a PRIMARY KEY (...) NOT ENFORCED"},
		{`CREATE TABLE nokeyformat (k STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', 'topic' = 'x', 'properties.bootstrap.servers' = '` + addr + `', 'value.format' = 'json')`,
			"key.format"},
		{"INSERT INTO counts SELECT UPPER(v), COUNT(*) FROM src GROUP BY v", "does not select every GROUP BY column"},
	} {
		var err error
		if strings.HasPrefix(c.sql, "SELECT") {
			rows, qerr := eng.Query(kafkatest.Context(t), c.sql)
			if err = qerr; err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
		} else {
			_, err = eng.Exec(kafkatest.Context(t), c.sql)
		}
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.sql, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.sql, err, c.want)
		}
	}
}
