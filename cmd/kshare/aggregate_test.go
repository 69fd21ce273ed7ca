package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestDemoCountStar: in the demo, SELECT COUNT(*) FROM orders is one row
// that updates in place, as in Flink's table result mode: each batch draws
// the table again over the one before (the cursor goes up over its five
// lines), so the screen keeps one row while the count grows.
func TestDemoCountStar(t *testing.T) {
	term := startTerminal(t, 24, 100, nil, "demo", "--rate", "50")
	term.expect(t, "kshare> ")
	term.typeLine("SELECT COUNT(*) AS n FROM orders;")
	term.expect(t, "| n")
	row := regexp.MustCompile(`\|\s+(\d+) \|`)
	var counts []int
	for len(counts) < 3 {
		// Drawn over the drawing before, then the new count.
		term.expect(t, "\x1b[5A\r\x1b[J")
		term.expectFind(t, "a count", func(s string) []int {
			m := row.FindStringSubmatchIndex(s)
			if m != nil {
				n, _ := strconv.Atoi(s[m[2]:m[3]])
				counts = append(counts, n)
			}
			return m
		})
	}
	for i := 1; i < len(counts); i++ {
		if counts[i] <= counts[i-1] {
			t.Errorf("the count went from %d to %d; counts %v", counts[i-1], counts[i], counts)
		}
	}
	term.expectRe(t, regexp.MustCompile(`\(\d+ changes so far; Ctrl-C stops the query\)`))
	term.ctrlC()
	term.expect(t, "changes (query stopped; rows not shown were released)")
	term.expect(t, "kshare> ")
	term.typeLine("quit")
	if code := waitExit(t, term.cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, term.text())
	}
}

// TestDemoWindowRows: in the demo, a TUMBLE count over a table with a
// WATERMARK on the demo's orders shows the windows' rows as they come,
// refreshed in place as the count grows, and a window's row keeps its count
// once the window closed: when the third window has a row, the watermark
// (the latest order_time less a second) passed the first window's end, and
// that window's count is still the same when the fifth window shows.
func TestDemoWindowRows(t *testing.T) {
	term := startTerminal(t, 40, 120, nil, "demo", "--rate", "50")
	addr := demoBroker(t, term)
	term.expect(t, "kshare> ")
	term.typeLine("CREATE TABLE timed (order_id BIGINT, order_time TIMESTAMP_LTZ(3), WATERMARK FOR order_time AS order_time - INTERVAL '1' SECOND) " +
		"WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '" + addr + "', 'topic' = 'orders', 'share-group-id' = 'windows', " +
		"'scan.startup.mode' = 'earliest-offset', 'format' = 'json');")
	term.expect(t, "kshare> ")
	term.typeLine("SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE timed, DESCRIPTOR(order_time), INTERVAL '2' SECOND)) GROUP BY window_start, window_end;")
	first := windowDrawing(t, term, 3)
	last := windowDrawing(t, term, 5)
	for i, w := range last {
		if i < len(first) && first[i].start != w.start {
			t.Fatalf("the first window went from %v to %v", first[i].start, w.start)
		}
		if w.end.Sub(w.start) != 2*time.Second || i > 0 && w.start != last[i-1].end || w.n <= 0 {
			t.Errorf("row %d of %v is not the next two-second window with a count", i, last)
		}
	}
	if first[0].n != last[0].n {
		t.Errorf("the first window, closed, counted %d and then %d", first[0].n, last[0].n)
	}
	term.ctrlC()
	term.expect(t, "kshare> ")
	term.typeLine("quit")
	if code := waitExit(t, term.cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, term.text())
	}
}

type windowRow struct {
	start, end time.Time
	n          int
}

var (
	windowTable = regexp.MustCompile(`\| window_start +\| window_end +\| +n \|\r\n\+[-+]+\r\n((?:\|[^\r\n]*\r\n)+)\+-`)
	windowLine  = regexp.MustCompile(`\| (\S+ \S+) \| (\S+ \S+) \| +(\d+) \|`)
)

// windowDrawing waits for a drawing of the window table with at least rows
// rows and returns them.
func windowDrawing(t *testing.T, term *terminal, rows int) []windowRow {
	t.Helper()
	var got []windowRow
	term.expectFind(t, fmt.Sprintf("a table of %d windows", rows), func(s string) []int {
		for _, m := range windowTable.FindAllStringSubmatchIndex(s, -1) {
			lines := windowLine.FindAllStringSubmatch(s[m[2]:m[3]], -1)
			if len(lines) < rows {
				continue
			}
			got = got[:0]
			for _, l := range lines {
				start, err1 := time.Parse(time.DateTime+".000", l[1])
				end, err2 := time.Parse(time.DateTime+".000", l[2])
				var n int
				_, err3 := fmt.Sscan(l[3], &n)
				if err := errors.Join(err1, err2, err3); err != nil {
					t.Fatalf("window row %q: %v", l[0], err)
				}
				got = append(got, windowRow{start, end, n})
			}
			return m[:2]
		}
		return nil
	})
	return got
}

// TestQuitStopsJobs: leaving the interactive shell while an INSERT job
// runs stops the job, so that what it holds goes back to the share group
// at once, and says so.
func TestQuitStopsJobs(t *testing.T) {
	term := startTerminal(t, 24, 120, nil, "demo", "--rate", "50")
	addr := demoBroker(t, term)
	// The sink writes back to the demo's topic: the job never runs out of
	// input, so it is running when the user quits.
	for _, step := range []struct{ typed, want string }{
		{"", "kshare> "},
		{"CREATE TABLE again (order_id BIGINT) WITH ('connector' = 'kafka', 'properties.bootstrap.servers' = '" + addr +
			"', 'topic' = 'orders', 'format' = 'json');", "kshare> "},
		{"INSERT INTO again SELECT order_id FROM orders;", "job 1 started"},
		{"", "kshare> "},
		{"quit", "stopping 1 running job; what they hold goes back to the share group"},
	} {
		if step.typed != "" {
			term.typeLine(step.typed)
		}
		term.expect(t, step.want)
	}
	if code := waitExit(t, term.cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, term.text())
	}
}

// demoBroker reads the address of the demo's broker from its first line.
func demoBroker(t *testing.T, term *terminal) string {
	t.Helper()
	term.expect(t, "kshare demo: broker on ")
	var addr string
	term.expectFind(t, "the broker's address", func(s string) []int {
		m := regexp.MustCompile(`^(\S+);`).FindStringSubmatchIndex(s)
		if m != nil {
			addr = s[m[2]:m[3]]
		}
		return m
	})
	return addr
}
