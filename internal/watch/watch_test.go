package watch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Wait checks at once, then 5 ms later, the interval doubling up to 50
// ms, and returns nil with the first check that passes.
func TestWaitChecksUntilPassed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		err := Wait(t.Context(), func() error {
			at = append(at, time.Since(start))
			if len(at) < 7 {
				return errors.New("not yet")
			}
			return nil
		})
		ms := time.Millisecond
		if want := []time.Duration{0, 5 * ms, 15 * ms, 35 * ms, 75 * ms, 125 * ms, 175 * ms}; err != nil || !slices.Equal(at, want) {
			t.Errorf("Wait = %v, checks at %v; want nil, checks at %v", err, at, want)
		}
	})
}

// When ctx ends first, Wait's error wraps its cause and says what the
// last check that could tell said: not the check that failed only because
// ctx had ended.
func TestWaitSaysLastCheck(t *testing.T) {
	gone := errors.New("test deadline")
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	calls := 0
	err := Wait(ctx, func() error {
		calls++
		if calls == 2 {
			cancel(gone)
			return fmt.Errorf("describe: %w", ctx.Err())
		}
		return errors.New("3 members, 2 assigned")
	})
	if !errors.Is(err, gone) || err.Error() != "test deadline (last check: 3 members, 2 assigned)" {
		t.Errorf("Wait = %v, want the cause and the check before the last", err)
	}
	// A context already ended gets one check, whose error is all there is.
	err = Wait(ctx, func() error { return errors.New("no broker") })
	if err == nil || err.Error() != "test deadline (last check: no broker)" {
		t.Errorf("Wait with an ended context = %v", err)
	}
}

func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if !Until(time.Second, func() bool { return true }) {
			t.Error("Until of a condition that holds says it did not")
		}
		start := time.Now()
		calls := 0
		if Until(time.Second, func() bool { calls++; return false }) {
			t.Error("Until of a condition that never holds says it did")
		}
		if d := time.Since(start); d != time.Second || calls != 23 {
			t.Errorf("Until gave up after %v and %d checks, want 1s and 23", d, calls)
		}
	})
}
