package json

import "math"

// Dates and times follow Flink's JSON format: DATE is yyyy-MM-dd, TIME is
// HH:mm[:ss[.fffffffff]], and the two timestamp standards differ only in the
// separator between date and time (' ' for SQL, 'T' for ISO-8601). A
// TIMESTAMP_LTZ value names its instant: it ends in 'Z' (Flink's only form)
// or, as an extension, in a numeric offset +hh:mm / -hh:mm, which is applied
// to get UTC. A TIMESTAMP (wall-clock time) takes neither. Fractional digits
// beyond the column's precision are truncated, as Flink's CAST to a lower
// precision does; more than nine is an error.

func num2(s []byte, i int) (int, bool) {
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return 0, false
	}
	return int(a)*10 + int(b), true
}

// parseDate reads yyyy-MM-dd from the start of s and returns the days since
// 1970-01-01 and the rest of s.
func parseDate(s []byte) (days int64, rest []byte, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, nil, false
	}
	y1, ok1 := num2(s, 0)
	y2, ok2 := num2(s, 2)
	m, ok3 := num2(s, 5)
	d, ok4 := num2(s, 8)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0, nil, false
	}
	y := y1*100 + y2
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, nil, false
	}
	return daysFromCivil(int64(y), int64(m), int64(d)), s[10:], true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts the days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (Howard Hinnant's algorithm), without time.Time and its
// allocations.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// parseTime reads HH:mm[:ss[.fffffffff]] from the start of s and returns the
// nanoseconds of the day and the rest of s.
func parseTime(s []byte) (nanos int64, rest []byte, ok bool) {
	if len(s) < 5 || s[2] != ':' {
		return 0, nil, false
	}
	h, ok1 := num2(s, 0)
	m, ok2 := num2(s, 3)
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, nil, false
	}
	secs := h*3600 + m*60
	i := 5
	var frac int64
	if i < len(s) && s[i] == ':' {
		if len(s) < i+3 {
			return 0, nil, false
		}
		sec, ok := num2(s, i+1)
		if !ok || sec > 59 {
			return 0, nil, false
		}
		secs += sec
		i += 3
		if i < len(s) && s[i] == '.' {
			i++
			start := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				if i-start >= 9 {
					return 0, nil, false
				}
				frac = frac*10 + int64(s[i]-'0')
				i++
			}
			if i == start {
				return 0, nil, false
			}
			for range 9 - (i - start) {
				frac *= 10
			}
		}
	}
	return int64(secs)*1e9 + frac, s[i:], true
}

// parseOffset reads the zone of a TIMESTAMP_LTZ: "Z" or +hh:mm / -hh:mm,
// which must end s. It returns the offset east of UTC in seconds.
func parseOffset(s []byte) (int64, bool) {
	if len(s) == 1 && s[0] == 'Z' {
		return 0, true
	}
	if len(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' {
		return 0, false
	}
	h, ok1 := num2(s, 1)
	m, ok2 := num2(s, 4)
	if !ok1 || !ok2 || h > 18 || m > 59 {
		return 0, false
	}
	off := int64(h*3600 + m*60)
	if s[0] == '-' {
		off = -off
	}
	return off, true
}

// truncate drops the fractional digits of nanos beyond precision p.
func truncate(nanos int64, p int) int64 {
	return nanos - nanos%pow10[9-p]
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// toUnit expresses secs seconds and nanos nanoseconds (0 <= nanos < 1e9) in
// units of perUnit nanoseconds, reporting overflow of int64 (which only the
// nanosecond unit can reach, outside 1677..2262). nanos is a multiple of
// perUnit, since it was truncated to the column's precision.
func toUnit(secs, nanos, perUnit int64) (int64, bool) {
	perSec := 1e9 / perUnit
	if secs < 0 && nanos > 0 {
		// Borrow a second so that the smallest instant, whose seconds
		// alone would overflow, still fits.
		secs++
		nanos -= 1e9
	}
	if secs > math.MaxInt64/perSec || secs < math.MinInt64/perSec {
		return 0, false
	}
	v := secs * perSec
	f := nanos / perUnit
	s := v + f
	if (f > 0 && s < v) || (f < 0 && s > v) {
		return 0, false
	}
	return s, true
}
