package query

// This file plans Flink's window table-valued functions:
//
//	FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
//	FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '5' MINUTES))
//	FROM TABLE(CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '1' HOUR))
//
// sqlparser cannot read them, so the rewrite takes the call out of the
// statement, leaving the table's name, and keeps it as a windowSpec. The
// table the query then reads has three more columns, window_start,
// window_end and window_time, which every row gets per window it falls
// in (one for TUMBLE, size/slide for HOP, up to max/step for CUMULATE).

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// windowSpec is the window TVF of a statement.
type windowSpec struct {
	fn      string // TUMBLE, HOP or CUMULATE
	table   string
	timeCol string
	// size is the window's size (TUMBLE), HOP's size and CUMULATE's max
	// size; step is HOP's slide and CUMULATE's step (size for TUMBLE).
	size, step time.Duration
}

// windowFuncs are the window TVFs and the intervals each takes after the
// DESCRIPTOR, in Flink's order.
var windowFuncs = map[string][]string{
	"TUMBLE":   {"size"},
	"HOP":      {"slide", "size"},
	"CUMULATE": {"step", "max size"},
}

const windowForm = "write TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)), HOP(..., slide, size) or CUMULATE(..., step, max size)"

// windowTVF reads the window TVF whose TABLE is toks[i] and replaces it
// with the table's name; it returns the index of its last token.
func (rw *rewritten) windowTVF(toks []parse.Token, i int) (int, error) {
	at := toks[i].Start
	fn := strings.ToUpper(toks[i+2].Val)
	if fn == "SESSION" {
		return 0, errorAt(rw.src, at, unsupportedClause("the SESSION window", "use TUMBLE, HOP or CUMULATE"))
	}
	if rw.window != nil {
		return 0, errorAt(rw.src, at, unsupportedClause("a second window table function", "a query reads one table"))
	}
	j := i + 4 // after TUMBLE (
	bad := func(what string) (int, error) {
		off := len(rw.src)
		if j < len(toks) {
			off = toks[j].Start
		}
		return 0, syntaxAt(rw.src, off, fmt.Sprintf("%s: expected %s; %s", fn, what, windowForm))
	}
	want := func(ok bool) bool {
		if ok {
			j++
		}
		return ok
	}
	tok := func(k int) parse.Token {
		if k < len(toks) {
			return toks[k]
		}
		return parse.Token{Kind: parse.EOF}
	}
	spec := &windowSpec{fn: fn}
	if !want(tok(j).IsWord("table")) {
		return bad("TABLE and the table's name")
	}
	if !isName(tok(j)) {
		return bad("the table's name after TABLE")
	}
	name := tok(j)
	spec.table = name.Val
	j++
	if !want(tok(j).IsSymbol(",")) || !want(tok(j).IsWord("descriptor")) || !want(tok(j).IsSymbol("(")) {
		return bad("DESCRIPTOR(time column) after the table")
	}
	if !isName(tok(j)) {
		return bad("a time column in DESCRIPTOR(...)")
	}
	spec.timeCol = tok(j).Val
	j++
	if !want(tok(j).IsSymbol(")")) {
		return bad("')' after the DESCRIPTOR's column")
	}
	var ds []time.Duration
	for _, arg := range windowFuncs[fn] {
		if !want(tok(j).IsSymbol(",")) || !want(tok(j).IsWord("interval")) || tok(j).Kind != parse.String || tok(j+1).Kind != parse.Ident {
			return bad("the " + arg + " as INTERVAL 'n' unit")
		}
		d, err := table.ParseInterval(tok(j).Val, tok(j+1).Val)
		if err != nil {
			return 0, errorAt(rw.src, tok(j).Start, errorf(ErrSyntax, "%s: %v", fn, err))
		}
		if d <= 0 {
			return 0, errorAt(rw.src, tok(j).Start, errorf(ErrType, "%s: the window %s must be positive, got INTERVAL '%s' %s", fn, arg, tok(j).Val, strings.ToUpper(tok(j+1).Val)))
		}
		ds = append(ds, d)
		j += 2
	}
	if !want(tok(j).IsSymbol(")")) || !tok(j).IsSymbol(")") {
		return bad("')' ')' after the intervals")
	}
	spec.size, spec.step = ds[len(ds)-1], ds[0]
	if fn != "TUMBLE" && spec.size%spec.step != 0 {
		return 0, errorAt(rw.src, at, errorf(ErrType, "%s: the %s (%s) must be a whole multiple of the %s (%s)", fn, windowFuncs[fn][1], spec.size, windowFuncs[fn][0], spec.step))
	}
	rw.window = spec
	rw.edits = append(rw.edits, edit{at, toks[j].End, table.QuoteIdent(name.Val)})
	return j, nil
}

