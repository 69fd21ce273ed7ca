package calendar

import (
	"math"
	"time"
)

// The units of the time line, as int64s for the arithmetic of instants.
const (
	NanosPerSec = int64(time.Second)
	SecsPerDay  = int64(24 * 60 * 60)
	NanosPerDay = SecsPerDay * NanosPerSec
)

// Instant is a point on the UTC time line: seconds since the epoch and the
// nanoseconds within that second (0 <= Nsec < 1e9). It holds every value of
// every timestamp unit, which a single int64 of nanoseconds would not.
type Instant struct {
	Sec  int64
	Nsec int64
}

// FloorDiv divides rounding toward negative infinity, so that the remainder
// is never negative (for b > 0): days and instants before 1970 keep a
// time of day that counts forward from midnight.
func FloorDiv(a, b int64) (q, r int64) {
	q, r = a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// DaysFromCivil counts the days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (Howard Hinnant's days_from_civil), for any year.
func DaysFromCivil(y, m, d int64) int64 {
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

// CivilFromDays is the inverse of DaysFromCivil.
func CivilFromDays(days int64) (y, m, d int64) {
	z := days + 719468
	era := z / 146097
	if z < 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysIn is the number of days of month m (1 to 12) of year y.
func daysIn(y, m int64) int64 {
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

// digitNanos[p] is the nanoseconds of the last fractional digit of a
// second at precision p (0 to 9).
var digitNanos = [...]int64{1e9, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3, 100, 10, 1}

// Truncate drops the fractional digits of nanos (not negative) beyond
// precision p (0 to 9): Flink truncates, not rounds, when it lowers a time's
// precision.
func Truncate(nanos int64, p int) int64 {
	return nanos - nanos%digitNanos[p]
}

// ToUnit expresses secs seconds and nanos nanoseconds (0 <= nanos < 1e9)
// since the epoch in units of perUnit nanoseconds (arrow.TimeUnit's
// Multiplier), reporting an overflow of int64 (which only the nanosecond
// unit can reach, outside 1677..2262). nanos is a multiple of perUnit: it
// was truncated to a precision the unit holds.
func ToUnit(secs, nanos, perUnit int64) (int64, bool) {
	perSec := NanosPerSec / perUnit
	if secs < 0 && nanos > 0 {
		// Borrow a second so that the smallest instant, whose seconds
		// alone would overflow, still fits.
		secs++
		nanos -= NanosPerSec
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
