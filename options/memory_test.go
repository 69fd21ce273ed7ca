package options

import (
	"strings"
	"testing"
	"time"
)

// TestParseMemorySize covers Flink's MemorySize spellings: a number, optional
// spaces, a unit of powers of 1024 in any case, or bytes without one.
func TestParseMemorySize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64 // -1: refused
	}{
		{"0", 0},
		{"100", 100},
		{"100b", 100},
		{"100 bytes", 100},
		{"128mb", 128 << 20},
		{"128 MB", 128 << 20},
		{"128m", 128 << 20},
		{"512 kb", 512 << 10},
		{"1 gb", 1 << 30},
		{"2 tebibytes", 2 << 40},
		{"", -1},
		{"mb", -1},
		{"1.5 mb", -1},
		{"-1 mb", -1},
		{"5 parsecs", -1},
		{"99999999 tb", -1},
	} {
		got, err := parseMemorySize(c.in)
		if c.want < 0 {
			if err == nil {
				t.Errorf("parseMemorySize(%q) = %d, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("parseMemorySize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

// TestRanges: a memory size or a duration outside its declared range is
// refused with the range in the message, and the documentation shows it.
func TestRanges(t *testing.T) {
	set := &Set{Owner: "connector 'x'", Options: []Option{
		{Key: "size", Type: MemorySize, Default: "128mb", Min: 1 << 10, HasMin: true, Max: 1 << 40, HasMax: true},
		{Key: "every", Type: Duration, Default: "1 min", Min: int64(time.Millisecond), HasMin: true},
	}}
	v, err := Parse(nil, nil, set)
	if err != nil || v.Bytes("size") != 128<<20 || v.Duration("every") != time.Minute {
		t.Fatalf("defaults: %v, size %d, every %v", err, v.Bytes("size"), v.Duration("every"))
	}
	for _, c := range []struct{ key, val, want string }{
		{"size", "1", "'size' must be a memory size from 1kb to 1tb such as '512 kb', '128 mb' or '1 gb' (units: b, kb, mb, gb, tb; a bare number is bytes), got '1'"},
		{"size", "2 tb", "got '2 tb'"},
		{"size", "lots", "got 'lots'"},
		{"every", "0", "'every' must be a duration >= 1 ms with a unit such as '500 ms', '30 s' or '5 min' (units: ms, s, min, h, d), got '0'"},
	} {
		_, err := Parse([]KV{{c.key, c.val}}, nil, set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %q: got %v, want %q", c.key, c.val, err, c.want)
		}
	}
	doc := Markdown(set)
	for _, want := range []string{"| `size` | memory size from 1kb to 1tb | `128mb` |", "| `every` | duration >= 1 ms | `1 min` |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, doc)
		}
	}
}

func TestFormatSizes(t *testing.T) {
	for n, want := range map[int64]string{0: "0b", 7: "7b", 1536 << 10: "1536kb", 128 << 20: "128mb", 1 << 40: "1tb"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0 ms", 30 * time.Minute: "30 min", 100 * time.Millisecond: "100 ms", 1500 * time.Millisecond: "1500 ms", 36 * time.Hour: "36 h"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
