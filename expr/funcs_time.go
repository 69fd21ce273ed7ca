package expr

// This file holds the time functions. kshare's session time zone is UTC, so
// a TIMESTAMP and a TIMESTAMP_LTZ show the same wall clock, and
// CURRENT_TIMESTAMP (TIMESTAMP_LTZ) and LOCALTIMESTAMP (TIMESTAMP) the same
// time.
//
// The current time: Flink's streaming mode evaluates CURRENT_TIMESTAMP and
// the like for each record; kshare evaluates them for each batch, so that
// the rows of a batch share one value and every batch reads the clock
// anew. They are never folded into a constant when the query is planned.

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// clock is the current time; tests may replace it.
var clock = time.Now

var (
	timeArg = argKind{name: "DATE or TIMESTAMP", ok: func(t *types.DataType) bool {
		return t.Kind == types.Date || isTimestamp(t)
	}, null: &types.DataType{Kind: types.Timestamp, Precision: 3}}
	clockArg = argKind{name: "DATE, TIME or TIMESTAMP", ok: func(t *types.DataType) bool {
		return t.Kind == types.Date || t.Kind == types.Time || isTimestamp(t)
	}, null: &types.DataType{Kind: types.Timestamp, Precision: 3}}
	dayTimeArg = argKind{name: "TIME or TIMESTAMP", ok: func(t *types.DataType) bool {
		return t.Kind == types.Time || isTimestamp(t)
	}, null: &types.DataType{Kind: types.Timestamp, Precision: 3}}
	unitArg = argKind{name: "unit", ok: IsChar}
)

func init() {
	now := func(t *types.DataType) func(c *call) (*types.DataType, error) {
		return func(*call) (*types.DataType, error) { return t, nil }
	}
	ltz3 := &types.DataType{Kind: types.TimestampLTZ, Precision: 3, NotNull: true}
	register(
		&funcDef{name: "CURRENT_TIMESTAMP", sig: "CURRENT_TIMESTAMP", volatile: true, desc: "the current time, a TIMESTAMP_LTZ(3)",
			ret: now(ltz3), eval: currentTime},
		&funcDef{name: "NOW", volatile: true, desc: "CURRENT_TIMESTAMP",
			ret: now(ltz3), eval: currentTime},
		&funcDef{name: "PROCTIME", volatile: true, desc: "the processing time, a TIMESTAMP_LTZ(3); as a computed column (pt AS PROCTIME()) a time attribute for windows",
			ret: now(ltz3), eval: currentTime},
		&funcDef{name: "LOCALTIMESTAMP", sig: "LOCALTIMESTAMP", volatile: true, desc: "the current time in the session time zone (UTC), a TIMESTAMP(3)",
			ret: now(&types.DataType{Kind: types.Timestamp, Precision: 3, NotNull: true}), eval: currentTime},
		&funcDef{name: "CURRENT_DATE", sig: "CURRENT_DATE", volatile: true, desc: "the current date (UTC)",
			ret: now(&types.DataType{Kind: types.Date, NotNull: true}), eval: currentTime},
		&funcDef{name: "CURRENT_TIME", sig: "CURRENT_TIME", volatile: true, desc: "the current time of day (UTC), a TIME(0)",
			ret: now(&types.DataType{Kind: types.Time, NotNull: true}), eval: currentTime},
		&funcDef{name: "LOCALTIME", sig: "LOCALTIME", volatile: true, desc: "CURRENT_TIME",
			ret: now(&types.DataType{Kind: types.Time, NotNull: true}), eval: currentTime},
		&funcDef{name: "EXTRACT", args: []argKind{unitArg, clockArg}, sig: "EXTRACT(unit FROM DATE, TIME or TIMESTAMP)",
			desc: "a field of a time as a BIGINT; units: " + strings.Join(extractUnits, ", "),
			ret:  fixedType(types.BigIntType()), prep: extractPrep, eval: extract},
		&funcDef{name: "TIMESTAMPADD", args: []argKind{unitArg, intArg, timeArg}, sig: "TIMESTAMPADD(unit, INTEGER, DATE or TIMESTAMP)",
			desc: "the time plus n units; units: " + strings.Join(addUnits, ", "),
			ret:  timestampAddType, prep: unitOf(0, addUnits), eval: timestampAdd},
		&funcDef{name: "TIMESTAMPDIFF", args: []argKind{unitArg, timeArg, timeArg}, sig: "TIMESTAMPDIFF(unit, DATE or TIMESTAMP, DATE or TIMESTAMP)",
			desc: "the whole units from the first time to the second, an INT; units: " + strings.Join(addUnits, ", "),
			ret:  fixedType(types.IntType()), prep: unitOf(0, addUnits), eval: timestampDiff},
		&funcDef{name: "TO_TIMESTAMP_LTZ", args: []argKind{numArg, intArg},
			desc: "the TIMESTAMP_LTZ(3) of an epoch in seconds (precision 0) or milliseconds (precision 3)",
			ret:  fixedType(&types.DataType{Kind: types.TimestampLTZ, Precision: 3}), prep: epochPrecision, eval: toTimestampLTZ},
	)
	for _, f := range []struct{ name, unit string }{
		{"YEAR", "YEAR"}, {"QUARTER", "QUARTER"}, {"MONTH", "MONTH"}, {"WEEK", "WEEK"},
		{"DAYOFYEAR", "DOY"}, {"DAYOFMONTH", "DAY"}, {"DAYOFWEEK", "DOW"},
		{"HOUR", "HOUR"}, {"MINUTE", "MINUTE"}, {"SECOND", "SECOND"},
	} {
		arg := timeArg
		if f.unit == "HOUR" || f.unit == "MINUTE" || f.unit == "SECOND" {
			arg = dayTimeArg
		}
		unit := f.unit
		register(&funcDef{name: f.name, args: []argKind{arg}, desc: "EXTRACT(" + unit + " FROM t)",
			ret: fixedType(types.BigIntType()),
			eval: func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
				return extractField(ec, c, unit, as[0], c.args[0].Type())
			}})
	}
}

