package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/internal/watch"
)

// originRow is a row whose record is offset id of partition 0 of topic
// "jobs", delivered twice, with key k<id>.
func originRow(id int64) Row {
	return Row{origin: flow.Origin{Topic: "jobs", Offset: id, DeliveryCount: 2, Key: fmt.Appendf(nil, "k%d", id)}, hasOrigin: true}
}

// encodeID writes a row as {"id":<its offset>}: what the programs of
// these tests read.
func encodeID(r Row) ([]byte, error) {
	o, _ := r.Origin()
	return fmt.Appendf(nil, `{"id":%d}`, o.Offset), nil
}

// sh is a Command running script with sh, logging to logs.
func sh(script string, logs *watch.Buffer) Command {
	return Command{
		Argv:        []string{"sh", "-c", script},
		RejectCodes: []int{65},
		Encode:      encodeID,
		Logger:      textLogger(logs),
	}
}

// outFile is an OutFile in the test's directory, and what it holds.
func outFile(t *testing.T) (*OutFile, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.jsonl")
	o, err := CreateOut(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return o, func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func TestCommandCheck(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{nil, "no command to run: give it after --, as in kshare work ... -- ./classify.py"},
		{[]string{""}, "no command to run: give it after --, as in kshare work ... -- ./classify.py"},
		{[]string{"kshare-no-such-program"}, `command "kshare-no-such-program" cannot be run: exec: "kshare-no-such-program": executable file not found in $PATH`},
		{[]string{"sh", "-c", "exit 1"}, ""},
	} {
		c := Command{Argv: tc.argv}
		err := c.Check()
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) {
			t.Errorf("%q: %v, want %q", tc.argv, err, tc.want)
		}
	}
}

