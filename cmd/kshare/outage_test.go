package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/kshare/kshare/internal/kafkatest"
)

// TestInteractiveBrokerGone: the broker of a running SELECT goes away (the
// test's own kfake, closed); within seconds the shell says that it cannot
// reach Kafka, and Ctrl-C then gives the prompt back within a second. The
// connector's tests cut a real broker off the same way (TestBrokerOutageIsVisible).
func TestInteractiveBrokerGone(t *testing.T) {
	c := kafkatest.Fake(t)
	addr := c.ListenAddrs()[0]
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.GroupName(t)
	kafkatest.Produce(t, addr, topic, idValues(1, 3)...)

	term := startTerminal(t, 24, 200, nil)
	term.expect(t, "kshare> ")
	term.typeLine(tableDDL("t", addr, topic, group, ""))
	term.expect(t, "table 't' created")
	term.typeLine("SELECT id FROM t;")
	term.expect(t, "(2 rows so far; Ctrl-C stops the query)")

	c.Close()
	gone := time.Now()
	// Said on stderr (the log line) and on the status line.
	term.expectRe(t, regexp.MustCompile(`cannot reach Kafka at `+regexp.QuoteMeta(addr)+` since \d\d:\d\d:\d\d, retrying`))
	term.expect(t, "(2 rows so far; cannot reach Kafka at "+addr+" since ")
	t.Logf("the shell said so %s after the broker went away", time.Since(gone).Round(time.Millisecond))

	stop := time.Now()
	term.ctrlC()
	term.expect(t, "2 rows (query stopped; rows not shown were released)")
	term.expect(t, "kshare> ")
	if d := time.Since(stop); d > time.Second {
		t.Errorf("Ctrl-C took %s to give the prompt back without a broker, want under a second", d)
	} else {
		t.Logf("Ctrl-C gave the prompt back in %s", d.Round(time.Millisecond))
	}
	term.typeLine("quit")
	if code := waitExit(t, term.cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, term.text())
	}
}