// currentTime is the clock read once for the batch: one value, which
// call.eval spreads over the batch.
func currentTime(ec *EvalCtx, c *call, _ []arrow.Array) (arrow.Array, error) {
	b := array.NewBuilder(ec.mem, c.t.ArrowType())
	defer b.Release()
	if err := putTime(b, clock().UTC(), c.t); err != nil {
		return nil, err
	}
	return b.NewArray(), nil
}

// timeAt reads value i of a DATE, TIME or TIMESTAMP array as a time in UTC
// (a TIME on 1970-01-01).
func timesOf(a arrow.Array, t *types.DataType) func(int) time.Time {
	if t.Kind == types.Time {
		r := render.TimeReader(a)
		return func(i int) time.Time { return time.Unix(0, r(i)).UTC() }
	}
	r := render.InstantReader(a)
	return func(i int) time.Time {
		v := r(i)
		return time.Unix(v.Sec, v.Nsec).UTC()
	}
}

// putTime appends t to a builder of type tt, an error if it is out of the
// type's range.
func putTime(b array.Builder, t time.Time, tt *types.DataType) error {
	switch b := b.(type) {
	case *array.Date32Builder:
		days, _ := calendar.FloorDiv(t.Unix(), calendar.SecsPerDay)
		if days < math.MinInt32 || days > math.MaxInt32 {
			return Errorf(ErrEval, "date %s is out of range", t.Format(time.RFC3339))
		}
		b.Append(arrow.Date32(days))
	case *array.TimestampBuilder:
		unit := int64(b.Type().(*arrow.TimestampType).Unit.Multiplier())
		v, ok := calendar.ToUnit(t.Unix(), calendar.Truncate(int64(t.Nanosecond()), tt.Precision), unit)
		if !ok {
			return Errorf(ErrEval, "timestamp %s is out of range", t.Format(time.RFC3339))
		}
		b.Append(arrow.Timestamp(v))
	case *array.Time32Builder:
		_, s := calendar.FloorDiv(t.Unix(), calendar.SecsPerDay)
		b.Append(arrow.Time32(s * calendar.NanosPerSec / int64(b.Type().(*arrow.Time32Type).Unit.Multiplier())))
	default:
		return fmt.Errorf("query: putTime into %s", b.Type())
	}
	return nil
}

var (
	extractUnits = []string{"MILLENNIUM", "CENTURY", "DECADE", "YEAR", "ISOYEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DOY", "DOW", "ISODOW",
		"HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND", "NANOSECOND", "EPOCH"}
	addUnits   = []string{"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"}
	floorUnits = []string{"MILLENNIUM", "CENTURY", "DECADE", "YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"}
)