// A program gets the row on its standard input and the record's
// coordinates in its environment; exit status 0 accepts the row, and its
// output goes to the out file with the coordinates, as JSON when it is
// JSON, else as a string.
func TestCommandRun(t *testing.T) {
	var logs watch.Buffer
	out, written := outFile(t)
	c := sh(`read -r line; printf '%s %s %s %s %s %s' "$line" "$KSHARE_TOPIC" "$KSHARE_PARTITION" "$KSHARE_OFFSET" "$KSHARE_DELIVERY_COUNT" "$KSHARE_KEY"`, &logs)
	c.Out = out
	if err := c.Run(t.Context(), originRow(41)); err != nil {
		t.Fatal(err)
	}
	json := sh(`echo '{"label": "spam"}'; echo 'a note' >&2`, &logs)
	json.Out = out
	if err := json.Run(t.Context(), originRow(42)); err != nil {
		t.Fatal(err)
	}
	// A key that is not text is not put in the environment; a row whose
	// source does not tell its record gets no coordinates.
	env := sh(`printf '[%s|%s]' "${KSHARE_KEY-unset}" "${KSHARE_TOPIC-unset}"`, &logs)
	env.Out = out
	binary := originRow(43)
	binary.origin.Key = []byte{'k', 0}
	if err := env.Run(t.Context(), binary); err != nil {
		t.Fatal(err)
	}
	env.Encode = func(Row) ([]byte, error) { return []byte(`{}`), nil }
	if err := env.Run(t.Context(), Row{}); err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"jobs","partition":0,"offset":41,"output":"{\"id\":41} jobs 0 41 2 k41"}` + "\n" +
		`{"topic":"jobs","partition":0,"offset":42,"output":{"label": "spam"}}` + "\n" +
		`{"topic":"jobs","partition":0,"offset":43,"output":"[unset|jobs]"}` + "\n" +
		`{"output":"[unset|unset]"}` + "\n"
	if got := written(); got != want {
		t.Errorf("out file:\n%s\nwant\n%s", got, want)
	}
	if want := `level=INFO msg="worker stderr" topic=jobs partition=0 offset=42 delivery_count=2 stderr="a note\n"` + "\n"; logs.String() != want {
		t.Errorf("log:\n%s\nwant\n%s", logs.String(), want)
	}
}

// An exit status in RejectCodes rejects the row; another, or a death by
// signal, releases it; a program that cannot start releases it too.
func TestCommandFailures(t *testing.T) {
	var logs watch.Buffer
	for _, tc := range []struct {
		c      Command
		want   string
		reject bool
	}{
		{sh("exit 65", &logs), "sh: exit status 65", true},
		{sh("exit 3", &logs), "sh: exit status 3", false},
		{sh("kill -KILL $$", &logs), "sh: signal: killed", false},
		{Command{Argv: []string{"/nonexistent/worker"}, Encode: encodeID}, "/nonexistent/worker: fork/exec /nonexistent/worker: no such file or directory", false},
	} {
		err := tc.c.Run(t.Context(), originRow(1))
		if err == nil || err.Error() != tc.want || errors.Is(err, ErrReject) != tc.reject {
			t.Errorf("%q: %v (reject %v), want %q (reject %v)", tc.c.Argv, err, errors.Is(err, ErrReject), tc.want, tc.reject)
		}
	}
}

// A row whose context ends (its timeout) kills the program's whole
// process group, what it started in the background too.
func TestCommandTimeoutKillsGroup(t *testing.T) {
	var logs watch.Buffer
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := sh(`sleep 60 & echo $! > '`+pidFile+`'; wait`, &logs)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	err := c.Run(ctx, originRow(1))
	if err == nil || err.Error() != "sh: process group killed: context deadline exceeded" {
		t.Fatalf("Run = %v, want the group killed at the deadline", err)
	}
	// The child held the program's output pipe, so Run, which waits for
	// the pipe to close, returned as it died: its files close on its way
	// out, a moment before it is a zombie (seen in CI: still in state R
	// right after Run). Its parent gone, it waits to be reaped by init as
	// a zombie, or is gone; a child the kill missed would sleep (S) for a
	// minute.
	pid := readPid(t, pidFile)
	var stat []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		var err error
		if stat, err = os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
	}
	t.Errorf("the background child (pid %d) still runs: %s", pid, stat)
}

// Of a program's output, --out keeps the first maxCapture bytes and says
// that it cut the rest.
func TestCommandOutputCut(t *testing.T) {
	var logs watch.Buffer
	out, written := outFile(t)
	c := sh(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", maxCapture+10), &logs)
	c.Out = out
	if err := c.Run(t.Context(), originRow(7)); err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"jobs","partition":0,"offset":7,"output":"` + strings.Repeat("x", maxCapture) + `"}` + "\n"
	if got := written(); got != want {
		t.Errorf("out file holds %d bytes, want %d", len(got), len(want))
	}
	if want := `level=WARN msg="worker output cut: --out keeps the first 1 MiB of a row's output" topic=jobs partition=0 offset=7 delivery_count=2` + "\n"; logs.String() != want {
		t.Errorf("log:\n%s\nwant\n%s", logs.String(), want)
	}
}

// answerer is a persistent worker that answers each row by its id, and
// counts its starts in a file.
const answerer = `echo start >> "$STARTS"
while read -r line; do
	case "$line" in
	'{"id":1}') echo '{"status": "accept", "output": {"ok": 1}}' ;;
	'{"id":2}') echo '{"status": "reject", "error": "bad input"}' ;;
	'{"id":3}') echo '{"status": "release"}' ;;
	'{"id":4}') echo 'not json' ;;
	'{"id":5}') echo "dying" >&2; exit 3 ;;
	'{"id":6}') sleep 60 ;;
	esac
done`

func newAnswerer(t *testing.T, procs int) (*Persistent, *watch.Buffer, func() int) {
	t.Helper()
	starts := filepath.Join(t.TempDir(), "starts")
	t.Setenv("STARTS", starts)
	var logs watch.Buffer
	p := &Persistent{Command: sh(answerer, &logs), Procs: procs}
	t.Cleanup(func() { p.Close(time.Second) })
	return p, &logs, func() int {
		b, _ := os.ReadFile(starts)
		return strings.Count(string(b), "start\n")
	}
}

