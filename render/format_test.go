package render

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/types"
)

// A timestamp formatter keeps the last value's text (window rows repeat
// their bounds): repeated, alternating and zero values, and NULLs between
// them, still read right.
func TestFormatterRepeatedTimestamps(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	defer b.Release()
	b.AppendValues([]arrow.Timestamp{0, 0, 60_000, 60_000, 0, 1_500}, nil)
	b.AppendNull()
	b.Append(1_500)
	col := b.NewArray()
	defer col.Release()
	f := Formatter(col, &types.DataType{Kind: types.Timestamp, Precision: 3})
	want := []string{"1970-01-01 00:00:00.000", "1970-01-01 00:00:00.000", "1970-01-01 00:01:00.000", "1970-01-01 00:01:00.000",
		"1970-01-01 00:00:00.000", "1970-01-01 00:00:01.500", "", "1970-01-01 00:00:01.500"}
	for i, w := range want {
		got, ok := f(i)
		if got != w || ok != (w != "") {
			t.Errorf("row %d: %q, %v; want %q, %v", i, got, ok, w, w != "")
		}
	}
}

// Dates, times and timestamps of every unit render as the time package
// formats them (which is how they were rendered before the calendar
// arithmetic was kshare's own), before 1970 and far from it too.
func TestFormatterTimesAsTimePackage(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	r := rand.New(rand.NewPCG(7, 8))
	vals := []int64{0, -1, 1, 999, -999, 86_399_999, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for range 3000 {
		vals = append(vals, r.Int64()>>r.IntN(63))
	}
	for p := 0; p <= 9; p++ {
		unit := types.TimeUnit(p)
		per := int64(time.Second / unit.Multiplier())
		layout := "15:04:05"
		if p > 0 {
			layout += "." + strings.Repeat("0", p)
		}
		ts := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: unit})
		tm := array.NewBuilder(mem, (&types.DataType{Kind: types.Time, Precision: p}).ArrowType())
		var days []int64
		for _, v := range vals {
			ts.Append(arrow.Timestamp(v))
			// A TIME is within a day.
			_, tod := calendar.FloorDiv(v, calendar.SecsPerDay*per)
			switch b := tm.(type) {
			case *array.Time32Builder:
				b.Append(arrow.Time32(tod))
			case *array.Time64Builder:
				b.Append(arrow.Time64(tod))
			}
			days = append(days, tod)
		}
		tsa, tma := ts.NewArray(), tm.NewArray()
		ts.Release()
		tm.Release()
		defer tsa.Release()
		defer tma.Release()
		fts := Formatter(tsa, &types.DataType{Kind: types.TimestampLTZ, Precision: p})
		ftm := Formatter(tma, &types.DataType{Kind: types.Time, Precision: p})
		for i, v := range vals {
			at := time.Unix(v/per, v%per*int64(unit.Multiplier())).UTC()
			// Seconds near the ends of int64 are beyond what time.Time
			// holds (its years wrap around); the oracle stops there.
			if got, _ := fts(i); got != at.Format("2006-01-02 "+layout) && v/per > -1<<62 && v/per < 1<<62 {
				t.Fatalf("TIMESTAMP_LTZ(%d) %d: %q, want %q", p, v, got, at.Format("2006-01-02 "+layout))
			}
			clock := time.Unix(days[i]/per, days[i]%per*int64(unit.Multiplier())).UTC().Format(layout)
			if got, _ := ftm(i); got != clock {
				t.Fatalf("TIME(%d) %d: %q, want %q", p, days[i], got, clock)
			}
		}
	}
	db := array.NewDate32Builder(mem)
	for _, v := range vals {
		db.Append(arrow.Date32(int32(v)))
	}
	da := db.NewArray()
	db.Release()
	defer da.Release()
	fd := Formatter(da, &types.DataType{Kind: types.Date})
	for i, v := range vals {
		want := time.Unix(int64(int32(v))*calendar.SecsPerDay, 0).UTC().Format("2006-01-02")
		if got, _ := fd(i); got != want {
			t.Fatalf("DATE %d: %q, want %q", int32(v), got, want)
		}
	}
}
