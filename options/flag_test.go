package options_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kshare/kshare/options"
)

// A duration flag takes what the setting of the same name takes, Go's
// durations included, and refuses what the setting refuses.
func TestDurationFlag(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration
		err  string
	}{
		{"5 min", 5 * time.Minute, ""},
		{"30s", 30 * time.Second, ""},
		{"500 ms", 500 * time.Millisecond, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"0", 0, ""},
		{"5", 0, `duration "5" has no unit`},
		{"soon", 0, `duration "soon" does not start with a number`},
		{"-1s", 0, "a duration must not be negative"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var d time.Duration
		options.DurationVar(fs, &d, "idle-timeout", 10*time.Second, "")
		err := fs.Parse([]string{"--idle-timeout", tc.arg})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("--idle-timeout %q: error %v, want one containing %q", tc.arg, err, tc.err)
			}
		case err != nil:
			t.Errorf("--idle-timeout %q: %v", tc.arg, err)
		case d != tc.want:
			t.Errorf("--idle-timeout %q = %v, want %v", tc.arg, d, tc.want)
		}
	}
	// Unset, the flag keeps its default, shown as Go writes it.
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var d time.Duration
	options.DurationVar(fs, &d, "drain-timeout", 10*time.Second, "")
	if err := fs.Parse(nil); err != nil || d != 10*time.Second || fs.Lookup("drain-timeout").DefValue != "10s" {
		t.Errorf("default: %v %v %q", err, d, fs.Lookup("drain-timeout").DefValue)
	}
}
