package expr

// This file holds the functions that format and parse times with Java's
// date patterns (yyyy-MM-dd HH:mm:ss), as Flink's DATE_FORMAT, TO_TIMESTAMP,
// TO_DATE, UNIX_TIMESTAMP and FROM_UNIXTIME take them. The letters read
// are y M d H h m s S a E D; 'text' is literal text. A string that does not
// parse gives NULL, as in Flink.

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

func init() {
	ts3 := &types.DataType{Kind: types.Timestamp, Precision: 3}
	register(
		&funcDef{name: "DATE_FORMAT", args: []argKind{timeOrTextArg, strArg},
			desc: "the time (or a string read as TIMESTAMP: NULL if it is none) as text in a Java date pattern (yyyy-MM-dd HH:mm:ss)",
			ret:  dateFormatType, prep: compileLayout(1), eval: dateFormat},
		&funcDef{name: "TO_TIMESTAMP", args: []argKind{strArg, strArg}, min: 1,
			desc: "the TIMESTAMP(3) a string holds in a Java date pattern (default yyyy-MM-dd HH:mm:ss); NULL if it does not parse",
			ret:  nullableType(ts3), prep: compileLayout(1), eval: parseTimes(false)},
		&funcDef{name: "TO_DATE", args: []argKind{strArg, strArg}, min: 1,
			desc: "the DATE a string holds in a Java date pattern (default yyyy-MM-dd); NULL if it does not parse",
			ret:  nullableType(&types.DataType{Kind: types.Date}), prep: compileLayout(1), eval: parseTimes(false)},
		&funcDef{name: "UNIX_TIMESTAMP", args: []argKind{strArg, strArg}, min: -1, volatile: true,
			sig:  "UNIX_TIMESTAMP([STRING[, STRING]])",
			desc: "the seconds since 1970-01-01 00:00:00 UTC now, or of the time a string holds (default pattern yyyy-MM-dd HH:mm:ss); NULL if it does not parse",
			ret:  unixTimestampType, prep: compileLayout(1), eval: parseTimes(true)},
		&funcDef{name: "FROM_UNIXTIME", args: []argKind{intArg, strArg}, min: 1,
			desc: "the time of seconds since 1970-01-01 00:00:00 UTC as text (default pattern yyyy-MM-dd HH:mm:ss)",
			ret:  fixedType(types.StringType()), prep: compileLayout(1), eval: fromUnixtime},
	)
}

// timeOrTextArg is DATE_FORMAT's first argument.
var timeOrTextArg = argKind{name: "DATE, TIMESTAMP or STRING", ok: func(t *types.DataType) bool {
	return timeArg.ok(t) || IsChar(t)
}, null: timeArg.null}

// dateFormatType is a STRING; a string to format is first read as a
// TIMESTAMP(3), NULL if it is none, as in Flink.
func dateFormatType(c *call) (*types.DataType, error) {
	if x := c.args[0]; IsChar(x.Type()) {
		c.args[0] = &cast{exprBase: exprBase{t: &types.DataType{Kind: types.Timestamp, Precision: 3}, src: x.Text()}, e: x, try: true}
	}
	return types.StringType().WithNotNull(notNull(c.args...)), nil
}

// layoutPart is a run of one pattern letter (count long) or literal text.
type layoutPart struct {
	letter byte
	count  int
	text   string
}

type layout []layoutPart

// parseLayout reads a Java date pattern.
func parseLayout(p string) (layout, error) {
	var l layout
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := i + 1
			var text strings.Builder
			for ; j < len(p); j++ {
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						text.WriteByte('\'')
						j++
						continue
					}
					break
				}
				text.WriteByte(p[j])
			}
			if j >= len(p) {
				return nil, errors.New("a quote (') has no closing quote")
			}
			if j == i+1 {
				text.WriteByte('\'') // '' is a quote
			}
			l = append(l, layoutPart{text: text.String()})
			i = j + 1
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			if !strings.ContainsRune("yMdHhmsSaED", rune(c)) {
				return nil, errors.New("pattern letter " + string(c) + " is not supported (supported: y M d H h m s S a E D)")
			}
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			l = append(l, layoutPart{letter: c, count: j - i})
			i = j
		default:
			l = append(l, layoutPart{text: string(c)})
			i++
		}
	}
	return l, nil
}

