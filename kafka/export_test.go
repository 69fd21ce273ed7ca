package kafka

import "time"

// SetQuietEnd shortens how long a bounded stream waits for a record before
// it takes its ranges to be done, for the test's duration.
func SetQuietEnd(d time.Duration) (undo func()) {
	old := quietEnd
	quietEnd = d
	return func() { quietEnd = old }
}
