package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/internal/kafkatest"
)

// windowTopic makes a topic of one partition holding n records {"id": i}
// stamped base + i*100 ms, so that one-second tumbling windows hold ten
// records each, window k the ids 10k to 10k+9, and names a group to read
// it. It returns a file with the DDL of table orders over it, with its
// Kafka timestamp as the event-time column kts, and extra WITH pairs; and
// the broker, the topic and the group.
func windowTopic(t *testing.T, n int, extra string) (path, addr, topic, group string) {
	t.Helper()
	addr = kafkatest.Bootstrap(t)
	topic = kafkatest.Topic(t, addr, 1)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, `{"id": %d}`, i), Timestamp: base.Add(time.Duration(i) * 100 * time.Millisecond)}
	}
	kafkatest.ProduceRecords(t, addr, rs...)
	group = kafkatest.GroupName(t)
	kafkatest.DescribeOnFailure(t, addr, group)
	ddl := strings.Replace(tableDDL("orders", addr, topic, group, extra), "(id BIGINT)",
		"(id BIGINT, kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp', WATERMARK FOR kts AS kts - INTERVAL '1' SECOND)", 1)
	path = filepath.Join(t.TempDir(), "orders.sql")
	if err := os.WriteFile(path, []byte(ddl+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, addr, topic, group
}

// TestWindowExportKilled: an export of a windowed count is killed
// mid-stream. A record is accepted only once a delivered row reflects it,
// so every record of a window is either counted by the last row of that
// window the killed export wrote (and synced) or comes again to a plain
// query of the group afterwards (which waits out the dead member's
// locks, 10 s on the test brokers): per window, what the killed export's
// rows counted plus what came again is at least the window's ten records.
func TestWindowExportKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for lock expiry")
	}
	// Enough records that the export is still running a second in (at
	// tens of thousands a second); small polls and batches make many
	// rounds of rows.
	const n, size = 100000, 10
	// Killed a second after its first rows: on the real broker a
	// delivered row's records are accepted up to about a second later
	// (on kfake at once), and the test wants some accepted. How far a
	// second takes the export depends on the machine (an idle one has
	// read all 100,000 records by then): a kill that did not land in the
	// middle is tried again, sooner or later, on a topic and group of
	// its own.
	after := time.Second
	for attempt := 1; ; attempt++ {
		reflected, again := windowExportKilledAfter(t, n, size, after)
		tried := after
		switch {
		case reflected >= n && attempt < 3:
			after /= 3
		case again > n-size && attempt < 3:
			after *= 2
		case reflected == 0 || reflected >= n:
			t.Fatalf("the killed export's rows counted %d of %d records in each of %d tries: the kill did not land in the middle", reflected, n, attempt)
		case again > n-size:
			t.Fatalf("%d of %d records came again: the killed export had accepted none in each of %d tries, so the kill tested nothing", again, n, attempt)
		default:
			return
		}
		t.Logf("the kill %v after the first rows did not land in the middle; again, killed %v after them", tried, after)
	}
}

// windowExportKilledAfter runs one try of TestWindowExportKilled on n
// records in windows of size, killing the export after the given time
// past its first rows, and fails the test if a window lost records. It
// returns how many records the killed export's rows counted and how many
// came again.
func windowExportKilledAfter(t *testing.T, n, size int, after time.Duration) (reflected, b int) {
	t.Helper()
	ddl, addr, topic, group := windowTopic(t, n, ", 'scan.batch-size' = '10', 'properties.max.poll.records' = '10'")
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.csv"), filepath.Join(dir, "second.csv")
	// MIN(id) / 10 names the window whatever part of it a row counts.
	const windowed = "SELECT MIN(id) / 10 AS w, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(kts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end"
	exportKilledThenRest(t, ddl, windowed, first, 1000, after, second, addr, topic, group)

	counted := windowRows(t, first)
	again := make([]int, n)
	b = readIDs(t, second, again, false)
	var short []string
	for w := range n / size {
		came := 0
		for _, c := range again[w*size : (w+1)*size] {
			came += c
		}
		reflected += counted[w]
		if counted[w]+came < size {
			short = append(short, fmt.Sprintf("window %d: %d counted + %d again", w, counted[w], came))
		}
	}
	// Those the rows counted but that did not come again were accepted.
	t.Logf("killed %v after its first rows, the export's rows counted %d records in %d windows; %d came again", after, reflected, len(counted), b)
	if len(short) > 0 {
		t.Fatalf("%d windows lost records that no delivered row reflected, e.g. %v", len(short), short[:min(len(short), 5)])
	}
	return reflected, b
}

// windowRows reads the CSV of a killed export of op, w, n rows (the
// updating result's op column first) and returns each window's count on
// its last +I or +U row.
func windowRows(t *testing.T, path string) map[int]int {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(wholeLines(t, path, true))).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != "op,w,n" {
		t.Fatalf("%s starts with %v, want the header op,w,n", path, recs[:min(len(recs), 1)])
	}
	counted := map[int]int{}
	for i, r := range recs[1:] {
		var w, c int
		if _, err := fmt.Sscan(r[1]+" "+r[2], &w, &c); err != nil {
			t.Fatalf("%s line %d is %v, not op, window, count", path, i+2, r)
		}
		if r[0] == "+I" || r[0] == "+U" {
			counted[w] = c
		}
	}
	return counted
}
