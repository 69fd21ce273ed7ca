package errlist

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorAndUnwrap(t *testing.T) {
	kind := errors.New("kind")
	es := []error{errors.New("first"), fmt.Errorf("second: %w", kind)}
	if got := Error(es); got != "first; second: kind" {
		t.Errorf("Error %q", got)
	}
	if got := Error([]error{}); got != "" {
		t.Errorf("Error of none %q", got)
	}
	if !errors.Is(errors.Join(Unwrap(es)...), kind) {
		t.Error("Unwrap lost the wrapped kind")
	}
}
