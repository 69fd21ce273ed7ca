// Package watch holds what a test uses to watch work that goes on in other
// goroutines or processes: a Buffer they write while the test reads it, and
// the one wait for a condition nothing signals (Wait, and Until for a
// condition without a reason), which checks often at first and less often
// later, up to a deadline, and says what the check said last.
//
// It imports nothing of kshare's, so that the tests of every package,
// internal/kafkatest's helpers among them, can use it.
package watch