func pad(v, width int) string {
	s := strconv.Itoa(v)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}

func (l layout) format(t time.Time) string {
	var b strings.Builder
	for _, p := range l {
		switch p.letter {
		case 0:
			b.WriteString(p.text)
		case 'y':
			if p.count == 2 {
				b.WriteString(pad(t.Year()%100, 2))
			} else {
				b.WriteString(pad(t.Year(), p.count))
			}
		case 'M':
			switch {
			case p.count >= 4:
				b.WriteString(t.Month().String())
			case p.count == 3:
				b.WriteString(t.Month().String()[:3])
			default:
				b.WriteString(pad(int(t.Month()), p.count))
			}
		case 'd':
			b.WriteString(pad(t.Day(), p.count))
		case 'D':
			b.WriteString(pad(t.YearDay(), p.count))
		case 'H':
			b.WriteString(pad(t.Hour(), p.count))
		case 'h':
			b.WriteString(pad((t.Hour()+11)%12+1, p.count))
		case 'm':
			b.WriteString(pad(t.Minute(), p.count))
		case 's':
			b.WriteString(pad(t.Second(), p.count))
		case 'S':
			b.WriteString(pad(t.Nanosecond(), 9)[:min(p.count, 9)])
		case 'a':
			b.WriteString(map[bool]string{true: "AM", false: "PM"}[t.Hour() < 12])
		case 'E':
			if p.count >= 4 {
				b.WriteString(t.Weekday().String())
			} else {
				b.WriteString(t.Weekday().String()[:3])
			}
		}
	}
	return b.String()
}

// parse reads s as l says, strictly: a number of one letter has one or two
// digits (a year: any number), of more letters that many digits.
func (l layout) parse(s string) (time.Time, bool) {
	year, month, day, hour, minute, sec, nsec := 1970, 1, 1, 0, 0, 0, 0
	pm, h12 := false, false
	digits := func(p layoutPart) (int, bool) {
		n := p.count
		maxN := n
		if n == 1 {
			maxN = 2
		}
		if p.letter == 'y' && n != 2 {
			maxN = 9
		}
		k := 0
		for k < len(s) && k < maxN && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k == 0 || n > 1 && p.letter != 'y' && k != n {
			return 0, false
		}
		v, _ := strconv.Atoi(s[:k])
		s = s[k:]
		return v, true
	}
	word := func(names []string, short bool) (int, bool) {
		for k, name := range names {
			if short {
				name = name[:3]
			}
			if len(s) >= len(name) && strings.EqualFold(s[:len(name)], name) {
				s = s[len(name):]
				return k, true
			}
		}
		return 0, false
	}
	for _, p := range l {
		ok := true
		switch p.letter {
		case 0:
			ok = strings.HasPrefix(s, p.text)
			s = strings.TrimPrefix(s, p.text)
		case 'y':
			year, ok = digits(p)
			if p.count == 2 {
				year += 2000
			}
		case 'M':
			if p.count >= 3 {
				month, ok = word(monthNames, p.count == 3)
				month++
			} else {
				month, ok = digits(p)
			}
		case 'd':
			day, ok = digits(p)
		case 'H':
			hour, ok = digits(p)
		case 'h':
			hour, ok = digits(p)
			h12 = true
		case 'm':
			minute, ok = digits(p)
		case 's':
			sec, ok = digits(p)
		case 'S':
			var f int
			rest := len(s)
			f, ok = digits(layoutPart{letter: 'S', count: p.count})
			nsec = f * int(pow10Int(9-(rest-len(s))))
		case 'a':
			var k int
			k, ok = word([]string{"AM", "PM"}, false)
			pm = k == 1
		case 'E':
			_, ok = word(dayNames, p.count < 4)
		case 'D':
			_, ok = digits(p) // day of year: checked by the date
		}
		if !ok {
			return time.Time{}, false
		}
	}
	if s != "" {
		return time.Time{}, false
	}
	if h12 {
		if hour < 1 || hour > 12 {
			return time.Time{}, false
		}
		hour = hour % 12
		if pm {
			hour += 12
		}
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Year() != year || int(t.Month()) != month || t.Day() != day || t.Hour() != hour || t.Minute() != minute || t.Second() != sec {
		return time.Time{}, false // February 30, hour 25
	}
	return t, true
}

var (
	monthNames = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayNames   = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

// compileLayout reads argument k once if it is a constant pattern: a bad
// one fails the statement.
func compileLayout(k int) func(c *call) error {
	return func(c *call) error {
		if len(c.args) <= k {
			return nil
		}
		lit, ok := c.args[k].(*literal)
		if !ok || !lit.val.IsValid() {
			return nil
		}
		l, err := layoutOf(c, lit.val.String())
		c.state = l
		return err
	}
}

func layoutOf(c *call, p string) (layout, error) {
	l, err := parseLayout(p)
	if err != nil {
		return nil, Errorf(ErrEval, "bad date pattern %s in %s: %v", types.QuoteString(p), c.fn.name, err)
	}
	return l, nil
}

// layoutAt yields the layout of row i: the constant one, the row's (read
// when it differs from the row before's), or nil for the default.
func layoutAt(c *call, as []arrow.Array, k int) func(i int) (layout, error) {
	if l, ok := c.state.(layout); ok || len(as) <= k {
		return func(int) (layout, error) { return l, nil }
	}
	s := as[k].(*array.String)
	var last string
	var l layout
	return func(i int) (layout, error) {
		if p := s.Value(i); l == nil || p != last {
			var err error
			if l, err = layoutOf(c, p); err != nil {
				return nil, err
			}
			last = p
		}
		return l, nil
	}
}

var defaultLayout, _ = parseLayout("yyyy-MM-dd HH:mm:ss")

func dateFormat(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	get, lay := timesOf(as[0], c.args[0].Type()), layoutAt(c, as, 1)
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		l, err := lay(i)
		if err != nil {
			return err
		}
		b.Append(l.format(get(i)))
		return nil
	})
}