// clockUnit reports whether unit is a field of the time of day, which a
// DATE has not.
func clockUnit(unit string) bool {
	switch unit {
	case "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND", "NANOSECOND":
		return true
	}
	return false
}

// unitOf checks that argument k is a unit of units (the rewrite makes
// EXTRACT(YEAR FROM t) an argument 'YEAR') and keeps it as the call's state.
func unitOf(k int, units []string) func(c *call) error {
	return func(c *call) error {
		u, err := unitName(c, c.args[k], units)
		c.state = u
		return err
	}
}

func unitName(c *call, n Node, units []string) (string, error) {
	lit, ok := n.(*literal)
	if ok && lit.val.IsValid() {
		u := strings.ToUpper(strings.TrimSuffix(strings.ToUpper(lit.val.String()), "S"))
		if u == "DAYOFWEEK" || u == "DAYOFYEAR" {
			u = map[string]string{"DAYOFWEEK": "DOW", "DAYOFYEAR": "DOY"}[u]
		}
		for _, v := range units {
			if u == v {
				return u, nil
			}
		}
	}
	return "", Errorf(ErrType, "%s has no unit %s; units: %s (%s)", c.fn.name, n.Text(), strings.Join(units, ", "), c.src)
}

// extractPrep checks the unit, and that the time has the field: a DATE has
// no HOUR, a TIME no YEAR.
func extractPrep(c *call) error {
	if err := unitOf(0, extractUnits)(c); err != nil {
		return err
	}
	unit, t := c.state.(string), c.args[1].Type()
	clockField := clockUnit(unit)
	if t.Kind == types.Time && !clockField || t.Kind == types.Date && clockField {
		return Errorf(ErrType, "a %s has no %s (%s)", TypeName(t), unit, c.src)
	}
	return nil
}

func extract(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return extractField(ec, c, c.state.(string), as[1], c.args[1].Type())
}

// extractField is field unit of each time.
func extractField(ec *EvalCtx, c *call, unit string, a arrow.Array, t *types.DataType) (arrow.Array, error) {
	get, field := timesOf(a, t), timeFields[unit]
	return rowsOf(ec, c, []arrow.Array{a}, func(b *array.Int64Builder, i int) error {
		b.UnsafeAppend(int64(field(get(i))))
		return nil
	})
}

// timeFields are EXTRACT's units, as Flink (Calcite's DateTimeUtils)
// computes them. MILLISECOND, MICROSECOND and NANOSECOND are the fraction
// of the second, not the second with it (PostgreSQL's reading).
var timeFields = map[string]func(time.Time) int{
	// DECADE, CENTURY and MILLENNIUM count as Flink does: the 21st century
	// and the 3rd millennium begin in 2001, a decade at a year ending in 0.
	"MILLENNIUM": func(t time.Time) int { return eraOf(t.Year(), 1000) },
	"CENTURY":    func(t time.Time) int { return eraOf(t.Year(), 100) },
	"DECADE":     func(t time.Time) int { return t.Year() / 10 },
	"YEAR":       time.Time.Year,
	"ISOYEAR": func(t time.Time) int { // the year of the ISO week
		y, _ := t.ISOWeek()
		return y
	},
	"QUARTER": func(t time.Time) int { return (int(t.Month())-1)/3 + 1 },
	"MONTH":   func(t time.Time) int { return int(t.Month()) },
	"WEEK": func(t time.Time) int { // ISO's
		_, w := t.ISOWeek()
		return w
	},
	"DAY":         time.Time.Day,
	"DOY":         time.Time.YearDay,
	"DOW":         func(t time.Time) int { return int(t.Weekday()) + 1 },       // Sunday is 1, as in Flink
	"ISODOW":      func(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 }, // Monday is 1
	"HOUR":        time.Time.Hour,
	"MINUTE":      time.Time.Minute,
	"SECOND":      time.Time.Second,
	"MILLISECOND": func(t time.Time) int { return t.Nanosecond() / 1e6 },
	"MICROSECOND": func(t time.Time) int { return t.Nanosecond() / 1e3 },
	"NANOSECOND":  time.Time.Nanosecond,
	// EPOCH is the whole seconds since 1970-01-01 00:00:00 UTC, cut toward
	// zero as Flink's division of milliseconds cuts.
	"EPOCH": func(t time.Time) int {
		s := t.Unix()
		if s < 0 && t.Nanosecond() > 0 {
			s++
		}
		return int(s)
	},
}

