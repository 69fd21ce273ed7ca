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

// TestInteractiveQuitAfterCtrlC: a Ctrl-C that stopped a query, or was
// typed at the prompt, is not remembered as the session's end: quit after
// it exits 0, as quit always does.
func TestInteractiveQuitAfterCtrlC(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.GroupName(t)
	kafkatest.Produce(t, addr, topic, idValues(1, 2)...)

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
			cmd := exec.Command(kshareBin(t), tc.args...)
			cmd.Env = append(kshareEnv(t), "TERM=xterm")
			tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 100})
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
			ctrlC := func() {
				t.Helper()
				if _, err := tty.Write([]byte{3}); err != nil {
					t.Fatal(err)
				}
			}

			screen.expect(t, "kshare> ")
			if tc.query != "" {
				if tc.args == nil {
					typeLine(fmt.Sprintf("CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', 'share-group-id' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json');", addr, topic, group))
					screen.expect(t, "table 't' created")
				}
				typeLine(tc.query)
				// Stopped once it showed a row, not while it joins the group.
				screen.expectRe(t, regexp.MustCompile(`\([1-9]\d* rows? so far; Ctrl-C stops the query\)`))
				ctrlC()
				screen.expect(t, "query stopped")
			} else {
				// The echo of a typed character shows that the line editor
				// has the terminal (and its Ctrl-C); then the line is erased.
				if _, err := io.WriteString(tty, "x"); err != nil {
					t.Fatal(err)
				}
				screen.expect(t, "kshare> x")
				ctrlC()
			}
			screen.expect(t, "kshare> ")
			typeLine("quit")
			if code := waitExit(t, cmd); code != 0 {
				t.Errorf("exit status %d after Ctrl-C and quit, want 0\n%s", code, screen.text())
			}
		})
	}
}

// expectRe waits until re matches after what the last expect matched.
func (s *screen) expectRe(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	deadline := time.NewTimer(kafkatest.Timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		loc := re.FindStringIndex(s.b.String()[s.seen:])
		if loc != nil {
			s.seen += loc[1]
		}
		s.mu.Unlock()
		if loc != nil {
			return
		}
		select {
		case <-s.changed:
		case <-s.done:
			t.Fatalf("the terminal closed without showing %s; it showed:\n%s", re, s.text())
		case <-deadline.C:
			t.Fatalf("the terminal did not show %s within %v; it showed:\n%s", re, kafkatest.Timeout, s.text())
		}
	}
}
