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

// Flatten takes a list apart and keeps a single error whole, even one that
// wraps another.
func TestFlatten(t *testing.T) {
	a, b, c := errors.New("a"), errors.New("b"), errors.New("c")
	got := Flatten(nil, errors.Join(a, b))
	got = Flatten(got, fmt.Errorf("wrapped: %w", c))
	if len(got) != 3 || got[0] != a || got[1] != b || got[2].Error() != "wrapped: c" {
		t.Errorf("got %v", got)
	}
}
