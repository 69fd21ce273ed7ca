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

// A child that is much smaller than its parent must not be reported as big
// as the parent, which ru_maxrss does for children started by Go.
func TestRunReportsTheChildsOwnMemory(t *testing.T) {
	ballast := make([]byte, 200<<20)
	for i := range ballast {
		ballast[i] = 1 // touch every page, so that it is resident
	}
	res, err := Run(context.Background(), []string{"sleep", "0.3"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.MaxRSS > 50<<20 {
		t.Errorf("sleep reported %d MiB peak RSS (ru_maxrss %d MiB)", res.MaxRSS>>20, res.RusageMaxRSS>>20)
	}
	t.Logf("VmHWM %d MiB, ru_maxrss %d MiB", res.MaxRSS>>20, res.RusageMaxRSS>>20)
	_ = ballast[len(ballast)-1]
}
