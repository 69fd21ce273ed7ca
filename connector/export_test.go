package connector

// SetPolicy lets this package's tests and benchmarks measure the delivery
// policy both ways; it returns a func that restores the production policy.
func SetPolicy(prefetch int, renew bool) (restore func()) {
	p, r := prefetchFetches, renewLocks
	prefetchFetches, renewLocks = prefetch, renew
	return func() { prefetchFetches, renewLocks = p, r }
}
