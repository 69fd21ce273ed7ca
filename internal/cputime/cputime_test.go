package cputime

import "testing"

// TestProcessGrows: work done between two readings shows as CPU time.
func TestProcessGrows(t *testing.T) {
	start := Process()
	x := 0
	for i := 0; Process() == start && i < 1e9; i++ {
		x += i
	}
	if Process() <= start {
		t.Errorf("CPU time did not grow from %s (x = %d)", start, x)
	}
}
