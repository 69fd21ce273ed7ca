package calendar

import "strconv"

// Widths says how many digits the fields of a date or a time take at the
// least; a year takes at most four, the other fields at most two.
type Widths struct {
	year, field int
}

var (
	// Fixed is every field at its full width, yyyy-MM-dd and HH:mm:ss:
	// the text Flink's JSON format reads.
	Fixed = Widths{year: 4, field: 2}
	// Loose takes a year of one to four digits and the other fields of one
	// or two (2024-1-5, 9:30): the text Flink's CAST reads.
	Loose = Widths{year: 1, field: 1}
)

// digits reads from fewest to most decimal digits at s[i:] and returns
// their value and the position after them.
func digits[T ~string | ~[]byte](s T, i, fewest, most int) (int64, int, bool) {
	var v int64
	j := i
	for j < len(s) && j-i < most {
		c := s[j] - '0'
		if c > 9 {
			break
		}
		v = v*10 + int64(c)
		j++
	}
	return v, j, j-i >= fewest
}

// field reads a field of one or two digits at s[i:], at least fewest of
// them, as digits does; without its loop, since the fields of dates and
// times are most of what reading them costs.
func field[T ~string | ~[]byte](s T, i, fewest int) (int64, int, bool) {
	if i >= len(s) || s[i]-'0' > 9 {
		return 0, i, false
	}
	v := int64(s[i] - '0')
	if i+1 < len(s) && s[i+1]-'0' <= 9 {
		return v*10 + int64(s[i+1]-'0'), i + 2, true
	}
	return v, i + 1, fewest <= 1
}

// ParseDate reads yyyy-MM-dd from the start of s, with the field widths w,
// and returns the days since 1970-01-01 and the rest of s. A day the month
// does not have (2023-02-29) is not a date.
func ParseDate[T ~string | ~[]byte](s T, w Widths) (days int64, rest T, ok bool) {
	var zero T
	var y int64
	i := 4
	if len(s) > 4 && s[0]-'0' <= 9 && s[1]-'0' <= 9 && s[2]-'0' <= 9 && s[3]-'0' <= 9 {
		// Four digits, the year of nearly every date, without digits'
		// loop.
		y = int64(s[0]-'0')*1000 + int64(s[1]-'0')*100 + int64(s[2]-'0')*10 + int64(s[3]-'0')
	} else if y, i, ok = digits(s, 0, w.year, 4); !ok {
		return 0, zero, false
	}
	if i >= len(s) || s[i] != '-' {
		return 0, zero, false
	}
	m, i, ok := field(s, i+1, w.field)
	if !ok || i >= len(s) || s[i] != '-' {
		return 0, zero, false
	}
	d, i, ok := field(s, i+1, w.field)
	if !ok || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, zero, false
	}
	return DaysFromCivil(y, m, d), s[i:], true
}

// ParseTime reads HH:mm[:ss[.fffffffff]] from the start of s, with the
// field widths w and one to nine fractional digits, and returns the
// nanoseconds since midnight and the rest of s.
func ParseTime[T ~string | ~[]byte](s T, w Widths) (nanos int64, rest T, ok bool) {
	var zero T
	h, i, ok := field(s, 0, w.field)
	if !ok || h > 23 || i >= len(s) || s[i] != ':' {
		return 0, zero, false
	}
	m, i, ok := field(s, i+1, w.field)
	if !ok || m > 59 {
		return 0, zero, false
	}
	secs := h*3600 + m*60
	var frac int64
	if i < len(s) && s[i] == ':' {
		var sec int64
		if sec, i, ok = field(s, i+1, w.field); !ok || sec > 59 {
			return 0, zero, false
		}
		secs += sec
		if i < len(s) && s[i] == '.' {
			start := i + 1
			if frac, i, ok = digits(s, start, 1, 9); !ok || i < len(s) && s[i]-'0' <= 9 {
				return 0, zero, false // none, or more than nine
			}
			frac *= digitNanos[i-start]
		}
	}
	return secs*NanosPerSec + frac, s[i:], true
}

// ParseOffset reads the zone of an instant's text, which must be all of s:
// "Z", or +hh:mm / -hh:mm up to 18 hours. It returns the offset east of
// UTC in seconds.
func ParseOffset[T ~string | ~[]byte](s T) (int64, bool) {
	if len(s) == 1 && s[0] == 'Z' {
		return 0, true
	}
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, false
	}
	h, _, ok1 := field(s, 1, 2)
	m, _, ok2 := field(s, 4, 2)
	if !ok1 || !ok2 || h > 18 || m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

func append2(b []byte, v int64) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

// AppendDate writes the date days after 1970-01-01 as yyyy-MM-dd. A year
// outside 0..9999 is written as time.Time's Format writes it: a year
// before 0 with a '-' and at least four digits, one after 9999 with all of
// its digits.
func AppendDate(b []byte, days int64) []byte {
	y, m, d := CivilFromDays(days)
	if y < 0 {
		b = append(b, '-')
		y = -y
	}
	if y > 9999 {
		b = strconv.AppendInt(b, y, 10)
	} else {
		b = append2(b, y/100)
		b = append2(b, y%100)
	}
	b = append(b, '-')
	b = append2(b, m)
	b = append(b, '-')
	return append2(b, d)
}

// AppendClock writes nanos, the nanoseconds since midnight (0 <= nanos <
// NanosPerDay), as HH:mm:ss and a fraction of p digits (0 to 9; none for 0).
func AppendClock(b []byte, nanos int64, p int) []byte {
	secs := nanos / NanosPerSec
	b = append2(b, secs/3600)
	b = append(b, ':')
	b = append2(b, secs/60%60)
	b = append(b, ':')
	b = append2(b, secs%60)
	if p == 0 {
		return b
	}
	b = append(b, '.')
	frac := nanos % NanosPerSec / digitNanos[p]
	start := len(b)
	b = append(b, "000000000"[:p]...)
	for k := len(b) - 1; k >= start; k-- {
		b[k] = byte('0' + frac%10)
		frac /= 10
	}
	return b
}
