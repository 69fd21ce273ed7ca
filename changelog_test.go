package kshare_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/tabletest"
)

// change is one row of a changelog as a query hands it out: its kind and
// its columns' values joined by '|'.
type change struct {
	kind flow.RowKind
	row  string
}

func (c change) String() string { return c.kind.String() + " " + c.row }

// changesOf runs sql to its end, over checked memory, and returns its rows
// with their kinds, in the order they came.
func changesOf(t *testing.T, eng *kshare.Engine, sql string) []change {
	t.Helper()
	rows, err := eng.Query(kafkatest.Context(t), sql, kshare.Allocator(tabletest.CheckedAlloc(t)))
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []change
	for rows.Next() {
		b := rows.RecordBatch()
		for i := range int(b.NumRows()) {
			var vs []string
			for _, c := range b.Columns() {
				vs = append(vs, c.ValueStr(i))
			}
			out = append(out, change{rows.Op(i), strings.Join(vs, "|")})
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// replay checks that changes are a valid changelog of a table keyed by its
// first column (a key's first change is +I; -U and -D carry the row the key
// has, a -U followed by the key's +U) and returns the rows it ends with.
func replay(t *testing.T, changes []change) map[string]string {
	t.Helper()
	state := map[string]string{}
	for i, c := range changes {
		key, _, _ := strings.Cut(c.row, "|")
		switch c.kind {
		case flow.KindInsert:
			if _, ok := state[key]; ok {
				t.Fatalf("change %d: %s inserts a key that has a row (%s)", i, c, state[key])
			}
			state[key] = c.row
		case flow.KindUpdateBefore:
			if state[key] != c.row || i+1 == len(changes) || changes[i+1].kind != flow.KindUpdateAfter || !strings.HasPrefix(changes[i+1].row, key+"|") {
				t.Fatalf("change %d: %s does not remove the row the key has (%s) before its +U", i, c, state[key])
			}
		case flow.KindUpdateAfter:
			if _, ok := state[key]; !ok || changes[i-1].kind != flow.KindUpdateBefore {
				t.Fatalf("change %d: %s updates a key without a -U before it", i, c)
			}
			state[key] = c.row
		case flow.KindDelete:
			if state[key] != c.row {
				t.Fatalf("change %d: %s does not delete the row the key has (%s)", i, c, state[key])
			}
			delete(state, key)
		}
	}
	return state
}

// ordersEngine is an engine with table orders (customer, qty) over a topic
// of partitions holding n orders of the given numbers of customers and
// quantities, read to its end, and the truth of the per-customer count and
// sum of qty, as "customer|count|sum".
func ordersEngine(t *testing.T, addr string, partitions int32, n, customers, qtys int) (*kshare.Engine, map[string]string) {
	t.Helper()
	src := kafkatest.Topic(t, addr, partitions)
	var values [][]byte
	count, sum := map[string]int64{}, map[string]int64{}
	for i := range n {
		c, q := fmt.Sprintf("c%d", i%customers), int64(i%qtys+1)
		values = append(values, fmt.Appendf(nil, `{"customer": %q, "qty": %d}`, c, q))
		count[c]++
		sum[c] += q
	}
	kafkatest.Produce(t, addr, src, values...)
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE orders (customer STRING, qty BIGINT) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+src+`', 'scan.startup.mode' = 'earliest-offset',
	  'scan.bounded.mode' = 'latest-offset', 'scan.batch-size' = '50')`)
	want := map[string]string{}
	for c := range count {
		want[c] = fmt.Sprintf("%s|%d|%d", c, count[c], sum[c])
	}
	return eng, want
}

// runToEnd runs an INSERT and waits for its job to end, failing t if it
// fails.
func runToEnd(t *testing.T, eng *kshare.Engine, sql string) {
	t.Helper()
	res := exec(t, eng, sql)
	if err := res.Job.Wait(kafkatest.Context(t)); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// changelogDDL is a 'kafka' table of per-customer counts in debezium-json
// over topic, read to its end.
func changelogDDL(name, addr, topic string) string {
	return `CREATE TABLE ` + name + ` (customer STRING, n BIGINT, total BIGINT, PRIMARY KEY (customer) NOT ENFORCED) WITH (
	  'connector' = 'kafka', 'format' = 'debezium-json', 'properties.bootstrap.servers' = '` + addr + `',
	  'topic' = '` + topic + `', 'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset')`
}

// A changelog written as debezium-json and read back equals the original:
// an aggregate's changes written to a 'kafka' table in debezium-json read
// back as a valid changelog whose end state is the aggregate's result,
// computed here from the orders; its records are the Debezium envelopes
// the rows say (read here with a JSON parser of the test's own); and that
// changelog copied by kshare into a second table reads back the same,
// change for change.
func TestDebeziumChangelogRoundTrip(t *testing.T) {
	t.Parallel()
	const n = 600
	addr := kafkatest.Bootstrap(t)
	eng, want := ordersEngine(t, addr, 1, n, 7, 5)
	first, second := kafkatest.Topic(t, addr, 1), kafkatest.Topic(t, addr, 1)
	exec(t, eng, changelogDDL("counts", addr, first))
	exec(t, eng, changelogDDL("copied", addr, second))

	run := func(sql string) { runToEnd(t, eng, sql) }
	run("INSERT INTO counts SELECT customer, COUNT(*), SUM(qty) FROM orders GROUP BY customer")
	got := changesOf(t, eng, "SELECT * FROM counts")

	// A valid changelog of inserts and updates (an aggregate of inserts
	// deletes nothing).
	state := replay(t, got)
	for i, c := range got {
		if c.kind == flow.KindDelete {
			t.Fatalf("change %d: %s, an aggregate of inserts deletes nothing", i, c)
		}
	}
	if !maps.Equal(state, want) {
		t.Errorf("the changelog ends at %v, want %v", state, want)
	}
	if updates := len(got) - len(want); updates < 2*len(want) {
		t.Errorf("%d changes for %d keys: the test wants updates to read back", len(got), len(want))
	}

	// The records are Debezium's envelopes: an update is one record with
	// "before" and "after".
	var envelopes []change
	for _, r := range kafkatest.ReadTopic(t, addr, first, int(kafkatest.TopicSize(t, addr, first))) {
		v := r.Value
		var e struct {
			Before, After map[string]any
			Op            string
		}
		if err := json.Unmarshal(v, &e); err != nil {
			t.Fatalf("record %s: %v", v, err)
		}
		row := func(m map[string]any) string {
			return fmt.Sprintf("%v|%v|%v", m["customer"], m["n"], m["total"])
		}
		switch e.Op {
		case "c":
			envelopes = append(envelopes, change{flow.KindInsert, row(e.After)})
		case "u":
			envelopes = append(envelopes, change{flow.KindUpdateBefore, row(e.Before)}, change{flow.KindUpdateAfter, row(e.After)})
		default:
			t.Fatalf("record %s: op %q", v, e.Op)
		}
	}
	if !slices.Equal(envelopes, got) {
		t.Errorf("the topic's envelopes say\n%v\nthe table reads\n%v", envelopes, got)
	}

	// Copied through kshare, the changelog reads back change for change.
	run("INSERT INTO copied SELECT * FROM counts")
	if again := changesOf(t, eng, "SELECT * FROM copied"); !slices.Equal(again, got) {
		t.Errorf("copied, the changelog reads\n%v\nwant\n%v", again, got)
	}

	// A changelog passes through WHERE and expressions row by row, each
	// row keeping its kind.
	filtered := changesOf(t, eng, "SELECT customer, n * 2 FROM counts WHERE customer = 'c3'")
	var wantFiltered []change
	for _, c := range got {
		if strings.HasPrefix(c.row, "c3|") {
			var nn int64
			fmt.Sscanf(strings.Split(c.row, "|")[1], "%d", &nn)
			wantFiltered = append(wantFiltered, change{c.kind, fmt.Sprintf("c3|%d", 2*nn)})
		}
	}
	if !slices.Equal(filtered, wantFiltered) {
		t.Errorf("filtered, the changelog reads\n%v\nwant\n%v", filtered, wantFiltered)
	}
}

// What cannot take a changelog says so, and what to do: an aggregate over
// one, a share group reading one, an append-only sink written from one.
func TestChangelogRefusals(t *testing.T) {
	t.Parallel()
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	eng := kshare.New()
	exec(t, eng, changelogDDL("counts", addr, topic))
	_, err := eng.Query(kafkatest.Context(t), "SELECT COUNT(*) FROM counts")
	if err == nil || !strings.Contains(err.Error(), "is a changelog") || !strings.Contains(err.Error(), "GROUP BY and aggregates take inserts only") {
		t.Errorf("an aggregate over a changelog: %v", err)
	}
	_, err = eng.Exec(kafkatest.Context(t), `CREATE TABLE shared (customer STRING, n BIGINT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'debezium-json',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = 'g')`)
	if err == nil || !strings.Contains(err.Error(), "read its topic with 'connector' = 'kafka'") {
		t.Errorf("a changelog through a share group: %v", err)
	}
	exec(t, eng, `CREATE TABLE plain (customer STRING, n BIGINT, total BIGINT) WITH ('connector' = 'kafka', 'format' = 'json',
	  'properties.bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`')`)
	_, err = eng.Exec(kafkatest.Context(t), "INSERT INTO plain SELECT * FROM counts")
	if err == nil || !strings.Contains(err.Error(), "updating") {
		t.Errorf("a changelog into an append-only sink: %v", err)
	}
}

// A changelog query's key is its table's PRIMARY KEY where the query
// selects the key's columns as they are, whatever the case they are named
// in; without them it has none.
func TestChangelogUpsertKey(t *testing.T) {
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE counts (customer STRING, n BIGINT, PRIMARY KEY (CUSTOMER) NOT ENFORCED) WITH (
	  'connector' = 'kafka', 'format' = 'debezium-json', 'properties.bootstrap.servers' = '127.0.0.1:9', 'topic' = 't')`)
	for sql, want := range map[string][]int{
		"SELECT n, customer FROM counts":        {1},
		"SELECT n, Customer AS c FROM counts":   {1},
		"SELECT n, UPPER(customer) FROM counts": nil,
	} {
		p, err := eng.Prepare(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		got, ok := p.UpsertKey()
		if !p.Updating() || !slices.Equal(got, want) || ok != (want != nil) {
			t.Errorf("%s: key %v (%t), want %v", sql, got, ok, want)
		}
	}
}
