package main

import (
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/creack/pty"

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

	cmd := exec.Command(kshareBin(t))
	cmd.Env = append(kshareEnv(t), "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	screen := newScreen(tty)
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		tty.Close()
		screen.wait()
	}()
	typeLine := func(s string) {
		t.Helper()
		if _, err := io.WriteString(tty, s+"\r"); err != nil {
			t.Fatalf("typing %q: %v", s, err)
		}
	}
	screen.expect(t, "kshare> ")
	typeLine(fmt.Sprintf("CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json');", addr, topic, group))
	screen.expect(t, "table 't' created")
	typeLine("SELECT id FROM t;")
	screen.expect(t, "(2 rows so far; Ctrl-C stops the query)")

	c.Close()
	gone := time.Now()
	// Said on stderr (the log line) and on the status line.
	screen.expectRe(t, regexp.MustCompile(`cannot reach Kafka at `+regexp.QuoteMeta(addr)+` since \d\d:\d\d:\d\d, retrying`))
	screen.expect(t, "(2 rows so far; cannot reach Kafka at "+addr+" since ")
	t.Logf("the shell said so %s after the broker went away", time.Since(gone).Round(time.Millisecond))

	stop := time.Now()
	if _, err := tty.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	screen.expect(t, "2 rows (query stopped; rows not shown were released)")
	screen.expect(t, "kshare> ")
	if d := time.Since(stop); d > time.Second {
		t.Errorf("Ctrl-C took %s to give the prompt back without a broker, want under a second", d)
	} else {
		t.Logf("Ctrl-C gave the prompt back in %s", d.Round(time.Millisecond))
	}
	typeLine("quit")
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, screen.text())
	}
}
