package filesystem

import "github.com/apache/arrow-go/v18/arrow/memory"

// SetAlloc makes the parquet parts opened from now on allocate from a and
// returns what puts the default back.
func SetAlloc(a memory.Allocator) (restore func()) {
	old := alloc
	alloc = a
	return func() { alloc = old }
}