// eraOf is the century (n 100) or millennium (n 1000) of a year: years 1
// to n are the first; before year 1, as Flink computes it.
func eraOf(year, n int) int {
	if year > 0 {
		return (year + n - 1) / n
	}
	return (year - n + 1) / n
}

// timestampAddType is the time's type; a DATE takes whole days only.
func timestampAddType(c *call) (*types.DataType, error) {
	t := c.args[2].Type()
	u, err := unitName(c, c.args[0], addUnits)
	if err != nil {
		return nil, err
	}
	if t.Kind == types.Date && (u == "HOUR" || u == "MINUTE" || u == "SECOND") {
		return nil, Errorf(ErrType, "a DATE takes whole days; CAST it to TIMESTAMP to add units of %s (%s)", u, c.src)
	}
	return t.WithNotNull(notNull(c.args...)), nil
}

// addUnit is t plus n units: months as the calendar has them, the day
// kept or made the month's last (January 31 plus a month is February's
// last day), as Flink does.
func addUnit(t time.Time, unit string, n int64) time.Time {
	switch unit {
	case "YEAR":
		return addMonths(t, n*12)
	case "QUARTER":
		return addMonths(t, n*3)
	case "MONTH":
		return addMonths(t, n)
	case "WEEK":
		return t.AddDate(0, 0, int(n)*7)
	case "DAY":
		return t.AddDate(0, 0, int(n))
	case "DECADE":
		return addMonths(t, n*12*10)
	case "CENTURY":
		return addMonths(t, n*12*100)
	case "MILLENNIUM":
		return addMonths(t, n*12*1000)
	}
	return t.Add(time.Duration(n) * unitDuration[unit])
}

var unitDuration = map[string]time.Duration{"HOUR": time.Hour, "MINUTE": time.Minute, "SECOND": time.Second, "DAY": 24 * time.Hour, "WEEK": 7 * 24 * time.Hour}

func addMonths(t time.Time, n int64) time.Time {
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m-1) + n
	ny, nm := calendar.FloorDiv(total, 12)
	last := time.Date(int(ny), time.Month(nm)+2, 0, 0, 0, 0, 0, time.UTC).Day()
	return time.Date(int(ny), time.Month(nm)+1, min(d, last), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

func timestampAdd(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	unit, n, get := c.state.(string), render.IntReader(as[1]), timesOf(as[2], c.args[2].Type())
	return rowsOf(ec, c, as, func(b array.Builder, i int) error {
		return putTime(b, addUnit(get(i), unit, n(i)), c.t)
	})
}

// timestampDiff counts whole units from t1 to t2, toward zero; months count
// as the calendar has them (January 31 to February 28 is no month).
func timestampDiff(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	unit := c.state.(string)
	t1, t2 := timesOf(as[1], c.args[1].Type()), timesOf(as[2], c.args[2].Type())
	return rowsOf(ec, c, as, func(b *array.Int32Builder, i int) error {
		a, z := t1(i), t2(i)
		var v int64
		switch unit {
		case "YEAR", "QUARTER", "MONTH":
			v = monthsBetween(a, z) / map[string]int64{"YEAR": 12, "QUARTER": 3, "MONTH": 1}[unit]
		default:
			d := unitDuration[unit]
			v = (z.Unix()-a.Unix())/int64(d/time.Second) + fixSign(z, a, d)
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return Errorf(ErrEval, "%s overflows INT", c.src)
		}
		b.UnsafeAppend(int32(v))
		return nil
	})
}

// fixSign corrects a difference in whole seconds divided by d for the
// nanoseconds it left out: exact to the nanosecond, truncated toward zero.
func fixSign(z, a time.Time, d time.Duration) int64 {
	exact := z.Sub(a) // may saturate far apart; then seconds decide
	if exact == math.MaxInt64 || exact == math.MinInt64 {
		return 0
	}
	return int64(exact/d) - (z.Unix()-a.Unix())/int64(d/time.Second)
}

// monthsBetween is the months from a to z as Flink (Calcite's
// DateTimeUtils.subtractMonths) counts them: the most months that, added to
// a's date (a day past the month's end made its last day), do not pass z's
// date, one fewer if that lands on z's date with z earlier in the day.
func monthsBetween(a, z time.Time) int64 {
	day := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) }
	d0, d1 := day(z), day(a)
	m := monthsBetweenDates(d1, d0)
	if addMonths(d1, m).Equal(d0) && z.Sub(d0) < a.Sub(d1) {
		m--
	}
	return m
}

