package kshare_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/kafkatest"
)

// peekRows reads sql to its end and returns each row's v, offset and
// delivery count as "v@offset#count", sorted.
func peekRows(t *testing.T, eng *kshare.Engine, sql string, opts ...kshare.QueryOption) []string {
	t.Helper()
	var out []string
	eachRow(t, eng, sql, func(b arrow.RecordBatch, i int) {
		v, o, d := b.Column(0).(*array.String), b.Column(1).(*array.Int64), b.Column(2).(*array.Int32)
		out = append(out, fmt.Sprintf("%s@%d#%d", v.Value(i), o.Value(i), d.Value(i)))
	}, opts...)
	slices.Sort(out)
	return out
}

// TestPeek: TABLE(PEEK(...)) run three times shows the
// same waiting records; afterwards the group's lag is what it was and every
// record, read through the group, comes with delivery count 1: the peeks
// took nothing.
func TestPeek(t *testing.T) {
	addr, topic, group := kafkatest.Queue(t, 2, kafkatest.Values(30)...)
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE t (v STRING, `+"`offset` BIGINT METADATA VIRTUAL, dc INT METADATA FROM 'delivery-count' VIRTUAL"+`) WITH (
	  'connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '`+addr+`', 'topic' = '`+topic+`', 'share-group-id' = '`+group+`',
	  'properties.max.poll.records' = '5', 'properties.share.acquire.mode' = 'record_limit')`)
	// The group reads some records first, so that it has start offsets;
	// record_limit acquires about what it delivers, so that most records
	// left have not been delivered yet.
	first := peekRows(t, eng, "SELECT v, `offset`, dc FROM t", kshare.MaxRows(5))
	lag := func() string {
		t.Helper()
		res := exec(t, eng, "DESCRIBE SHARE GROUP '"+group+"'")
		return fmt.Sprint(res.Rows)
	}
	var before string
	kafkatest.Eventually(t, "the group's lag to count the 5 records read", func() error {
		before = lag()
		res := exec(t, eng, "SHOW SHARE GROUPS")
		for _, r := range res.Rows {
			if r[0] == group && r[4] == "25" {
				return nil
			}
		}
		return fmt.Errorf("groups %v", res.Rows)
	})

	const peek = "SELECT v, `offset`, dc FROM TABLE(PEEK(TABLE t))"
	seen := peekRows(t, eng, peek)
	if len(seen) < 25 {
		t.Fatalf("peek shows %d records, want at least the 25 waiting: %v", len(seen), seen)
	}
	for i := 0; i < 2; i++ {
		if again := peekRows(t, eng, peek); fmt.Sprint(again) != fmt.Sprint(seen) {
			t.Errorf("peek %d shows %v, the first showed %v", i+2, again, seen)
		}
	}
	// WHERE and LIMIT apply to a peek as to any SELECT.
	if got := peekRows(t, eng, peek+" WHERE v = '29'"); len(got) != 1 {
		t.Errorf("peek WHERE v = '29': %v", got)
	}
	if after := lag(); after != before {
		t.Errorf("the peeks changed the group: before %s, after %s", before, after)
	}
	// A peek that took records would raise the delivery count of all 25.
	// The first query may have fetched one more poll (5 records) in the
	// background before it closed, and released it: those come with #2.
	rest := peekRows(t, eng, "SELECT v, `offset`, dc FROM t", kshare.MaxRows(25))
	var again []string
	for _, r := range rest {
		switch r[len(r)-2:] {
		case "#1":
		case "#2":
			again = append(again, r)
		default:
			t.Errorf("record %s was delivered twice before: a peek took it", r)
		}
	}
	if len(again) > 5 {
		t.Errorf("records %v were delivered before, more than the first query's one poll: a peek took them", again)
	}
	if all := append(slices.Clone(first), rest...); len(all) != 30 {
		t.Errorf("the group read %d records in all, want 30: %v", len(all), all)
	}
}

// TestPeekBeforeFirstRead: a table whose 'scan.startup.mode' is
// earliest-offset and whose group has not read yet shows every record, as
// its first query would read them; the peek does not make the group.
func TestPeekBeforeFirstRead(t *testing.T) {
	eng := kafkaEngine(t, numbers(7)...)
	got, _ := values(t, eng, "SELECT v FROM TABLE(PEEK(TABLE t))")
	if fmt.Sprint(sorted(got)) != fmt.Sprint(numbers(7)) {
		t.Errorf("peek before the first read: %v, want %v", got, numbers(7))
	}
	res := exec(t, eng, "DESCRIBE t")
	if !strings.Contains(res.Message, "the group does not exist yet") {
		t.Errorf("the peek made the group: %s", res.Message)
	}
}

// A WHERE over a peek consumes nothing, so the plan says it filters
// nothing away for good (and the shell gives no "WHERE consumes" note),
// while the same WHERE over the table itself does. Planning contacts no
// broker.
func TestPeekWhereTakesNothing(t *testing.T) {
	eng := kshare.New()
	exec(t, eng, `CREATE TABLE t (v STRING) WITH ('connector' = 'kafka-sharegroup', 'format' = 'raw',
	  'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'orders', 'share-group-id' = 'g')`)
	exec(t, eng, `CREATE TABLE k (v STRING) WITH ('connector' = 'kafka', 'format' = 'raw',
	  'properties.bootstrap.servers' = '127.0.0.1:1', 'topic' = 'orders')`)
	for sql, want := range map[string]bool{
		"SELECT v FROM k WHERE v = 'a'":                    false,
		"SELECT v FROM t WHERE v = 'a'":                    true,
		"SELECT v FROM TABLE(PEEK(TABLE t)) WHERE v = 'a'": false,
		"SELECT v FROM TABLE(PEEK(TABLE t))":               false,
	} {
		p, err := eng.Prepare(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if got := p.Filters(); got != want {
			t.Errorf("%s: Filters() = %v, want %v", sql, got, want)
		}
	}
}
