package main

import (
	"bytes"
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
	"github.com/kshare/kshare/internal/watch"
	"regexp"
	"strconv"
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

// tableDDL is a one-line CREATE TABLE of table name over topic, read by
// group, with extra WITH pairs.
func tableDDL(name, addr, topic, group, extra string) string {
	return fmt.Sprintf("CREATE TABLE %s (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', "+
		"'share-group-id' = '%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json'%s);", name, addr, topic, group, extra)
}

// ordersDDL writes tableDDL to a file and returns its path.
func ordersDDL(t *testing.T, addr, name, topic, group, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".sql")
	if err := os.WriteFile(path, []byte(tableDDL(name, addr, topic, group, extra)+"\n"), 0o644); err != nil {
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

// idTopic makes a topic of one partition on the test broker holding the
// ids from up to to (as idValues), and names a share group to read it.
func idTopic(t *testing.T, from, to int) (addr, topic, group string) {
	t.Helper()
	addr = kafkatest.Bootstrap(t)
	topic = kafkatest.Topic(t, addr, 1)
	group = kafkatest.GroupName(t)
	kafkatest.Produce(t, addr, topic, idValues(from, to)...)
	return addr, topic, group
}

// startKshare starts kshare with args and returns it with its stdout and
// stderr; the test's cleanup kills it if it still runs.
func startKshare(t *testing.T, args ...string) (*exec.Cmd, *watch.Buffer, *watch.Buffer) {
	t.Helper()
	return startKshareEnv(t, nil, args...)
}

// startKshareEnv is startKshare with more environment variables.
func startKshareEnv(t *testing.T, env []string, args ...string) (*exec.Cmd, *watch.Buffer, *watch.Buffer) {
	t.Helper()
	cmd := exec.Command(kshareBin(t), args...)
	cmd.Env = append(kshareEnv(t), env...)
	var out, errb watch.Buffer
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

// killKshare SIGKILLs a kshare process and checks that the kill is what
// ended it, not an exit of its own on the way; which names the process in
// the message, stderr is its log.
func killKshare(t *testing.T, cmd *exec.Cmd, stderr *watch.Buffer, which string) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != -1 {
		t.Fatalf("%s exited with %d, want a death by SIGKILL; stderr:\n%s", which, code, stderr)
	}
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
	addr, topic, group := idTopic(t, 1, 4)

	history := filepath.Join(t.TempDir(), "history")
	term := startTerminal(t, 40, 120, []string{"KSHARE_HISTORY=" + history})

	term.expect(t, "kshare> ")
	term.typeLine("CREATE TABLE t (")
	term.expect(t, "     -> ")
	term.typeLine("  id BIGINT")
	term.typeLine(fmt.Sprintf(") WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s',", addr))
	term.typeLine(fmt.Sprintf("  'topic' = '%s', 'share-group-id' = '%s',", topic, group))
	term.typeLine("  'scan.startup.mode' = 'earliest-offset', 'format' = 'json');")
	term.expect(t, "table 't' created")

	term.typeLine("SELECT id FROM t;")
	term.expect(t, "| id |")
	term.expect(t, "|  3 |")
	term.expect(t, "(3 rows so far; Ctrl-C stops the query)")
	// Rows produced while the query runs appear as they arrive.
	kafkatest.Produce(t, addr, topic, idValues(4, 6)...)
	term.expect(t, "|  5 |")
	term.expect(t, "(5 rows so far; Ctrl-C stops the query)")

	term.ctrlC()
	term.expect(t, "5 rows (query stopped; rows not shown were released)")
	term.expect(t, "kshare> ")

	term.typeLine("SHOW TABLES;")
	term.expect(t, "| t          |")
	term.expect(t, "1 row")

	// A statement started and abandoned with Ctrl-C at the prompt. liner
	// prints its prompt a moment before it turns the terminal's signals
	// off; the echo of a typed character shows that it has.
	term.typeLine("SELECT")
	term.expect(t, "     -> ")
	term.typeText("x")
	term.expect(t, "     -> x")
	term.ctrlC()
	term.typeLine("DESCRIBE nope;")
	term.expect(t, "error: table 'nope' does not exist")

	term.typeLine("help")
	term.expect(t, "Statements end with ';'")

	term.typeLine("quit")
	if code := waitExit(t, term.cmd); code != 0 {
		t.Errorf("exit status %d after quit, want 0\n%s", code, term.text())
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
	term := startTerminal(t, 24, 80, nil)
	term.expect(t, "kshare> ")
	term.typeText("SHOW")
	term.expect(t, "kshare> SHOW")
	if err := term.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, term.cmd); code != 143 {
		t.Errorf("exit status %d, want 143\n%s", code, term.text())
	}
	term.expect(t, "kshare: stopped by SIGTERM")
}

// terminal is kshare run in a terminal (a pty) of its own, with the screen
// the test waits on.
type terminal struct {
	*screen
	t   *testing.T
	cmd *exec.Cmd
	tty *os.File
}

// startTerminal starts kshare with args in a rows x cols terminal, with
// env added to its environment; the test's cleanup kills it if it still
// runs.
func startTerminal(t *testing.T, rows, cols uint16, env []string, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(kshareBin(t), args...)
	cmd.Env = append(append(kshareEnv(t), "TERM=xterm"), env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{screen: newScreen(tty), t: t, cmd: cmd, tty: tty}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		tty.Close()
		term.wait()
	})
	return term
}

// typeText types s without Enter.
func (term *terminal) typeText(s string) {
	term.t.Helper()
	if _, err := io.WriteString(term.tty, s); err != nil {
		term.t.Fatalf("typing %q: %v", s, err)
	}
}

// typeLine types s and Enter.
func (term *terminal) typeLine(s string) {
	term.t.Helper()
	term.typeText(s + "\r")
}

func (term *terminal) ctrlC() {
	term.t.Helper()
	term.typeText("\x03")
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
	s.expectFind(t, strconv.Quote(want), func(text string) []int {
		if i := strings.Index(text, want); i >= 0 {
			return []int{i, i + len(want)}
		}
		return nil
	})
}

// expectRe waits until re matches after what the last expect matched.
func (s *screen) expectRe(t *testing.T, re *regexp.Regexp) {
	t.Helper()
	s.expectFind(t, re.String(), re.FindStringIndex)
}

// expectFind waits until find, given what the screen shows after the last
// match, returns where what it looks for (said as what) starts and ends.
func (s *screen) expectFind(t *testing.T, what string, find func(string) []int) {
	t.Helper()
	deadline := time.NewTimer(kafkatest.Timeout)
	defer deadline.Stop()
	found := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		loc := find(s.b.String()[s.seen:])
		if loc != nil {
			s.seen += loc[1]
		}
		return loc != nil
	}
	for !found() {
		select {
		case <-s.changed:
		case <-s.done:
			// The last output may have come with the close.
			if !found() {
				t.Fatalf("the terminal closed without showing %s; it showed:\n%s", what, s.text())
			}
			return
		case <-deadline.C:
			t.Fatalf("the terminal did not show %s within %v; it showed:\n%s", what, kafkatest.Timeout, s.text())
		}
	}
}

