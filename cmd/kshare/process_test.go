package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/kshare/kshare/internal/kafkatest"
)

// These tests run kshare as a process of its own: the copy of this test
// binary that testscript.Main puts on PATH as "kshare", which runs main.

func kshareBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("kshare")
	if err != nil {
		t.Fatalf("kshare is not on PATH (testscript.Main puts it there): %v", err)
	}
	return p
}

// kshareEnv is the environment of a kshare process of a test: no history in
// the user's home, and no second of waiting for race reports at exit.
func kshareEnv(t *testing.T) []string {
	return append(os.Environ(),
		"HOME="+t.TempDir(),
		"KSHARE_HISTORY=",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
	)
}

// ordersDDL writes a file defining table name over topic, read by group,
// with extra WITH pairs, and returns its path.
func ordersDDL(t *testing.T, addr, name, topic, group, extra string) string {
	t.Helper()
	ddl := fmt.Sprintf(`CREATE TABLE %s (id BIGINT) WITH (
  'connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s',
  'share-group-id' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json'%s);
`, name, addr, topic, group, extra)
	path := filepath.Join(t.TempDir(), name+".sql")
	if err := os.WriteFile(path, []byte(ddl), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func idValues(from, to int) [][]byte {
	var vs [][]byte
	for i := from; i < to; i++ {
		vs = append(vs, fmt.Appendf(nil, `{"id": %d}`, i))
	}
	return vs
}

// startKshare starts kshare with args and returns it with its stdout and
// stderr; the test's cleanup kills it if it still runs.
func startKshare(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	return startKshareEnv(t, nil, args...)
}

// startKshareEnv is startKshare with more environment variables.
func startKshareEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(kshareBin(t), args...)
	cmd.Env = append(kshareEnv(t), env...)
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &out, &errb
}

// waitExit waits for cmd with a deadline and returns its exit status.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("waiting for kshare: %v", err)
		}
		return cmd.ProcessState.ExitCode()
	case <-time.After(kafkatest.Timeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("kshare did not exit within %v", kafkatest.Timeout)
		return -1
	}
}

// syncBuffer is a bytes.Buffer that a process's output goroutine and the
// test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSignalExitStatus: SIGINT and SIGTERM stop a running SELECT of the
// shell and of an export, which exit with 128 + the signal's number and say
// why, and the records the query held go back to the group at once.
func TestSignalExitStatus(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	kafkatest.Produce(t, addr, topic, idValues(0, 3)...)
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		code   int
		export bool
	}{
		{"shell SIGINT", syscall.SIGINT, 130, false},
		{"shell SIGTERM", syscall.SIGTERM, 143, false},
		{"export SIGINT", syscall.SIGINT, 130, true},
		{"export SIGTERM", syscall.SIGTERM, 143, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := kafkatest.GroupName(t)
			// A WHERE that drops every row: the query holds nothing it
			// printed, so all it read is settled by the filter (accepted)
			// and the topic's records cannot keep it from running.
			ddl := ordersDDL(t, addr, "orders", topic, group, "")
			args := []string{"-f", ddl, "-e", "SELECT id FROM orders WHERE id < 0"}
			if tc.export {
				args = []string{"export", "--init", ddl, "--query", "SELECT id FROM orders WHERE id < 0", "--out", filepath.Join(t.TempDir(), "x.csv")}
			}
			cmd, _, stderr := startKshare(t, args...)
			kafkatest.WaitShareMembers(t, addr, group, 1)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := waitExit(t, cmd); code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			want := "interrupted after 0 rows: stopped by " + signalName(tc.sig)
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr)
			}
		})
	}
}

