package sharegroup

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/kafkaclient"
)

// SetPolicy lets this package's tests and benchmarks measure the delivery
// policy both ways; it returns a func that restores the production policy.
func SetPolicy(prefetch int, renew bool) (restore func()) {
	p, r := prefetchFetches, renewLocks
	prefetchFetches, renewLocks = prefetch, renew
	return func() { prefetchFetches, renewLocks = p, r }
}

// SetClientOpts adds opts to every member's client; it returns a func that
// removes them.
func SetClientOpts(opts ...kgo.Opt) (restore func()) {
	old := testClientOpts
	testClientOpts = opts
	return func() { testClientOpts = old }
}

// DefaultFetchMaxBytes is the window a member starts with, as declared.
var DefaultFetchMaxBytes = func() int32 {
	o, _ := Options.Lookup(kafkaclient.OptFetchMaxBytes)
	n, err := strconv.ParseInt(o.Default, 10, 32)
	if err != nil {
		panic(err)
	}
	return int32(n)
}()
