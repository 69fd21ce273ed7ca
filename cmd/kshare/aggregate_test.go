package main

import (
	"regexp"
	"strconv"
	"testing"
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
