//go:build !linux

package json

import "time"

// threadCPU is unknown where there is no per-thread count: the benchmarks
// then leave out rows/cpu-s.
func threadCPU() time.Duration { return 0 }