func fromUnixtime(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	get, lay := render.IntReader(as[0]), layoutAt(c, as, 1)
	return rowsOf(ec, c, as, func(b *array.StringBuilder, i int) error {
		l, err := lay(i)
		if err != nil {
			return err
		}
		if l == nil {
			l = defaultLayout
		}
		b.Append(l.format(time.Unix(get(i), 0).UTC()))
		return nil
	})
}

func unixTimestampType(c *call) (*types.DataType, error) {
	if len(c.args) == 0 {
		return types.BigIntType().WithNotNull(true), nil
	}
	return types.BigIntType(), nil
}

// parseTimes is TO_TIMESTAMP, TO_DATE and (unix) UNIX_TIMESTAMP: without a
// pattern the string is read as CAST reads it.
func parseTimes(unix bool) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		if len(as) == 0 { // UNIX_TIMESTAMP(): now, one value (see call.eval)
			bb := array.NewInt64Builder(ec.mem)
			defer bb.Release()
			bb.Append(clock().Unix())
			return bb.NewArray(), nil
		}
		s, lay := as[0].(*array.String), layoutAt(c, as, 1)
		return rowsOf(ec, c, as, func(b array.Builder, i int) error {
			l, err := lay(i)
			if err != nil {
				return err
			}
			var t time.Time
			ok := false
			switch {
			case l != nil:
				t, ok = l.parse(s.Value(i))
			case c.t.Kind == types.Date:
				var days int64
				if days, ok = parseDate(strings.TrimSpace(s.Value(i))); ok {
					t = time.Unix(days*calendar.SecsPerDay, 0).UTC()
				}
			default:
				var v calendar.Instant
				if v, ok = parseTimestamp(strings.TrimSpace(s.Value(i))); ok {
					t = time.Unix(v.Sec, v.Nsec).UTC()
				}
			}
			switch {
			case !ok:
				b.AppendNull()
			case unix:
				b.(*array.Int64Builder).Append(t.Unix())
			default:
				return putTime(b, t, c.t)
			}
			return nil
		})
	}
}

func pow10Int(n int) int64 {
	v := int64(1)
	for ; n > 0; n-- {
		v *= 10
	}
	return v
}
