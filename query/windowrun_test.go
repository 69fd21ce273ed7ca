package query

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// toMillis and fromMillis convert between each unit and milliseconds,
// truncating toward zero as integer division does, before the epoch too.
func TestMillisUnits(t *testing.T) {
	cases := []struct {
		unit      arrow.TimeUnit
		v, millis int64 // toMillis(v) = millis
		back      int64 // fromMillis(millis)
	}{
		{arrow.Second, 90, 90_000, 90},
		{arrow.Second, -90, -90_000, -90},
		{arrow.Millisecond, -1_234, -1_234, -1_234},
		{arrow.Microsecond, 1_234_567, 1_234, 1_234_000},
		{arrow.Microsecond, -1_234_567, -1_234, -1_234_000},
		{arrow.Nanosecond, 1_234_567_891, 1_234, 1_234_000_000},
		{arrow.Nanosecond, -999_999, 0, 0},
	}
	for _, c := range cases {
		if got := toMillis(c.v, c.unit); got != c.millis {
			t.Errorf("toMillis(%d, %s) = %d, want %d", c.v, c.unit, got, c.millis)
		}
		if got := fromMillis(c.millis, c.unit); got != c.back {
			t.Errorf("fromMillis(%d, %s) = %d, want %d", c.millis, c.unit, got, c.back)
		}
	}
	// From milliseconds to seconds truncates toward zero as well.
	if got := fromMillis(-1_500, arrow.Second); got != -1 {
		t.Errorf("fromMillis(-1500, s) = %d, want -1", got)
	}
}
