package procpool

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/kshare/kshare/internal/watch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// script writes an executable shell script into a test's directory.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "worker.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// A copy answers line after line, and one copy serves them all: what it
// loaded once (here a counter) lives on. Its stderr is logged with the
// line in work.
func TestAnswersFromOneCopy(t *testing.T) {
	prog := script(t, `n=0
while read -r line; do
  n=$((n+1))
  echo "working on $line" >&2
  case "$line" in
    *bad*) echo '{"status":"reject","error":"bad input"}' ;;
    *) echo '{"status":"accept","output":{"n":'$n'}}' ;;
  esac
done
`)
	var logs watch.Buffer
	p := &Pool{Argv: []string{prog}, Procs: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	defer p.Close(time.Second)
	for i, want := range []string{`{"n":1}`, `{"n":2}`} {
		a, err := p.Do(t.Context(), []byte("good\n"), []any{"row", i})
		if err != nil || a.Status != Accept || string(a.Output) != want {
			t.Fatalf("line %d: %+v, %v; want accept %s", i, a, err, want)
		}
	}
	a, err := p.Do(t.Context(), []byte("bad\n"), []any{"row", 2})
	if err != nil || a.Status != Reject || a.Error != "bad input" {
		t.Fatalf("got %+v, %v; want a reject saying why", a, err)
	}
	p.Close(time.Second)
	if _, err := p.Do(t.Context(), []byte("good\n"), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	// A stderr line is logged with the line in work when it is read,
	// which may already be the next one: the row attribute is there, not
	// which row it names.
	if !strings.Contains(logs.String(), `msg="worker stderr" row=`) || !strings.Contains(logs.String(), `stderr="working on good"`) {
		t.Errorf("stderr not logged with the line's attributes:\n%s", logs.String())
	}
}

// A copy that answers something other than an answer line is killed and
// another one answers the next line.
func TestGarbageRestartsTheCopy(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	prog := script(t, `echo x >> '`+marker+`'
while read -r line; do
  case "$line" in
    chat) echo "hello there" ;;
    *) echo '{"status":"accept"}' ;;
  esac
done
`)
	p := &Pool{Argv: []string{prog}, Procs: 1}
	defer p.Close(time.Second)
	_, err := p.Do(t.Context(), []byte("chat\n"), nil)
	if err == nil || !strings.Contains(err.Error(), `the worker answered "hello there", not a JSON line`) {
		t.Fatalf("got %v, want the answer quoted", err)
	}
	if a, err := p.Do(t.Context(), []byte("ok\n"), nil); err != nil || a.Status != Accept {
		t.Fatalf("after a restart: %+v, %v", a, err)
	}
	starts, _ := os.ReadFile(marker)
	if n := bytes.Count(starts, []byte("x")); n != 2 {
		t.Errorf("%d copies started, want 2", n)
	}
}

// A line whose context ends before the answer kills its copy (and what the
// copy started: its process group).
func TestContextKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	prog := script(t, `read -r line
sleep 60 &
echo $! > '`+pidFile+`'
wait
`)
	p := &Pool{Argv: []string{prog}, Procs: 1}
	defer p.Close(time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Do(ctx, []byte("slow\n"), nil)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer, process group killed") {
		t.Fatalf("got %v, want the deadline", err)
	}
	pid, _ := os.ReadFile(pidFile)
	if len(pid) == 0 {
		t.Fatal("the copy did not start its child")
	}
	// Killed, the child is gone or a zombie until whoever inherited it
	// reaps it.
	stat := "/proc/" + strings.TrimSpace(string(pid)) + "/stat"
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(stat)
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the copy's child %s still runs: %s", strings.TrimSpace(string(pid)), b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A program whose copies die before answering is given up on after
// MaxDeadStarts of them, with ErrGaveUp.
func TestGivesUpOnAProgramThatCannotStart(t *testing.T) {
	prog := script(t, "echo 'cannot load the model' >&2\nexit 3\n")
	p := &Pool{Argv: []string{prog}, Procs: 1, Logger: slog.New(slog.DiscardHandler)}
	defer p.Close(time.Second)
	var err error
	for i := range MaxDeadStarts {
		_, err = p.Do(t.Context(), []byte("x\n"), nil)
		if i < MaxDeadStarts-1 && (err == nil || errors.Is(err, ErrGaveUp)) {
			t.Fatalf("copy %d: got %v, want a plain error", i+1, err)
		}
	}
	if !errors.Is(err, ErrGaveUp) || !strings.Contains(err.Error(), "3 copies in a row ended before answering a row (the last: exit status 3)") {
		t.Fatalf("got %v, want ErrGaveUp", err)
	}
}
