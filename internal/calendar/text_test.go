package calendar

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	cases := []struct {
		in           string
		fixed, loose string // the date read as yyyy-mm-dd and the rest, "" if refused
	}{
		{"2026-12-02", "2026-12-02|", "2026-12-02|"},
		{"1969-12-31", "1969-12-31|", "1969-12-31|"},
		{"2024-02-29", "2024-02-29|", "2024-02-29|"},
		{"0001-01-01", "0001-01-01|", "0001-01-01|"},
		{"0000-01-01", "0000-01-01|", "0000-01-01|"},
		{"9999-12-31", "9999-12-31|", "9999-12-31|"},
		{"2026-12-02 10:15", "2026-12-02| 10:15", "2026-12-02| 10:15"},
		{"2026-12-02T10:15", "2026-12-02|T10:15", "2026-12-02|T10:15"},
		{"2026-12-02 ", "2026-12-02| ", "2026-12-02| "},
		{"2026-1-01", "", "2026-01-01|"},
		{"2024-1-5", "", "2024-01-05|"},
		{"24-01-05", "", "0024-01-05|"},
		{"7-1-1", "", "0007-01-01|"},
		{"2023-02-29", "", ""},
		{"1900-02-29", "", ""},
		{"2000-02-29", "2000-02-29|", "2000-02-29|"},
		{"2026-13-01", "", ""},
		{"2026-00-01", "", ""},
		{"2026-04-31", "", ""},
		{"2026-04-00", "", ""},
		{"2024-99-01", "", ""},
		{"20261-01-01", "", ""},
		{"2026-001-01", "", ""},
		{"2026-01-001", "", ""}, // day 00, then a digit
		{"2026-+1-05", "", ""},
		{"2026/01/01", "", ""},
		{"-2026-01-01", "", ""},
		{"2026-01", "", ""},
		{"2026-01-", "", ""},
		{"", "", ""},
		{"20261202", "", ""},
	}
	show := func(days int64, rest string, ok bool) string {
		if !ok {
			return ""
		}
		return time.Unix(days*SecsPerDay, 0).UTC().Format("2006-01-02") + "|" + rest
	}
	for _, c := range cases {
		eachWidth(t, "ParseDate", c.in, c.fixed, c.loose,
			func(s string, w Widths) string { return show(ParseDate(s, w)) },
			func(b []byte, w Widths) string {
				days, rest, ok := ParseDate(b, w)
				return show(days, string(rest), ok)
			})
	}
}

// eachWidth checks what read gives for in with Fixed and with Loose
// widths, and that readBytes gives the same for in's bytes.
func eachWidth(t *testing.T, name, in, fixed, loose string, read func(string, Widths) string, readBytes func([]byte, Widths) string) {
	t.Helper()
	for _, w := range []struct {
		name string
		w    Widths
		want string
	}{{"Fixed", Fixed, fixed}, {"Loose", Loose, loose}} {
		got := read(in, w.w)
		if got != w.want {
			t.Errorf("%s(%q, %s) = %q, want %q", name, in, w.name, got, w.want)
		}
		if b := readBytes([]byte(in), w.w); b != got {
			t.Errorf("%s([]byte(%q), %s) = %q, but %q as a string", name, in, w.name, b, got)
		}
	}
}

func TestParseTime(t *testing.T) {
	cases := []struct {
		in           string
		fixed, loose string // the time of day (as a time.Duration) and the rest, "" if refused
	}{
		{"10:15:30.123", "10h15m30.123s|", "10h15m30.123s|"},
		{"23:59:59", "23h59m59s|", "23h59m59s|"},
		{"00:00", "0s|", "0s|"},
		{"12:30", "12h30m0s|", "12h30m0s|"},
		{"10:15:30.123456789", "10h15m30.123456789s|", "10h15m30.123456789s|"},
		{"10:15:30.1", "10h15m30.1s|", "10h15m30.1s|"},
		{"10:15:30.123Z", "10h15m30.123s|Z", "10h15m30.123s|Z"},
		{"10:15:30+02:00", "10h15m30s|+02:00", "10h15m30s|+02:00"},
		{"10:15 ", "10h15m0s| ", "10h15m0s| "},
		{"9:05", "", "9h5m0s|"},
		{"9:5:7", "", "9h5m7s|"},
		{"9:5:7.25", "", "9h5m7.25s|"},
		{"24:00:00", "", ""},
		{"10:60", "", ""},
		{"10:15:60", "", ""},
		{"10:15:30.1234567891", "", ""},
		{"10:15:30.", "", ""},
		{"10:15.5", "10h15m0s|.5", "10h15m0s|.5"},
		{"100:00", "", ""},
		{"10:15:3", "", "10h15m3s|"},
		{"10:15:3x", "", "10h15m3s|x"},
		{"10:15:", "", ""},
		{"+1:30", "", ""},
		{"10", "", ""},
		{"", "", ""},
	}
	show := func(nanos int64, rest string, ok bool) string {
		if !ok {
			return ""
		}
		return time.Duration(nanos).String() + "|" + rest
	}
	for _, c := range cases {
		eachWidth(t, "ParseTime", c.in, c.fixed, c.loose,
			func(s string, w Widths) string { return show(ParseTime(s, w)) },
			func(b []byte, w Widths) string {
				nanos, rest, ok := ParseTime(b, w)
				return show(nanos, string(rest), ok)
			})
	}
}