// TestInteractive drives the shell through a real terminal (a pty): a
// CREATE TABLE typed over several lines, a SELECT that streams rows as they
// are produced, Ctrl-C to stop it, then more statements, an error, and quit.
func TestInteractive(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.GroupName(t)
	kafkatest.Produce(t, addr, topic, idValues(1, 4)...)

	history := filepath.Join(t.TempDir(), "history")
	cmd := exec.Command(kshareBin(t))
	cmd.Env = append(kshareEnv(t), "TERM=xterm", "KSHARE_HISTORY="+history)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
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
	typeLine("CREATE TABLE t (")
	screen.expect(t, "     -> ")
	typeLine("  id BIGINT")
	typeLine(fmt.Sprintf(") WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s',", addr))
	typeLine(fmt.Sprintf("  'topic' = '%s', 'share-group-id' = '%s',", topic, group))
	typeLine("  'scan.startup.mode' = 'earliest-offset', 'format' = 'json');")
	screen.expect(t, "table 't' created")

	typeLine("SELECT id FROM t;")
	screen.expect(t, "| id |")
	screen.expect(t, "|  3 |")
	screen.expect(t, "(3 rows so far; Ctrl-C stops the query)")
	// Rows produced while the query runs appear as they arrive.
	kafkatest.Produce(t, addr, topic, idValues(4, 6)...)
	screen.expect(t, "|  5 |")
	screen.expect(t, "(5 rows so far; Ctrl-C stops the query)")

	if _, err := tty.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	screen.expect(t, "5 rows (query stopped; rows not shown were released)")
	screen.expect(t, "kshare> ")

	typeLine("SHOW TABLES;")
	screen.expect(t, "| t          |")
	screen.expect(t, "1 row")

	// A statement started and abandoned with Ctrl-C at the prompt. liner
	// prints its prompt a moment before it turns the terminal's signals
	// off; the echo of a typed character shows that it has.
	typeLine("SELECT")
	screen.expect(t, "     -> ")
	if _, err := io.WriteString(tty, "x"); err != nil {
		t.Fatal(err)
	}
	screen.expect(t, "     -> x")
	if _, err := tty.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	typeLine("DESCRIBE nope;")
	screen.expect(t, "error: table 'nope' does not exist")

	typeLine("help")
	screen.expect(t, "Statements end with ';'")

	typeLine("quit")
	if code := waitExit(t, cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, screen.text())
	}
	h, err := os.ReadFile(history)
	if err != nil {
		t.Fatalf("reading the history file: %v", err)
	}
	for _, want := range []string{"CREATE TABLE t ( id BIGINT ) WITH", "SELECT id FROM t;", "SHOW TABLES;", "DESCRIBE nope;"} {
		if !strings.Contains(string(h), want) {
			t.Errorf("history lacks %q:\n%s", want, h)
		}
	}
}

// TestInteractiveSIGTERM: SIGTERM ends the shell at the prompt, where it
// cannot interrupt the terminal's read otherwise, with exit status 143.
func TestInteractiveSIGTERM(t *testing.T) {
	cmd := exec.Command(kshareBin(t))
	cmd.Env = append(kshareEnv(t), "TERM=xterm")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
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
	screen.expect(t, "kshare> ")
	if _, err := io.WriteString(tty, "SHOW"); err != nil {
		t.Fatal(err)
	}
	screen.expect(t, "kshare> SHOW")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != 143 {
		t.Errorf("exit status %d, want 143\n%s", code, screen.text())
	}
	screen.expect(t, "kshare: stopped by SIGTERM")
}

// screen collects what a pty shows, for tests to wait on.
type screen struct {
	mu      sync.Mutex
	b       bytes.Buffer
	seen    int // offset up to which expect has matched
	changed chan struct{}
	done    chan struct{}
}

func newScreen(r io.Reader) *screen {
	s := &screen{changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			s.mu.Lock()
			s.b.Write(buf[:n])
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return // EIO once the process has exited and the pty closed
			}
		}
	}()
	return s
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// expect waits until want appears after what the last expect matched.
func (s *screen) expect(t *testing.T, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	for {
		s.mu.Lock()
		i := strings.Index(s.b.String()[s.seen:], want)
		if i >= 0 {
			s.seen += i + len(want)
		}
		s.mu.Unlock()
		if i >= 0 {
			return
		}
		select {
		case <-s.changed:
		case <-s.done:
			s.mu.Lock()
			i := strings.Index(s.b.String()[s.seen:], want)
			s.mu.Unlock()
			if i < 0 {
				t.Fatalf("the terminal closed without showing %q; it showed:\n%s", want, s.text())
			}
			return
		case <-ctx.Done():
			t.Fatalf("the terminal did not show %q within %v; it showed:\n%s", want, kafkatest.Timeout, s.text())
		}
	}
}