func (s *screen) wait() { <-s.done }

// TestExportKilled kills an export with SIGKILL in the middle and runs it
// again in the same share group until the group has nothing left: the two
// files together hold every record (duplicates allowed, losses not), and
// each holds only whole rows. The records the killed process held come back
// when their locks expire (10 s on the test brokers).
func TestExportKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for lock expiry")
	}
	// 30,000 rows of about 6 bytes: the kill at 20,000 bytes lands a
	// few thousand rows in, and the export cannot write the rest in the
	// moment between a check of the file's size and the kill (10,000 did,
	// on an idle machine, once in five runs).
	const n = 30000
	addr, topic, group := idTopic(t, 0, n)
	// Small batches make many write+sync rounds, so the kill lands in the
	// middle of the export.
	ddl := ordersDDL(t, addr, "orders", topic, group, ", 'scan.batch-size' = '50', 'properties.max.poll.records' = '50'")
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.csv"), filepath.Join(dir, "second.csv")

	exportKilledThenRest(t, ddl, "SELECT id FROM orders", first, 20000, 0, second, addr, topic, group) // killed a few thousand rows in

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

// exportKilledThenRest exports query over the tables of the ddl file to
// first, SIGKILLs it once first holds killAt bytes and the duration after
// has passed, then exports SELECT id FROM orders to second until share
// group group has no record of topic left (the dead export's records come
// back once their locks expire, 10 s on the test brokers), and stops it
// with SIGTERM.
func exportKilledThenRest(t *testing.T, ddl, query, first string, killAt int64, after time.Duration, second, addr, topic, group string) {
	t.Helper()
	cmd, _, stderr := startKshare(t, "export", "--init", ddl, "--query", query, "--out", first)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the first export's stderr:\n%s", stderr)
		}
	})
	waitFileSize(t, first, killAt)
	time.Sleep(after)
	killKshare(t, cmd, stderr, "killed export")
	// The second export ends when the group has nothing left, not after
	// an idle spell: how long the broker takes to hand the dead member's
	// records out again depends on the machine's load (an idle timeout of
	// 15 s, then of 25 s, ended a CI run's export with thousands of them
	// still to come). Its own idle timeout only bounds a test gone wrong.
	//
	// It reads in polls and batches of 500 whatever the first export's
	// were: the rest may be nearly every record, and polls of 10 under
	// the race detector took it past a minute (one CI run).
	larger := filepath.Join(t.TempDir(), "larger.sql")
	if err := os.WriteFile(larger, []byte("ALTER TABLE orders SET ('scan.batch-size' = '500', 'properties.max.poll.records' = '500');\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd, _, stderr = startKshare(t, "export", "--init", ddl, "--init", larger, "--query", "SELECT id FROM orders", "--out", second, "--idle-timeout", "5m")
	kafkatest.WaitLag(t, addr, group, topic, 0)
	// Every record is accepted, so written and synced: SIGTERM ends the
	// export with nothing in hand.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("second export exited with %d, want %d (SIGTERM); stderr:\n%s", code, 128+int(syscall.SIGTERM), stderr)
	}
}

// waitFileSize waits until the file at path holds at least size bytes.
func waitFileSize(t *testing.T, path string, size int64) {
	t.Helper()
	kafkatest.Eventually(t, fmt.Sprintf("%s to hold %d bytes", path, size), func() error {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Size() < size {
			return fmt.Errorf("%d bytes", fi.Size())
		}
		return nil
	})
}

// wholeLines is the text of the file at path that a kshare process wrote.
// A killed process's file may end in a line cut short: it writes each batch
// with one write call, but the kernel can stop a write to a regular file at
// a page boundary when SIGKILL arrives. That line's records were not
// accepted (sync, then accept), so when killed is set it is left out.
func wholeLines(t *testing.T, path string, killed bool) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if killed {
		if i := strings.LastIndexByte(text, '\n'); i < len(text)-1 {
			t.Logf("%s ends in a line cut short by the kill: %q", path, text[i+1:])
			text = text[:i+1]
		}
	}
	return text
}

// readIDs checks that the CSV file at path is a header and whole rows of
// ids (of wholeLines), counts each id in seen and returns the number of
// rows.
func readIDs(t *testing.T, path string, seen []int, killed bool) int {
	t.Helper()
	text := wholeLines(t, path, killed)
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