// isWindowTVF reports whether toks[i] starts TABLE(TUMBLE( or another
// window function.
func isWindowTVF(toks []parse.Token, i int) bool {
	if i+3 >= len(toks) || !toks[i].IsWord("table") || !toks[i+1].IsSymbol("(") || !toks[i+3].IsSymbol("(") {
		return false
	}
	_, ok := windowFuncs[strings.ToUpper(toks[i+2].Val)]
	return ok || toks[i+2].IsWord("session")
}

// Names of the columns a window TVF adds.
const (
	colWindowStart = "window_start"
	colWindowEnd   = "window_end"
	colWindowTime  = "window_time"
)

// windowPlan is a windowed aggregation's plan: where the time attribute is
// among the table's columns, and its kind.
type windowPlan struct {
	spec    *windowSpec
	timeIdx int // in the table's columns (Definition.Columns)
	// proctime: the window is over processing time (a PROCTIME() column);
	// otherwise over event time, with the table's watermark delay.
	proctime bool
	delay    time.Duration
	// startKey and endKey are where window_start and window_end are
	// among the GROUP BY keys.
	startKey, endKey int
}

// windowColumns checks the window's time attribute against the table and
// returns the plan and the three columns the TVF adds.
func windowColumns(spec *windowSpec, def *table.Definition) (*windowPlan, []table.Column, error) {
	cols := def.Columns()
	k := def.Index(spec.timeCol)
	if k < 0 {
		return nil, nil, errorf(ErrUnknownColumn, "%s: unknown column '%s' in DESCRIPTOR (table '%s')", spec.fn, options.Cut(spec.timeCol), options.Cut(def.Name))
	}
	c := cols[k]
	wp := &windowPlan{spec: spec, timeIdx: k}
	w := def.Watermark
	switch {
	case c.IsProctime():
		wp.proctime = true
	case w != nil && strings.EqualFold(w.Column, c.Name):
		wp.delay = w.Delay
	case w == nil:
		return nil, nil, errorf(ErrType, "%s over '%s': table '%s' has no WATERMARK, so '%s' is not an event time attribute; declare WATERMARK FOR %s AS %s - INTERVAL '5' SECOND in the table, or window over a column AS PROCTIME()",
			spec.fn, options.Cut(c.Name), options.Cut(def.Name), options.Cut(c.Name), table.QuoteIdent(c.Name), table.QuoteIdent(c.Name))
	default:
		return nil, nil, errorf(ErrType, "%s over '%s': the column is not a time attribute; window over '%s' (the WATERMARK's column) or a column AS PROCTIME()",
			spec.fn, options.Cut(c.Name), options.Cut(w.Column))
	}
	ts := &table.DataType{Kind: table.Timestamp, Precision: 3, NotNull: true}
	wt := c.Type.WithNotNull(true)
	return wp, []table.Column{{Name: colWindowStart, Type: ts}, {Name: colWindowEnd, Type: ts}, {Name: colWindowTime, Type: wt}}, nil
}

// appendWindows appends the start and end (exclusive) of each window that
// the time t (ms since the epoch) falls in, in the order of their starts,
// to starts and ends.
func (w *windowSpec) appendWindows(t int64, starts, ends []int64) ([]int64, []int64) {
	size, step := w.size.Milliseconds(), w.step.Milliseconds()
	floor := func(t, d int64) int64 {
		s := t - t%d
		if t%d < 0 {
			s -= d
		}
		return s
	}
	switch w.fn {
	case "TUMBLE":
		s := floor(t, size)
		return append(starts, s), append(ends, s+size)
	case "HOP":
		// The latest window that holds t starts at floor(t, slide); the
		// earlier ones, a slide apart, while they still hold it. They
		// are appended latest first, then put in order.
		from := len(starts)
		for s := floor(t, step); s > t-size; s -= step {
			starts = append(starts, s)
			ends = append(ends, s+size)
		}
		slices.Reverse(starts[from:])
		slices.Reverse(ends[from:])
	case "CUMULATE":
		s := floor(t, size)
		for e := floor(t, step) + step; e <= s+size; e += step {
			starts = append(starts, s)
			ends = append(ends, e)
		}
	}
	return starts, ends
}

// checkWindowKeys makes sure a windowed query aggregates per window:
// GROUP BY has window_start and window_end (the columns at first and
// first+1), as Flink's window aggregation requires; it records where they
// are among the keys.
func checkWindowKeys(plan *Plan, first int) error {
	need := fmt.Sprintf("a query over %s(...) aggregates per window: GROUP BY window_start, window_end[, ...]", plan.window.spec.fn)
	if plan.agg == nil {
		return errorf(ErrUnsupported, "%s (kshare runs window aggregations only)", need)
	}
	plan.window.startKey, plan.window.endKey = -1, -1
	for k, key := range plan.agg.keys {
		if c, ok := key.(*colRef); ok {
			switch c.idx {
			case first:
				plan.window.startKey = k
			case first + 1:
				plan.window.endKey = k
			}
		}
	}
	if plan.window.startKey < 0 || plan.window.endKey < 0 {
		return errorf(ErrType, "%s; GROUP BY without them would mix the windows", need)
	}
	return nil
}