// A persistent worker's answers settle the rows; an answer that is not one,
// or a copy that dies, releases the row and has the copy started again for
// the next row, while a copy that answered well serves the next row too.
func TestPersistentAnswers(t *testing.T) {
	p, logs, starts := newAnswerer(t, 1)
	out, written := outFile(t)
	p.Out = out
	for _, tc := range []struct {
		id     int64
		want   string // "" for nil
		reject bool
		starts int // copies started so far
	}{
		{1, "", false, 1},
		{2, "sh: the worker rejected the row: bad input", true, 1},
		{3, "sh: the worker released the row: no reason given", false, 1},
		{4, `sh: the worker answered "not json", not a JSON line {"status": "accept"|"release"|"reject", ...}; it is started again`, false, 1},
		{1, "", false, 2},
		{5, "sh: the worker ended without answering (exit status 3); it is started again", false, 2},
		{1, "", false, 3},
	} {
		err := p.Run(t.Context(), originRow(tc.id))
		if got := fmt.Sprint(err); (tc.want == "" && err != nil) || (tc.want != "" && got != tc.want) || errors.Is(err, ErrReject) != tc.reject {
			t.Errorf("id %d: %v (reject %v), want %q (reject %v)", tc.id, err, errors.Is(err, ErrReject), tc.want, tc.reject)
		}
		if n := starts(); n != tc.starts {
			t.Errorf("after id %d: %d copies started, want %d", tc.id, n, tc.starts)
		}
	}
	line := `{"topic":"jobs","partition":0,"offset":1,"output":{"ok": 1}}` + "\n"
	if got := written(); got != strings.Repeat(line, 3) {
		t.Errorf("out file:\n%s\nwant three times\n%s", got, line)
	}
	// The copy's standard error is logged with the row it was working on.
	kafkatest.Eventually(t, "the dying copy's stderr logged", func() error {
		if want := `level=INFO msg="worker stderr" topic=jobs partition=0 offset=5 delivery_count=2 pid=`; !strings.Contains(logs.String(), want) {
			return fmt.Errorf("log:\n%s", logs.String())
		}
		return nil
	})
	if !strings.Contains(logs.String(), ` stderr=dying`+"\n") {
		t.Errorf("log:\n%s\nwant the line the copy wrote", logs.String())
	}
}

