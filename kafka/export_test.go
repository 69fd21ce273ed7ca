package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// SetSinkClientOpts adds opts to the producing client of every writer
// opened from now on (a dialer that the test can cut); it returns a func
// that removes them.
func SetSinkClientOpts(opts ...kgo.Opt) (restore func()) {
	old := testSinkOpts
	testSinkOpts = opts
	return func() { testSinkOpts = old }
}

// SetQuietEnd shortens how long a bounded stream waits for a record before
// it takes its ranges to be done, for the test's duration.
func SetQuietEnd(d time.Duration) (undo func()) {
	old := quietEnd
	quietEnd = d
	return func() { quietEnd = old }
}