func monthsBetweenDates(from, to time.Time) int64 {
	if to.Before(from) {
		return -monthsBetweenDates(to, from)
	}
	m := int64(to.Sub(from).Hours() / 24 / 31) // no month is longer: at most the answer
	for !addMonths(from, m+1).After(to) {
		m++
	}
	return m
}

// floorTime is t cut to the unit; ceilTime the next boundary unless t is on
// one.
func floorTime(t time.Time, unit string) time.Time {
	y, m, d := t.Date()
	switch unit {
	case "MILLENNIUM":
		return time.Date((y+999)/1000*1000-999, 1, 1, 0, 0, 0, 0, time.UTC)
	case "CENTURY":
		return time.Date((y+99)/100*100-99, 1, 1, 0, 0, 0, 0, time.UTC)
	case "DECADE":
		return time.Date(y/10*10, 1, 1, 0, 0, 0, 0, time.UTC)
	case "WEEK":
		// Weeks start on Sunday, as in Flink (Calcite's julianDateFloor),
		// not on ISO's Monday.
		return time.Date(y, m, d-int(t.Weekday()), 0, 0, 0, 0, time.UTC)
	case "YEAR":
		return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
	case "QUARTER":
		return time.Date(y, (m-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC)
	case "MONTH":
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	case "DAY":
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	return t.Truncate(unitDuration[unit])
}

func ceilTime(t time.Time, unit string) time.Time {
	f := floorTime(t, unit)
	if f.Equal(t) {
		return t
	}
	return addUnit(f, unit, 1)
}

// floorCeilTime is FLOOR(t TO unit) and CEIL(t TO unit).
func floorCeilTime(floor bool) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		unit, get := c.state.(string), timesOf(as[0], c.args[0].Type())
		return rowsOf(ec, c, as, func(b array.Builder, i int) error {
			t := get(i)
			if floor {
				t = floorTime(t, unit)
			} else {
				t = ceilTime(t, unit)
			}
			return putTime(b, t, c.t)
		})
	}
}

func epochPrecision(c *call) error {
	lit, ok := c.args[1].(*literal)
	p, valid := int64(-1), false
	if ok {
		p, valid = literalInt(lit)
	}
	if !valid || p != 0 && p != 3 {
		return Errorf(ErrType, "TO_TIMESTAMP_LTZ takes precision 0 (seconds) or 3 (milliseconds), got %s (%s)", c.args[1].Text(), c.src)
	}
	c.state = p
	return nil
}

func toTimestampLTZ(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	per := int64(1)
	if c.state.(int64) == 3 {
		per = 1000
	}
	from := c.args[0].Type()
	var get func(int) (calendar.Instant, bool)
	if isApprox(from) || from.Kind == types.Decimal {
		d, err := castArray(ec, as[0], from, types.DoubleType(), false)
		if err != nil {
			return nil, err
		}
		defer d.Release()
		f := d.(*array.Float64)
		get = func(i int) (calendar.Instant, bool) {
			ms := math.Round(f.Value(i) * 1000 / float64(per))
			if math.IsNaN(ms) || math.Abs(ms) > 1e17 {
				return calendar.Instant{}, false
			}
			sec, rem := calendar.FloorDiv(int64(ms), 1000)
			return calendar.Instant{Sec: sec, Nsec: rem * 1e6}, true
		}
	} else {
		r := render.IntReader(as[0])
		get = func(i int) (calendar.Instant, bool) {
			sec, rem := calendar.FloorDiv(r(i), per)
			return calendar.Instant{Sec: sec, Nsec: rem * (calendar.NanosPerSec / per)}, true
		}
	}
	return rowsOf(ec, c, as, func(b *array.TimestampBuilder, i int) error {
		t, ok := get(i)
		if !ok {
			return Errorf(ErrEval, "%s is out of range", c.src)
		}
		return putTime(b, time.Unix(t.Sec, t.Nsec).UTC(), c.t)
	})
}