func TestParseOffset(t *testing.T) {
	cases := []struct {
		in   string
		secs int64
		ok   bool
	}{
		{"Z", 0, true}, {"+02:00", 7200, true}, {"-05:30", -19800, true}, {"+18:00", 64800, true},
		{"+00:00", 0, true}, {"+25:00", 0, false}, {"+19:00", 0, false}, {"+02:60", 0, false},
		{"z", 0, false}, {"", 0, false}, {"+0200", 0, false}, {"+02:00Z", 0, false}, {"02:00", 0, false},
		{"+2:00", 0, false}, {"Z ", 0, false},
	}
	for _, c := range cases {
		if secs, ok := ParseOffset(c.in); secs != c.secs || ok != c.ok {
			t.Errorf("ParseOffset(%q) = %d, %v; want %d, %v", c.in, secs, ok, c.secs, c.ok)
		}
	}
}

// AppendDate and AppendClock write what the time package's Format writes,
// for every year an int64 of milliseconds reaches.
func TestAppendAsTimeFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	secs := []int64{0, -1, 1, 86399, 86400, -62_167_219_200, -62_167_219_201, 253_402_300_799, 253_402_300_800,
		math.MaxInt64 / 1000, math.MinInt64 / 1000}
	for range 20000 {
		secs = append(secs, r.Int64()>>r.IntN(40)/1000)
	}
	var b []byte
	for k, s := range secs {
		nsec := r.Int64N(NanosPerSec)
		p := k % 10
		days, sod := FloorDiv(s, SecsPerDay)
		b = AppendDate(b[:0], days)
		b = append(b, ' ')
		b = AppendClock(b, sod*NanosPerSec+nsec, p)
		layout := "2006-01-02 15:04:05"
		if p > 0 {
			layout += "." + strings.Repeat("0", p)
		}
		// Format rounds nothing: its fraction digits are truncated too.
		if want := time.Unix(s, nsec).UTC().Format(layout); string(b) != want {
			t.Fatalf("second %d, nanosecond %d, precision %d: %q, want %q", s, nsec, p, b, want)
		}
	}
}

// Whatever the text, the readers do not panic and read bytes as they read a
// string; a date or time either width reads is written back in the fixed
// widths, which read it again as the same value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"2026-12-02", "2024-1-5", "2023-02-29", "10:15:30.123", "9:5:7.25", "24:00", "+02:00", "Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range []Widths{Fixed, Loose} {
			days, rest, ok := ParseDate(s, w)
			if bdays, brest, bok := ParseDate([]byte(s), w); bdays != days || string(brest) != rest || bok != ok {
				t.Fatalf("ParseDate(%q) reads bytes and a string differently", s)
			}
			if ok {
				text := AppendDate(nil, days)
				if again, rest, ok := ParseDate(text, Fixed); !ok || len(rest) != 0 || again != days {
					t.Fatalf("ParseDate(%q) = %d, written %q, read again %d, %v", s, days, text, again, ok)
				}
			}
			nanos, rest, ok := ParseTime(s, w)
			if bn, brest, bok := ParseTime([]byte(s), w); bn != nanos || string(brest) != rest || bok != ok {
				t.Fatalf("ParseTime(%q) reads bytes and a string differently", s)
			}
			if ok {
				text := AppendClock(nil, nanos, 9)
				if again, rest, ok := ParseTime(text, Fixed); !ok || len(rest) != 0 || again != nanos {
					t.Fatalf("ParseTime(%q) = %d, written %q, read again %d, %v", s, nanos, text, again, ok)
				}
			}
		}
		off, ok := ParseOffset(s)
		if boff, bok := ParseOffset([]byte(s)); boff != off || bok != ok {
			t.Fatalf("ParseOffset(%q) reads bytes and a string differently", s)
		}
	})
}
