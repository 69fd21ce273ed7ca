package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/internal/kafkatest"
	"github.com/kshare/kshare/table"
)

// TestRunHealthAndJSONLog: with --metrics-addr, kshare run serves /healthz,
// /readyz (200 once its job runs) and /metrics; with --log-format json
// every line of its log is a JSON object.
func TestRunHealthAndJSONLog(t *testing.T) {
	addr, sink, script := runQueue(t, 10, 10*time.Second, "")
	metrics := freeAddr(t)
	cmd, _, stderr := startKshare(t, "run", "-f", script, "--log-format", "json", "--metrics-addr", metrics)
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + metrics + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	kafkatest.Eventually(t, "/readyz to answer 200", func() error {
		code, body, err := get("/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("%d %s", code, body)
		}
		return err
	})
	waitSinkSize(t, addr, sink, 10)
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready: 1 job running\n", "/metrics": "kshare_source_streams_open"} {
		code, body, err := get(path)
		if err != nil || code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %q (%v), want 200 and %q", path, code, body, err, want)
		}
	}
	// The job's own metrics: its state and the records it accepted.
	kafkatest.Eventually(t, "the job's metrics", func() error {
		_, body, err := get("/metrics")
		for _, want := range []string{`kshare_job_state{job="1",state="RUNNING"} 1`, `kshare_job_records_total{job="1",outcome="accepted"} 10`, `kshare_job_rows_total{job="1",stage="acked"} 10`} {
			if err == nil && !strings.Contains(body, want) {
				err = fmt.Errorf("no %s in:\n%s", want, body)
			}
		}
		return err
	})
	log := stopRun(t, cmd, stderr, defaultDrainTimeout+5*time.Second)
	msgs := map[string]bool{}
	for _, text := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		var line struct {
			Level, Msg string
		}
		if err := json.Unmarshal([]byte(text), &line); err != nil || line.Level == "" || line.Msg == "" {
			t.Errorf("log line is not a JSON object with level and msg: %s", text)
		}
		msgs[line.Msg] = true
	}
	for _, want := range []string{"serving metrics and health", "job started", "draining", "job ended", "drained; exiting"} {
		if !msgs[want] {
			t.Errorf("the JSON log has no %q:\n%s", want, log)
		}
	}
}

// freeAddr is a loopback host:port nothing listens on (another process
// could take it before the test does; on a loopback test machine that is
// rare, and the test then fails loudly).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// fakeJob is a table.Job whose stats a test sets.
type fakeJob struct{ st table.JobStats }

func (j *fakeJob) ID() string                     { return "1" }
func (j *fakeJob) Statement() string              { return "INSERT INTO sink SELECT * FROM src" }
func (j *fakeJob) Wait(ctx context.Context) error { return nil }
func (j *fakeJob) Stop()                          {}
func (j *fakeJob) Drain(time.Duration) error      { return nil }
func (j *fakeJob) Stats() table.JobStats          { return j.st }

// TestReadyz: /readyz says 503 and why while kshare run starts, while a
// job does not run or the brokers of its source or sink do not answer,
// and while it drains; 200 otherwise.
func TestReadyz(t *testing.T) {
	down := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	job := &fakeJob{}
	r := &runner{jobs: []table.Job{job}}
	for _, tc := range []struct {
		phase runPhase
		st    table.JobStats
		code  int
		body  string
	}{
		{phaseStarting, table.JobStats{State: table.JobRunning}, 503, "not ready: starting: running the script's statements\n"},
		{phaseRunning, table.JobStats{State: table.JobRunning}, 200, "ready: 1 job running\n"},
		{phaseRunning, table.JobStats{State: table.JobFailed, Err: context.Canceled}, 503, "not ready: job 1 is FAILED\n"},
		{phaseRunning, table.JobStats{State: table.JobRunning, SourceDown: down}, 503, "not ready: job 1: no broker of its source has answered since 2026-03-01T12:00:00Z\n"},
		{phaseRunning, table.JobStats{State: table.JobRunning, Sink: flow.SinkStats{Unreachable: down}}, 503, "not ready: job 1: no broker of its sink has answered since 2026-03-01T12:00:00Z\n"},
		{phaseStopping, table.JobStats{State: table.JobRunning}, 503, "not ready: stopping: draining the jobs\n"},
	} {
		r.phase, job.st = tc.phase, tc.st
		rec := httptest.NewRecorder()
		r.serveReady(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != tc.code || rec.Body.String() != tc.body {
			t.Errorf("phase %d, %+v: %d %q, want %d %q", tc.phase, tc.st, rec.Code, rec.Body.String(), tc.code, tc.body)
		}
	}
}

// stuckJob is a fakeJob whose drain waits until it is stopped, as a job's
// does while its sink acknowledges nothing.
type stuckJob struct {
	fakeJob
	once    sync.Once
	stopped chan struct{}
}

func (j *stuckJob) Stop() { j.once.Do(func() { close(j.stopped) }) }

func (j *stuckJob) Drain(time.Duration) error {
	<-j.stopped
	return nil
}

// TestDrainCutShort: a second signal during a drain stops the jobs at once
// (drainAll says it forced them); without one, a drain that ends by itself
// is not forced.
func TestDrainCutShort(t *testing.T) {
	job := &stuckJob{stopped: make(chan struct{})}
	r := &runner{jobs: []table.Job{job}, drain: time.Hour, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	again := make(chan struct{})
	forced := make(chan bool, 1)
	go func() { forced <- r.drainAll(again) }()
	select {
	case f := <-forced:
		t.Fatalf("drainAll returned %v before the second signal, with the job's drain still waiting", f)
	case <-time.After(100 * time.Millisecond):
	}
	close(again)
	select {
	case f := <-forced:
		if !f {
			t.Error("drainAll cut short by a second signal says it did not force the jobs")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("drainAll did not stop the jobs after the second signal")
	}
	if (&runner{jobs: []table.Job{&fakeJob{}}, log: r.log}).drainAll(nil) {
		t.Error("a drain that ended by itself says it was forced")
	}
}

// TestSignalAgain: the first SIGTERM ends the command's context, and only a
// second one closes signalAgain's channel.
func TestSignalAgain(t *testing.T) {
	ctx, stop := signalContext()
	defer stop()
	again := signalAgain(ctx)
	if again == nil {
		t.Fatal("signalContext's context has no second-signal channel")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not end the context")
	}
	select {
	case <-again:
		t.Fatal("the first SIGTERM closed the second-signal channel")
	case <-time.After(100 * time.Millisecond):
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-again:
	case <-time.After(10 * time.Second):
		t.Fatal("a second SIGTERM did not close the second-signal channel")
	}
	if signalAgain(context.Background()) != nil {
		t.Error("a context signalContext did not make has a second-signal channel")
	}
}
