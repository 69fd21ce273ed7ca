package measure

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRunCountsOutputAndMeasures(t *testing.T) {
	// sh is on every machine that runs the benchmark script.
	res, err := Run(context.Background(), []string{"sh", "-c", "i=0; while [ $i -lt 100 ]; do echo row$i; i=$((i+1)); done"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Lines != 100 {
		t.Errorf("lines = %d, want 100", res.Lines)
	}
	if res.MaxRSS <= 0 || res.Wall <= 0 {
		t.Errorf("no measurement: %+v", res)
	}
}

func TestRunCaptureAndFailure(t *testing.T) {
	res, err := Run(context.Background(), []string{"sh", "-c", "echo hello; echo broken >&2; exit 3"}, Options{Capture: true})
	if err == nil {
		t.Fatal("want an error for exit status 3")
	}
	if !strings.Contains(err.Error(), "broken") {
		t.Errorf("error %q does not carry the child's stderr", err)
	}
	if string(res.Stdout) != "hello\n" {
		t.Errorf("stdout = %q", res.Stdout)
	}
}

func TestRunTimeout(t *testing.T) {
	start := time.Now()
	_, err := Run(context.Background(), []string{"sleep", "30"}, Options{Timeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("want an error for a child that outlives its timeout")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to stop the child", d)
	}
}
