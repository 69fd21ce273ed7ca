package json

import (
	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Dates and times follow Flink's JSON format: DATE is yyyy-MM-dd, TIME is
// HH:mm[:ss[.fffffffff]], and the two timestamp standards differ only in the
// separator between date and time (' ' for SQL, 'T' for ISO-8601). A
// TIMESTAMP_LTZ value names its instant: it ends in 'Z' (Flink's only form)
// or, as an extension, in a numeric offset +hh:mm / -hh:mm, which is applied
// to get UTC. A TIMESTAMP (wall-clock time) takes neither. Fractional digits
// beyond the column's precision are truncated, as Flink's CAST to a lower
// precision does; more than nine is an error.

// Writing dates and times: the same forms, with the fraction written to
// the column's precision and its trailing zeros dropped (java.time's
// formatter with appendFraction(NANO_OF_SECOND, 0, 9, true), which Flink's
// JSON format uses), and only years the reading side accepts.

var (
	minDay = calendar.DaysFromCivil(0, 1, 1)
	maxDay = calendar.DaysFromCivil(9999, 12, 31)
)

// appendDate writes yyyy-MM-dd for days since 1970-01-01.
func appendDate(b []byte, days int64) ([]byte, *table.EncodeError) {
	if days < minDay || days > maxDay {
		y, _, _ := calendar.CivilFromDays(days)
		return b, failf("the year %d is outside 0000..9999, the years a JSON date is written with", y)
	}
	return calendar.AppendDate(b, days), nil
}

// appendClock writes HH:mm:ss and the fraction of nanos (of the day, in
// range) to precision p, trailing zeros dropped.
func appendClock(b []byte, nanos int64, p int) []byte {
	b = calendar.AppendClock(b, nanos, p)
	if p == 0 {
		return b
	}
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	return b
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
	secs, units := calendar.FloorDiv(v, 1e9/n.perUnit)
	days, sod := calendar.FloorDiv(secs, calendar.SecsPerDay)
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
	if n.kind == types.TimestampLTZ {
		b = append(b, 'Z')
	}
	return append(b, '"'), nil
}
