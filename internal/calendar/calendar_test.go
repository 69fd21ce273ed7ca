package calendar

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The days of a date agree with the time package's proleptic Gregorian
// calendar, both ways, from before year 0 to beyond 9999.
func TestCivilDays(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	days := []int64{0, -1, 1, 59, 60, -719528, -719529, 2932896, 2932897, 11016, 19782, -141427}
	for range 20000 {
		days = append(days, r.Int64N(8_000_000)-4_000_000)
	}
	for _, d := range days {
		tm := time.Unix(d*SecsPerDay, 0).UTC()
		y, m, dd := CivilFromDays(d)
		if y != int64(tm.Year()) || m != int64(tm.Month()) || dd != int64(tm.Day()) {
			t.Fatalf("CivilFromDays(%d) = %d-%d-%d, want %s", d, y, m, dd, tm.Format("2006-01-02"))
		}
		if back := DaysFromCivil(y, m, dd); back != d {
			t.Fatalf("DaysFromCivil(%d, %d, %d) = %d, want %d", y, m, dd, back, d)
		}
	}
}

func TestFloorDiv(t *testing.T) {
	cases := []struct{ a, b, q, r int64 }{
		{7, 2, 3, 1}, {-7, 2, -4, 1}, {-8, 2, -4, 0}, {0, 5, 0, 0},
		{-1, SecsPerDay, -1, SecsPerDay - 1}, {math.MinInt64, 1000, -9_223_372_036_854_776, 192},
	}
	for _, c := range cases {
		if q, r := FloorDiv(c.a, c.b); q != c.q || r != c.r {
			t.Errorf("FloorDiv(%d, %d) = %d, %d; want %d, %d", c.a, c.b, q, r, c.q, c.r)
		}
	}
}

func TestTruncate(t *testing.T) {
	const v = 45_296_123_456_789 // 12:34:56.123456789
	want := []int64{45_296_000_000_000, 45_296_100_000_000, 45_296_120_000_000, 45_296_123_000_000, 45_296_123_400_000,
		45_296_123_450_000, 45_296_123_456_000, 45_296_123_456_700, 45_296_123_456_780, v}
	for p, w := range want {
		if got := Truncate(v, p); got != w {
			t.Errorf("Truncate(%d, %d) = %d, want %d", int64(v), p, got, w)
		}
	}
}

// ToUnit holds every instant each unit can, and refuses the first beyond:
// only nanoseconds overflow, just outside 1677-09-21 and 2262-04-11.
func TestToUnit(t *testing.T) {
	const ns, us, ms, s = 1, 1e3, 1e6, 1e9
	minSec, minNsec := FloorDiv(math.MinInt64, NanosPerSec)
	maxSec, maxNsec := FloorDiv(math.MaxInt64, NanosPerSec)
	cases := []struct {
		secs, nanos, per int64
		want             int64
		ok               bool
	}{
		{0, 0, ns, 0, true},
		{-1, 999_999_999, ns, -1, true},
		{-1, 500_000_000, ms, -500, true},
		{1_700_000_000, 123_000, us, 1_700_000_000_000_123, true},
		{-62_135_596_800, 0, s, -62_135_596_800, true},
		{minSec, minNsec, ns, math.MinInt64, true},
		{minSec, minNsec - 1, ns, 0, false},
		{maxSec, maxNsec, ns, math.MaxInt64, true},
		{maxSec, maxNsec + 1, ns, 0, false},
		{math.MaxInt64/1000 + 1, 0, ms, 0, false},
		{math.MinInt64/1000 - 1, 0, ms, 0, false},
		{math.MaxInt64/1000 - 1, 999_000_000, ms, (math.MaxInt64/1000-1)*1000 + 999, true},
		{math.MinInt64/1000 - 1, 999_000_000, ms, (math.MinInt64/1000-1)*1000 + 999, true},
	}
	for _, c := range cases {
		got, ok := ToUnit(c.secs, c.nanos, c.per)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("ToUnit(%d, %d, %d) = %d, %v; want %d, %v", c.secs, c.nanos, c.per, got, ok, c.want, c.ok)
		}
	}
}