func (s *screen) wait() { <-s.done }

// TestExportKilled kills an export with SIGKILL in the middle and runs it
// again in the same share group until the group has nothing left: the two
// files together hold every record (duplicates allowed, losses not), and
// each holds only whole rows. The records the killed process held come back
// when their locks expire (10 s on the test brokers), so the second run's
// idle timeout outlasts that.
func TestExportKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for lock expiry")
	}
	const n = 10000
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	group := kafkatest.GroupName(t)
	kafkatest.Produce(t, addr, topic, idValues(0, n)...)
	// Small batches make many write+sync rounds, so the kill lands in the
	// middle of the export.
	ddl := ordersDDL(t, addr, "orders", topic, group, ", 'scan.batch-size' = '50', 'properties.max.poll.records' = '50'")
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.csv"), filepath.Join(dir, "second.csv")

	cmd, _, stderr := startKshare(t, "export", "--init", ddl, "--query", "SELECT id FROM orders", "--out", first)
	waitFileSize(t, first, 20000) // a few thousand rows in
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != -1 {
		t.Fatalf("killed export exited with %d, want a death by SIGKILL; stderr:\n%s", code, stderr)
	}

	cmd, _, stderr = startKshare(t, "export", "--init", ddl, "--query", "SELECT id FROM orders", "--out", second, "--idle-timeout", "15s")
	if code := waitExit(t, cmd); code != 0 {
		t.Fatalf("second export exited with %d, want 0; stderr:\n%s", code, stderr)
	}

	seen := make([]int, n)
	a := readIDs(t, first, seen, true)
	b := readIDs(t, second, seen, false)
	var missing []int
	dups := 0
	for id, c := range seen {
		if c == 0 {
			missing = append(missing, id)
		}
		if c > 1 {
			dups += c - 1
		}
	}
	t.Logf("killed export wrote %d rows, the second %d; %d duplicates", a, b, dups)
	if a == 0 || a >= n {
		t.Errorf("the killed export wrote %d of %d rows: the kill did not land in the middle", a, n)
	}
	if len(missing) > 0 {
		t.Fatalf("%d records lost, e.g. ids %v", len(missing), missing[:min(len(missing), 10)])
	}
}

// waitFileSize waits until the file at path holds at least size bytes.
func waitFileSize(t *testing.T, path string, size int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkatest.Timeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() >= size {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not reach %d bytes within %v", path, size, kafkatest.Timeout)
		case <-tick.C:
		}
	}
}

// readIDs checks that the CSV file at path is a header and whole rows of
// ids, counts each id in seen and returns the number of rows. A killed
// export's file may end in a row cut short: the export writes each batch
// with one write call, but the kernel can stop a write to a regular file at
// a page boundary when SIGKILL arrives. That row's records were not
// accepted (sync, then accept), so the row is left out of the count.
func readIDs(t *testing.T, path string, seen []int, killed bool) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if killed {
		if i := strings.LastIndexByte(text, '\n'); i >= 0 && i < len(text)-1 {
			t.Logf("%s ends in a row cut short by the kill: %q", path, text[i+1:])
			text = text[:i+1]
		}
	}
	if !strings.HasSuffix(text, "\n") {
		t.Errorf("%s ends in the middle of a row: %q", path, text[max(0, len(text)-20):])
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if lines[0] != "id" {
		t.Fatalf("%s starts with %q, want the header id", path, lines[0])
	}
	for i, l := range lines[1:] {
		var id int
		if _, err := fmt.Sscanf(l, "%d", &id); err != nil || fmt.Sprint(id) != l || id < 0 || id >= len(seen) {
			t.Fatalf("%s line %d is %q, not an id that was produced", path, i+2, l)
		}
		seen[id]++
	}
	return len(lines) - 1
}
