package json

import (
	"math"

	"github.com/kshare/kshare/table"
)

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

// Writing dates and times: the same forms, with the fraction written to
// the column's precision and its trailing zeros dropped (java.time's
// formatter with appendFraction(NANO_OF_SECOND, 0, 9, true), which Flink's
// JSON format uses), and only years the reading side accepts.

var (
	minDay = daysFromCivil(0, 1, 1)
	maxDay = daysFromCivil(9999, 12, 31)
)

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
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

func append2(b []byte, v int64) []byte {
	return append(b, byte('0'+v/10), byte('0'+v%10))
}

// appendDate writes yyyy-MM-dd for days since 1970-01-01.
func appendDate(b []byte, days int64) ([]byte, *table.EncodeError) {
	if days < minDay || days > maxDay {
		y, _, _ := civilFromDays(days)
		return b, failf("the year %d is outside 0000..9999, the years a JSON date is written with", y)
	}
	y, m, d := civilFromDays(days)
	b = append2(b, y/100)
	b = append2(b, y%100)
	b = append(b, '-')
	b = append2(b, m)
	b = append(b, '-')
	return append2(b, d), nil
}

// appendClock writes HH:mm:ss and the fraction of nanos (of the day, in
// range) to precision p, trailing zeros dropped.
func appendClock(b []byte, nanos int64, p int) []byte {
	secs := nanos / 1e9
	b = append2(b, secs/3600)
	b = append(b, ':')
	b = append2(b, secs/60%60)
	b = append(b, ':')
	b = append2(b, secs%60)
	frac := nanos % 1e9 / pow10[9-p]
	if frac == 0 {
		return b
	}
	for frac%10 == 0 {
		frac /= 10
		p--
	}
	b = append(b, '.')
	for k := p - 1; k >= 0; k-- {
		b = append(b, byte('0'+frac/pow10[k]%10))
	}
	return b
}

func floorDivMod(a, b int64) (int64, int64) {
	q, r := a/b, a%b
	if r < 0 {
		q--
		r += b
	}
	return q, r
}

// time writes a TIME value: its unit's count since midnight.
func (e *encoder) time(b []byte, n *enode, i int) ([]byte, *table.EncodeError) {
	var v int64
	if n.t32 != nil {
		v = int64(n.t32.Value(i))
	} else {
		v = int64(n.t64.Value(i))
	}
	if v < 0 || v >= 86400*(1e9/n.perUnit) {
		return b, failf("the TIME value %d (in units of %dns) is outside one day", v, n.perUnit)
	}
	b = append(b, '"')
	b = appendClock(b, v*n.perUnit, n.t.Precision)
	return append(b, '"'), nil
}

// timestamp writes a TIMESTAMP or TIMESTAMP_LTZ value v, in units of the
// node's array since the epoch (UTC for LTZ).
func (e *encoder) timestamp(b []byte, n *enode, v int64) ([]byte, *table.EncodeError) {
	secs, units := floorDivMod(v, 1e9/n.perUnit)
	days, sod := floorDivMod(secs, 86400)
	b = append(b, '"')
	b, err := appendDate(b, days)
	if err != nil {
		return b, err
	}
	if e.cfg.iso {
		b = append(b, 'T')
	} else {
		b = append(b, ' ')
	}
	b = appendClock(b, sod*1e9+units*n.perUnit, n.t.Precision)
	if n.kind == table.TimestampLTZ {
		b = append(b, 'Z')
	}
	return append(b, '"'), nil
}