// A row whose context ends while its copy works kills the copy's process
// group; the next row gets a new copy.
func TestPersistentTimeout(t *testing.T) {
	p, _, starts := newAnswerer(t, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := p.Run(ctx, originRow(6)); err == nil || err.Error() != "sh: no answer, process group killed: context deadline exceeded" {
		t.Errorf("Run = %v, want the copy killed at the deadline", err)
	}
	if err := p.Run(t.Context(), originRow(1)); err != nil {
		t.Errorf("the row after: %v", err)
	}
	if n := starts(); n != 2 {
		t.Errorf("%d copies started, want 2", n)
	}
}

// At most Procs rows run at once: a row waits for an idle copy, and gives
// up when its context ends first.
func TestPersistentWaitsForACopy(t *testing.T) {
	p, _, starts := newAnswerer(t, 1)
	busy := make(chan error)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { busy <- p.Run(ctx, originRow(6)) }()
	kafkatest.Eventually(t, "the copy started", func() error {
		if starts() != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	waiting, stop := context.WithCancelCause(t.Context())
	gone := errors.New("shutting down")
	stop(gone)
	if err := p.Run(waiting, originRow(1)); err != gone {
		t.Errorf("Run while the one copy is busy, its context ended: %v, want %v", err, gone)
	}
	cancel()
	if err := <-busy; err == nil || !strings.HasPrefix(err.Error(), "sh: no answer, process group killed") {
		t.Errorf("the busy row: %v", err)
	}
}

// A program whose copies end before answering their first row, three
// times in a row, stops the pool: it cannot run, and would otherwise
// release every record until the broker archived them.
func TestPersistentCannotStart(t *testing.T) {
	var logs watch.Buffer
	// It reads the row before it dies, so that the row is always written
	// to a live copy.
	p := &Persistent{Command: sh("read -r line; exit 1", &logs), Procs: 1}
	defer p.Close(time.Second)
	const deadStarts = 3
	for i := 1; i <= deadStarts; i++ {
		err := p.Run(t.Context(), originRow(int64(i)))
		if i < deadStarts {
			if want := "sh: the worker ended without answering (exit status 1); it is started again"; err == nil || err.Error() != want || errors.Is(err, ErrStop) {
				t.Errorf("row %d: %v, want %q", i, err, want)
			}
			continue
		}
		want := "sh: 3 copies in a row ended before answering a row (the last: exit status 1); stopping, so that the rows are not all spent on a worker that cannot run"
		if err == nil || err.Error() != want || !errors.Is(err, ErrStop) {
			t.Errorf("row %d: %v, want a stop: %q", i, err, want)
		}
	}
	missing := &Persistent{Command: Command{Argv: []string{"/nonexistent/worker"}, Encode: encodeID}, Procs: 1}
	defer missing.Close(0)
	if err := missing.Run(t.Context(), originRow(1)); err == nil || err.Error() != "starting /nonexistent/worker: fork/exec /nonexistent/worker: no such file or directory" {
		t.Errorf("a missing program: %v", err)
	}
}

// Close ends the copies: one that exits when its input closes ends so; one
// that does not is killed after the grace.
func TestPersistentClose(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		grace        time.Duration
	}{
		// A grace longer than the test's wait: Close returns only
		// because the copy exits.
		{"exits on EOF", `echo $$ > "$PIDFILE"; while read -r line; do echo '{"status": "accept"}'; done; echo eof > "$PIDFILE.eof"`, kafkatest.Timeout},
		{"ignores EOF", `echo $$ > "$PIDFILE"; read -r line; echo '{"status": "accept"}'; exec sleep 60`, 50 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			t.Setenv("PIDFILE", pidFile)
			var logs watch.Buffer
			p := &Persistent{Command: sh(tc.script, &logs), Procs: 2}
			if err := p.Run(t.Context(), originRow(1)); err != nil {
				t.Fatal(err)
			}
			pid := readPid(t, pidFile)
			p.Close(tc.grace)
			// Close waits for the copy: it is gone, reaped.
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the copy (pid %d) after Close: %v, want it gone", pid, err)
			}
			_, err := os.Stat(pidFile + ".eof")
			if exited := err == nil; exited != (tc.grace == kafkatest.Timeout) {
				t.Errorf("the copy saw the end of its input: %v", exited)
			}
		})
	}
}

// readPid reads the process id a program wrote to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return pid
}

// Lines written at once share writes; each Write returns once its line is
// synced; after a failure every Write says so.
func TestOutFile(t *testing.T) {
	if _, err := CreateOut(t.TempDir()); err == nil || !strings.HasPrefix(err.Error(), "--out: open ") || !strings.HasSuffix(err.Error(), ": is a directory") {
		t.Errorf("CreateOut of a directory: %v", err)
	}
	out, written := outFile(t)
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- out.Write(originRow(int64(i)), []byte(fmt.Sprintf(`{"n":%d}`, i))) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got := written()
	for i := range n {
		if line := fmt.Sprintf(`{"topic":"jobs","partition":0,"offset":%d,"output":{"n":%d}}`+"\n", i, i); strings.Count(got, line) != 1 {
			t.Errorf("line %q found %d times", line, strings.Count(got, line))
		}
	}
	if strings.Count(got, "\n") != n {
		t.Errorf("%d lines, want %d", strings.Count(got, "\n"), n)
	}
	if err := out.Write(Row{}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(written(), "\n"+`{"output":null}`+"\n") {
		t.Errorf("no output is not written as null")
	}
	out.Close()
	err1 := out.Write(Row{}, nil)
	err2 := out.Write(Row{}, nil)
	name := out.f.Name()
	if want := fmt.Sprintf("writing %s: write %s: file already closed", name, name); err1 == nil || err1.Error() != want || err2 != err1 {
		t.Errorf("Writes after a failure: %v, then %v; want the first failure twice", err1, err2)
	}
}
