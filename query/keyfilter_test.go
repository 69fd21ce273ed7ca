package query

import (
	"fmt"
	"testing"
)

// A key added is always found, past the first filter's size too, and a
// key never added is found (a false positive, which costs a lookup that
// finds nothing) about once in a hundred.
func TestKeyFilter(t *testing.T) {
	f := newKeyFilter()
	if f.mayHold([]byte("x")) {
		t.Fatal("an empty filter holds a key")
	}
	const n = 3 * firstFilterKeys
	for i := range n {
		f.add(fmt.Appendf(nil, "in-%d", i))
	}
	if len(f.parts) < 2 {
		t.Fatalf("%d keys in %d filters: the filter did not grow", n, len(f.parts))
	}
	for i := range n {
		if !f.mayHold(fmt.Appendf(nil, "in-%d", i)) {
			t.Fatalf("key %d was added and is not found", i)
		}
	}
	fp := 0
	const tries = 100_000
	for i := range tries {
		if f.mayHold(fmt.Appendf(nil, "out-%d", i)) {
			fp++
		}
	}
	if rate := float64(fp) / tries; rate > 0.03 {
		t.Errorf("%.2f%% false positives, want about 1%%", 100*rate)
	}
}
