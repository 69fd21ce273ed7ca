//go:build race

package kafkatest

// raceDetector reports whether the tests run under the race detector,
// which slows kshare and kfake several times over.
const raceDetector = true