// intervalArith is t + INTERVAL 'n' unit, INTERVAL 'n' unit + t and
// t - INTERVAL 'n' unit: TIMESTAMPADD with a constant n.
func (p *Compiler) intervalArith(e *sqlparser.BinaryExpr, src string) (Node, error) {
	iv, other := e.Right, e.Left
	if l, ok := e.Left.(*sqlparser.IntervalExpr); ok {
		if e.Operator == "-" {
			return nil, Errorf(ErrType, "cannot subtract a time from an INTERVAL (%s)", src)
		}
		iv, other = l, e.Right
	}
	ie := iv.(*sqlparser.IntervalExpr)
	if units, ok := strings.CutPrefix(strings.ToLower(ie.Unit), IntervalPrefix); ok {
		return p.compoundArith(e.Operator == "-", ie.Expr, units, other, src)
	}
	n, err := p.Expr(ie.Expr)
	if err != nil {
		return nil, err
	}
	lit, ok := n.(*literal)
	var v int64
	if ok && IsChar(lit.t) {
		_, err := fmt.Sscanf(strings.TrimSpace(lit.val.String()), "%d", &v)
		ok = err == nil && fmt.Sprint(v) == strings.TrimPrefix(strings.TrimSpace(lit.val.String()), "+")
	} else if ok && isInt(lit.t) {
		v, ok = literalInt(lit)
	}
	if !ok {
		return nil, UnsupportedExpr("INTERVAL "+p.TextOf(ie.Expr)+" "+strings.ToUpper(ie.Unit), "an interval is a whole number of one unit, INTERVAL '5' MINUTE, or of the form of a compound one, INTERVAL '1:30' HOUR TO MINUTE")
	}
	if e.Operator == "-" {
		v = -v
	}
	t, err := p.Expr(other)
	if err != nil {
		return nil, err
	}
	unit := newLiteral(&types.DataType{Kind: types.Varchar, Length: len(ie.Unit), NotNull: true}, scalar.NewStringScalar(strings.ToUpper(ie.Unit)), strings.ToUpper(ie.Unit))
	count := newLiteral(&types.DataType{Kind: types.BigInt, NotNull: true}, scalar.NewInt64Scalar(v), fmt.Sprint(v))
	return newCall(p, funcs["timestampadd"], []Node{unit, count, t}, src)
}

// IntervalPrefix starts the one word the rewrite makes of a compound
// interval's units for sqlparser, which reads one word there: INTERVAL
// '1:30' HOUR TO MINUTE is read as INTERVAL '1:30' __kshare_interval_hour_to_minute.
const IntervalPrefix = "__kshare_interval_"

// Compound is the value of a compound interval: months, or a duration;
// negative for a negative interval.
type Compound struct {
	Months int64
	D      time.Duration
}

// intervalFields are the fields of compound intervals in order: the
// separator before each in the value, the largest value of each that
// follows another, and the duration of one (0: months).
var intervalFields = []struct {
	name   string
	letter string // in the form messages show
	sep    string
	max    int64
	unit   time.Duration
}{
	{"YEAR", "y", "", 0, 0}, {"MONTH", "m", "-", 11, 0},
	{"DAY", "d", "", 0, 24 * time.Hour}, {"HOUR", "h", " ", 23, time.Hour},
	{"MINUTE", "m", ":", 59, time.Minute}, {"SECOND", "s", ":", 59, time.Second},
}

// compoundRanges are the compound intervals SQL has, as written after the
// value.
const compoundRanges = "YEAR TO MONTH, DAY TO HOUR, DAY TO MINUTE, DAY TO SECOND, HOUR TO MINUTE, HOUR TO SECOND, MINUTE TO SECOND"

