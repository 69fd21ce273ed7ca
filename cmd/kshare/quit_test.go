package main

import (
	"regexp"
	"testing"
)

// TestInteractiveQuitAfterCtrlC: a Ctrl-C that stopped a query, or was
// typed at the prompt, is not remembered as the session's end: quit after
// it exits 0, as quit always does.
func TestInteractiveQuitAfterCtrlC(t *testing.T) {
	addr, topic, group := idTopic(t, 1, 2)

	for _, tc := range []struct {
		name  string
		args  []string
		query string // Ctrl-C stops this SELECT; "" types it at the prompt
	}{
		{"at the prompt", nil, ""},
		{"stopping a query", nil, "SELECT id FROM t;"},
		// The way the README's Quick start goes.
		{"in the demo", []string{"demo", "--rate", "20"}, "SELECT order_id FROM orders;"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term := startTerminal(t, 24, 100, nil, tc.args...)

			term.expect(t, "kshare> ")
			if tc.query != "" {
				if tc.args == nil {
					term.typeLine(tableDDL("t", addr, topic, group, ""))
					term.expect(t, "table 't' created")
				}
				term.typeLine(tc.query)
				// Stopped once it showed a row, not while it joins the group.
				term.expectRe(t, regexp.MustCompile(`\([1-9]\d* rows? so far; Ctrl-C stops the query\)`))
				term.ctrlC()
				term.expect(t, "query stopped")
			} else {
				// The echo of a typed character shows that the line editor
				// has the terminal (and its Ctrl-C); then the line is erased.
				term.typeText("x")
				term.expect(t, "kshare> x")
				term.ctrlC()
			}
			term.expect(t, "kshare> ")
			term.typeLine("quit")
			if code := waitExit(t, term.cmd); code != 0 {
				t.Errorf("exit status %d after Ctrl-C and quit, want 0\n%s", code, term.text())
			}
		})
	}
}
