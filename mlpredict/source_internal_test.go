package mlpredict

import "testing"

// The input's batches fill every slot of 'max-concurrent-operations': a
// divisor of it, about a quarter.
func TestBatchSize(t *testing.T) {
	for limit, want := range map[int]int{1: 1, 2: 1, 4: 1, 7: 1, 8: 2, 10: 2, 12: 3, 16: 4, 64: 16, 100: 25, 101: 1} {
		got := batchSize(limit)
		if got != want || limit%got != 0 {
			t.Errorf("batchSize(%d) = %d, want %d", limit, got, want)
		}
	}
}
