package sinks

import "io"

// SetStreams makes the print sinks opened from now on write to stdout and
// stderr (nil: leave as is) and returns what puts the real ones back.
func SetStreams(stdout, stderr io.Writer) (restore func()) {
	oldOut, oldErr := streams.stdout, streams.stderr
	if stdout != nil {
		streams.stdout = stdout
	}
	if stderr != nil {
		streams.stderr = stderr
	}
	return func() { streams.stdout, streams.stderr = oldOut, oldErr }
}
