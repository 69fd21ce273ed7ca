package options

import (
	"strings"
	"testing"
	"time"
)

// TestParseDuration covers Flink's spellings (a number, optional spaces,
// one unit label or its plural), Go's, and where a bare number is allowed.
func TestParseDuration(t *testing.T) {
	const bad = time.Duration(-1)
	for _, c := range []struct {
		in         string
		bareMillis bool
		want       time.Duration
	}{
		{"0", false, 0},
		{"0", true, 0},
		{"5", false, bad},
		{"5000", true, 5 * time.Second},
		{"500ms", false, 500 * time.Millisecond},
		{"500 ms", false, 500 * time.Millisecond},
		{"30 s", false, 30 * time.Second},
		{"30 secs", false, 30 * time.Second},
		{"30 seconds", false, 30 * time.Second},
		{"5 min", false, 5 * time.Minute},
		{"5min", false, 5 * time.Minute},
		{"5 minutes", false, 5 * time.Minute},
		{"5m", false, 5 * time.Minute},
		{"2 Hours", false, 2 * time.Hour},
		{"1 d", false, 24 * time.Hour},
		{"3 days", false, 72 * time.Hour},
		{"7 us", false, 7 * time.Microsecond},
		{"7 nanos", false, 7 * time.Nanosecond},
		{"1m30s", false, 90 * time.Second},
		{"1.5s", false, 1500 * time.Millisecond},
		{" 2s ", false, 2 * time.Second},
		{"-1s", false, bad},
		{"", false, bad},
		{"s", false, bad},
		{"5 fortnights", false, bad},
		{"5 ss", false, bad},
		{"99999999999999999 d", false, bad},
		{"99999999999999999999", true, bad},
	} {
		got, err := parseDuration(c.in, c.bareMillis)
		if c.want == bad {
			if err == nil {
				t.Errorf("parseDuration(%q, %v) = %v, want an error", c.in, c.bareMillis, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseDuration(%q, %v) = %v, %v; want %v", c.in, c.bareMillis, got, err, c.want)
		}
	}
}

// TestDurationMessage checks that a refused duration names the units.
func TestDurationMessage(t *testing.T) {
	set := &Set{Owner: "connector 'x'", Options: []Option{{Key: "wait", Type: Duration}}}
	_, err := Parse(kvs("wait", "5"), nil, set)
	want := "'wait' must be a duration with a unit such as '500 ms', '30 s' or '5 min' (units: ms, s, min, h, d), got '5'"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want it to say %q", err, want)
	}
}
