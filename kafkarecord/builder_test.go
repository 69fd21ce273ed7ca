package kafkarecord

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// appendTime gives a record's time in the column's unit as time.Time's own
// conversions do, before the epoch and at the edges of each unit too.
func TestAppendTimeUnits(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	times := []time.Time{
		time.Unix(0, 0),
		time.Unix(1_700_000_000, 123_456_789),
		time.Unix(-1, 999_999_999),
		time.Unix(-86_401, 1),
		time.UnixMilli(-1),
		time.Unix(0, 0).Add(time.Duration(1<<63 - 1)),
		time.Unix(0, 0).Add(time.Duration(-1 << 63)),
	}
	units := []struct {
		unit arrow.TimeUnit
		want func(time.Time) int64
	}{
		{arrow.Second, time.Time.Unix},
		{arrow.Millisecond, time.Time.UnixMilli},
		{arrow.Microsecond, time.Time.UnixMicro},
		{arrow.Nanosecond, time.Time.UnixNano},
	}
	for _, u := range units {
		b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: u.unit})
		for _, tm := range times {
			appendTime(b, tm)
		}
		a := b.NewTimestampArray()
		b.Release()
		for i, tm := range times {
			if got, want := int64(a.Value(i)), u.want(tm); got != want {
				t.Errorf("%s: appendTime(%s) = %d, want %d", u.unit, tm.UTC(), got, want)
			}
		}
		a.Release()
	}
}