// ParseCompound reads the value of INTERVAL 'value' from TO to, as SQL
// writes it ('1-2' YEAR TO MONTH, '1 02:03:04.5' DAY TO SECOND, '-1:30'
// HOUR TO MINUTE); the sign, if any, is the whole interval's.
func ParseCompound(value, from, to string) (Compound, error) {
	at := func(name string) int {
		name = strings.TrimSuffix(strings.ToUpper(name), "S")
		for k, f := range intervalFields {
			if f.name == name {
				return k
			}
		}
		return -1
	}
	lo, hi := at(from), at(to)
	units := strings.ToUpper(from + " TO " + to)
	if lo < 0 || hi <= lo || lo < 2 && hi >= 2 {
		return Compound{}, fmt.Errorf("%s is not an interval; write one of %s", units, compoundRanges)
	}
	form := ""
	for k := lo; k <= hi; k++ {
		if k > lo {
			form += intervalFields[k].sep
		}
		form += intervalFields[k].letter
	}
	if hi == 5 {
		form += "[.fff]"
	}
	bad := func(why string) (Compound, error) {
		return Compound{}, fmt.Errorf("INTERVAL %s %s: %s; write '%s'", types.QuoteString(value), units, why, form)
	}
	rest := strings.TrimSpace(value)
	neg := strings.HasPrefix(rest, "-")
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "-"), "+")
	var iv Compound
	for k := lo; k <= hi; k++ {
		f := intervalFields[k]
		if k > lo {
			var ok bool
			if rest, ok = strings.CutPrefix(rest, f.sep); !ok {
				return bad("it is not of that form")
			}
		}
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 || digits > 9 {
			return bad("it is not of that form")
		}
		v := decimalDigits(rest[:digits])
		rest = rest[digits:]
		if k > lo && v > f.max {
			return bad(fmt.Sprintf("%s %d is out of range (0 to %d)", f.name, v, f.max))
		}
		if f.unit == 0 {
			iv.Months = iv.Months*12 + v
			continue
		}
		if v > math.MaxInt64/int64(f.unit)/2 {
			return bad(fmt.Sprintf("%s %d is out of range", f.name, v))
		}
		iv.D += time.Duration(v) * f.unit
		if k == 5 && strings.HasPrefix(rest, ".") {
			frac := strings.TrimLeft(rest[1:], "0123456789")
			n := len(rest) - 1 - len(frac)
			if n == 0 || n > 9 {
				return bad("the fraction of the second has 1 to 9 digits")
			}
			ns := decimalDigits((rest[1:1+n] + "00000000")[:9])
			iv.D += time.Duration(ns)
			rest = frac
		}
	}
	if rest != "" {
		return bad("it is not of that form")
	}
	if neg {
		iv.Months, iv.D = -iv.Months, -iv.D
	}
	return iv, nil
}

// intervalDef adds a compound interval (the call's state) to a time; no
// name reaches it, only the operator.
var intervalDef = &funcDef{name: "+", args: []argKind{timeArg}, ret: sameAsArg(0), eval: plusInterval}

// compoundArith is t + INTERVAL 'value' from TO to (minus, with sub).
func (p *Compiler) compoundArith(sub bool, value sqlparser.Expr, units string, other sqlparser.Expr, src string) (Node, error) {
	from, to, _ := strings.Cut(units, "_to_")
	v, ok := value.(*sqlparser.SQLVal)
	if !ok || v.Type != sqlparser.StrVal {
		return nil, Errorf(ErrType, "a compound interval's value is a string: INTERVAL '1:30' HOUR TO MINUTE (%s)", src)
	}
	iv, err := ParseCompound(string(v.Val), from, to)
	if err != nil {
		return nil, Errorf(ErrType, "%v (%s)", err, src)
	}
	if sub {
		iv.Months, iv.D = -iv.Months, -iv.D
	}
	t, err := p.Expr(other)
	if err != nil {
		return nil, err
	}
	if t.Type() != nil && t.Type().Kind == types.Date && iv.D != 0 {
		return nil, Errorf(ErrType, "a DATE takes whole days; CAST it to TIMESTAMP to add an INTERVAL %s TO %s (%s)", strings.ToUpper(from), strings.ToUpper(to), src)
	}
	n, err := newCall(p, intervalDef, []Node{t}, src)
	if err != nil {
		return nil, err
	}
	if c, ok := n.(*call); ok {
		c.state = iv
	}
	return n, nil
}

// plusInterval is the time plus the months, then plus the duration.
func plusInterval(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	iv, get := c.state.(Compound), timesOf(as[0], c.args[0].Type())
	return rowsOf(ec, c, as, func(b array.Builder, i int) error {
		t := get(i)
		if iv.Months != 0 {
			t = addMonths(t, iv.Months)
		}
		return putTime(b, t.Add(iv.D), c.t)
	})
}

// decimalDigits is the value of at most 18 decimal digits.
func decimalDigits(s string) int64 {
	var v int64
	for _, c := range s {
		v = v*10 + int64(c-'0')
	}
	return v
}
