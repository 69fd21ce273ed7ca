// Package calendar is the arithmetic of dates and times in integers: days
// since 1970-01-01 and the dates of the proleptic Gregorian calendar,
// instants of seconds and nanoseconds, fractional precision, and the text
// of dates and times (yyyy-MM-dd, HH:mm:ss.fffffffff), read and written
// without time.Time, whose zone and allocations the paths that run once a
// value do not want. Flink's DATE, TIME and TIMESTAMP have no zone; the
// instants of TIMESTAMP_LTZ are in UTC, kshare's session time zone.
//
// It is the one place for this arithmetic: the formats (format/json), the
// rendering of values (render) and the casts and functions of expressions
// (expr) all use it, so it imports nothing of kshare's.
package calendar
