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

	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// windowSpec is the window TVF of a statement.
type windowSpec struct {
	fn      string // TUMBLE, HOP or CUMULATE
	table   string
	timeCol string
	// size is the window's size (TUMBLE), HOP's size and CUMULATE's max
	// size; step is HOP's slide and CUMULATE's step (size for TUMBLE).
	size, step time.Duration
	// offset shifts the windows from the epoch (the optional last
	// argument); a multiple of the size (or slide, or step) shifts nothing.
	offset time.Duration
}

// windowParam is a parameter of a window TVF: its name as Flink's named
// arguments spell it (SIZE => INTERVAL '1' MINUTE), and what messages call
// it.
type windowParam struct {
	name, desc string
}

// The parameters every window TVF starts with, and the one it may end with.
var (
	dataParam    = windowParam{"DATA", "table"}
	timecolParam = windowParam{"TIMECOL", "time column"}
	offsetParam  = windowParam{"OFFSET", "offset"}
)

// windowFuncs are the window TVFs and the intervals each takes after the
// DESCRIPTOR, in Flink's order; each may have an offset after them.
var windowFuncs = map[string][]windowParam{
	"TUMBLE":   {{"SIZE", "size"}},
	"HOP":      {{"SLIDE", "slide"}, {"SIZE", "size"}},
	"CUMULATE": {{"STEP", "step"}, {"SIZE", "max size"}},
}

// windowParams are fn's parameters in order, the optional offset last.
func windowParams(fn string) []windowParam {
	return append(append([]windowParam{dataParam, timecolParam}, windowFuncs[fn]...), offsetParam)
}

const windowForm = "write TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '1' MINUTE)), HOP(..., slide, size) or CUMULATE(..., step, max size), " +
	"each with an optional offset last (INTERVAL '15' MINUTE) or with named arguments (DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => ...)"

// tvfArg is one argument of a window TVF as written: TABLE t,
// DESCRIPTOR(ts) or INTERVAL 'n' unit, after NAME => when named.
type tvfArg struct {
	name  string // upper case; "" when positional
	at    int    // the token its value starts at
	table string // of TABLE t
	col   string // of DESCRIPTOR(ts)
	// d is the INTERVAL's value; iv says it is one, text is it as
	// written and pos where its string starts.
	d    time.Duration
	iv   bool
	text string
	pos  int
}

// tvfReader reads the arguments of a window TVF.
type tvfReader struct {
	rw   *rewritten
	toks []parse.Token
	fn   string
	j    int // the next token
}

func (r *tvfReader) tok(k int) parse.Token {
	if k < len(r.toks) {
		return r.toks[k]
	}
	return parse.Token{Kind: parse.EOF}
}

func (r *tvfReader) want(ok bool) bool {
	if ok {
		r.j++
	}
	return ok
}

// bad is a syntax error at the next token: what was expected there.
func (r *tvfReader) bad(what string) error {
	off := len(r.rw.Src)
	if r.j < len(r.toks) {
		off = r.toks[r.j].Start
	}
	return syntaxAt(r.rw.Src, off, fmt.Sprintf("%s: expected %s; %s", r.fn, what, windowForm))
}

// args reads the arguments up to the call's ), which it moves past.
func (r *tvfReader) args() ([]tvfArg, error) {
	var args []tvfArg
	for {
		a := tvfArg{}
		if t := r.tok(r.j); isName(t) && pair(r.toks, r.j+1, "=>") {
			a.name = strings.ToUpper(t.Val)
			r.j += 3
		}
		a.at = r.j
		switch t := r.tok(r.j); {
		case t.IsWord("table"):
			r.j++
			if !isName(r.tok(r.j)) {
				return nil, r.bad("the table's name after TABLE")
			}
			a.table = r.tok(r.j).Val
			r.j++
		case t.IsWord("descriptor"):
			r.j++
			if !r.want(r.tok(r.j).IsSymbol("(")) || !isName(r.tok(r.j)) {
				return nil, r.bad("a time column in DESCRIPTOR(...)")
			}
			a.col = r.tok(r.j).Val
			r.j++
			if !r.want(r.tok(r.j).IsSymbol(")")) {
				return nil, r.bad("')' after the DESCRIPTOR's column")
			}
		case t.IsWord("interval"):
			d, pos, err := r.interval()
			if err != nil {
				return nil, err
			}
			a.d, a.iv, a.pos = d, true, pos
			a.text = r.rw.Src[t.Start:r.toks[r.j-1].End]
		default:
			return nil, r.bad(tvfExpected(r.fn, a.name, len(args)))
		}
		args = append(args, a)
		if r.want(r.tok(r.j).IsSymbol(")")) {
			return args, nil
		}
		if !r.want(r.tok(r.j).IsSymbol(",")) {
			return nil, r.bad("',' or ')' after an argument")
		}
	}
}

// tvfExpected says what the argument k of fn, named name ("" when
// positional), is to be.
func tvfExpected(fn, name string, k int) string {
	params := windowParams(fn)
	p := windowParam{}
	for _, q := range params {
		if q.name == name {
			p = q
		}
	}
	if name == "" && k < len(params) {
		p = params[k]
	}
	switch p {
	case windowParam{}:
		return "TABLE t, DESCRIPTOR(ts) or INTERVAL 'n' unit"
	case dataParam:
		return "TABLE and the table's name"
	case timecolParam:
		return "DESCRIPTOR(time column) after the table"
	}
	return "the " + p.desc + " as INTERVAL 'n' unit"
}

// interval reads INTERVAL [+|-] 'n' unit; pos is where its string starts.
func (r *tvfReader) interval() (d time.Duration, pos int, err error) {
	r.j++
	neg := false
	if t := r.tok(r.j); t.IsSymbol("-") || t.IsSymbol("+") {
		neg = t.IsSymbol("-")
		r.j++
	}
	v, u := r.tok(r.j), r.tok(r.j+1)
	if v.Kind != parse.String || u.Kind != parse.Ident {
		return 0, 0, r.bad("INTERVAL 'n' unit")
	}
	if d, err = table.ParseInterval(v.Val, u.Val); err != nil {
		return 0, 0, errorAt(r.rw.Src, v.Start, expr.Errorf(ErrSyntax, "%s: %v", r.fn, err))
	}
	r.j += 2
	if neg {
		d = -d
	}
	return d, v.Start, nil
}

// windowTVF reads the window TVF whose TABLE is toks[i] and replaces it
// with the table's name; it returns the index of its last token.
func (rw *rewritten) windowTVF(toks []parse.Token, i int) (int, error) {
	at := toks[i].Start
	fn := strings.ToUpper(toks[i+2].Val)
	if fn == "SESSION" {
		return 0, errorAt(rw.Src, at, expr.UnsupportedClause("the SESSION window", "use TUMBLE, HOP or CUMULATE"))
	}
	if rw.window != nil {
		return 0, errorAt(rw.Src, at, expr.UnsupportedClause("a second window table function", "a query reads one table"))
	}
	r := &tvfReader{rw: rw, toks: toks, fn: fn, j: i + 4} // after TUMBLE (
	args, err := r.args()
	if err != nil {
		return 0, err
	}
	if !r.tok(r.j).IsSymbol(")") {
		return 0, r.bad("')' after the window function's ')'")
	}
	byParam, err := rw.tvfParams(fn, args, toks[r.j-1].Start)
	if err != nil {
		return 0, err
	}
	spec := &windowSpec{fn: fn, table: byParam["DATA"].table, timeCol: byParam["TIMECOL"].col, offset: byParam["OFFSET"].d}
	params := windowFuncs[fn]
	for _, p := range params {
		if a := byParam[p.name]; a.d <= 0 {
			return 0, errorAt(rw.Src, a.pos, expr.Errorf(ErrType, "%s: the window %s must be positive, got %s", fn, p.desc, a.text))
		}
	}
	spec.step, spec.size = byParam[params[0].name].d, byParam[params[len(params)-1].name].d
	if fn != "TUMBLE" && spec.size%spec.step != 0 {
		return 0, errorAt(rw.Src, at, expr.Errorf(ErrType, "%s: the %s (%s) must be a whole multiple of the %s (%s)", fn, params[1].desc, spec.size, params[0].desc, spec.step))
	}
	rw.window = spec
	rw.edits = append(rw.edits, edit{at, toks[r.j].End, types.QuoteIdent(spec.table)})
	return r.j, nil
}

// tvfParams matches the arguments of fn to its parameters, by position or
// by name (not both, as in Flink), and checks that each is of its kind;
// end is where the call's ) is.
func (rw *rewritten) tvfParams(fn string, args []tvfArg, end int) (map[string]tvfArg, error) {
	params := windowParams(fn)
	var names []string
	for _, p := range params {
		names = append(names, p.name)
	}
	signature := fmt.Sprintf("%s takes %s, or these by name (%s)", fn, paramList(params), strings.Join(names, ", "))
	at := func(a tvfArg) int { return rw.toks[a.at].Start }
	by := map[string]tvfArg{}
	named := args[0].name != ""
	for k, a := range args {
		if (a.name != "") != named {
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: name every argument (NAME => value) or none; %s", fn, signature))
		}
		p := ""
		switch {
		case !named && k < len(params):
			p = params[k].name
		case !named:
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: too many arguments; %s", fn, signature))
		case !slices.Contains(names, a.name):
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s has no parameter %s; %s", fn, a.name, signature))
		case k == 0 && a.name != dataParam.name:
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: DATA => TABLE t comes first, as in Flink", fn))
		default:
			p = a.name
		}
		if _, dup := by[p]; dup {
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: %s is given twice", fn, p))
		}
		by[p] = a
	}
	for _, p := range params {
		a, ok := by[p.name]
		switch {
		case !ok && p != offsetParam:
			return nil, errorAt(rw.Src, end, expr.Errorf(ErrSyntax, "%s: the %s (%s) is missing; %s", fn, p.desc, p.name, signature))
		case !ok:
		case p == dataParam && a.table == "":
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: the table is TABLE <name>; %s", fn, signature))
		case p == timecolParam && a.col == "":
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: the time column is DESCRIPTOR(<column>); %s", fn, signature))
		case p != dataParam && p != timecolParam && !a.iv:
			return nil, errorAt(rw.Src, at(a), expr.Errorf(ErrSyntax, "%s: the %s is an INTERVAL 'n' unit; %s", fn, p.desc, signature))
		}
	}
	return by, nil
}

// paramList names params for messages: TABLE t, DESCRIPTOR(ts), slide,
// size[, offset].
func paramList(params []windowParam) string {
	var b strings.Builder
	b.WriteString("TABLE t, DESCRIPTOR(ts)")
	for _, p := range params[2:] {
		if p == offsetParam {
			b.WriteString("[, " + p.desc + "]")
		} else {
			b.WriteString(", " + p.desc)
		}
	}
	return b.String()
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
func windowColumns(spec *windowSpec, def *table.Definition) (*windowPlan, []types.Column, error) {
	cols := def.Columns()
	k := def.Index(spec.timeCol)
	if k < 0 {
		return nil, nil, expr.Errorf(ErrUnknownColumn, "%s: unknown column '%s' in DESCRIPTOR (table '%s')", spec.fn, options.Cut(spec.timeCol), options.Cut(def.Name))
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
		return nil, nil, expr.Errorf(ErrType, "%s over '%s': table '%s' has no WATERMARK, so '%s' is not an event time attribute; declare WATERMARK FOR %s AS %s - INTERVAL '5' SECOND in the table, or window over a column AS PROCTIME()",
			spec.fn, options.Cut(c.Name), options.Cut(def.Name), options.Cut(c.Name), types.QuoteIdent(c.Name), types.QuoteIdent(c.Name))
	default:
		return nil, nil, expr.Errorf(ErrType, "%s over '%s': the column is not a time attribute; window over '%s' (the WATERMARK's column) or a column AS PROCTIME()",
			spec.fn, options.Cut(c.Name), options.Cut(w.Column))
	}
	ts := &types.DataType{Kind: types.Timestamp, Precision: 3, NotNull: true}
	wt := c.Type.WithNotNull(true)
	return wp, []types.Column{{Name: colWindowStart, Type: ts}, {Name: colWindowEnd, Type: ts}, {Name: colWindowTime, Type: wt}}, nil
}

// appendWindows appends the start and end (exclusive) of each window that
// the time t (ms since the epoch) falls in, in the order of their starts,
// to starts and ends.
func (w *windowSpec) appendWindows(t int64, starts, ends []int64) ([]int64, []int64) {
	size, step := w.size.Milliseconds(), w.step.Milliseconds()
	// floor is the latest window boundary at or before t: the multiples
	// of d, shifted by the offset. Flink's offset docs work it out the
	// same way: with 10-minute windows, an offset of 4 or -6 minutes puts
	// 00:00:04 in [23:54, 00:04).
	off := w.offset.Milliseconds()
	floor := func(t, d int64) int64 {
		r := (t - off) % d
		if r < 0 {
			r += d
		}
		return t - r
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

// checkWindowKeys makes sure a windowed query that aggregates does so per
// window: GROUP BY has window_start and window_end (the columns at first
// and first+1), as Flink's window aggregation requires; it records where
// they are among the keys. A query without aggregation reads the window
// TVF's rows as they are, one per row and window.
func checkWindowKeys(plan *Plan, first int) error {
	if plan.agg == nil {
		return nil
	}
	need := fmt.Sprintf("a query over %s(...) aggregates per window: GROUP BY window_start, window_end[, ...]", plan.window.spec.fn)
	plan.window.startKey, plan.window.endKey = -1, -1
	for k, key := range plan.agg.keys {
		if c, ok := key.(*expr.ColRef); ok {
			switch c.Index {
			case first:
				plan.window.startKey = k
			case first + 1:
				plan.window.endKey = k
			}
		}
	}
	if plan.window.startKey < 0 || plan.window.endKey < 0 {
		return expr.Errorf(ErrType, "%s; GROUP BY without them would mix the windows", need)
	}
	return nil
}

// Flink's legacy group windows: GROUP BY TUMBLE(ts, size), HOP(ts, slide,
// size) or SESSION(ts, gap), with TUMBLE_START(ts, size) and the like in
// the select list. Flink deprecates them for the window TVFs, which kshare
// runs instead; the error shows the query written with one.

// legacyAux are the legacy window's auxiliary functions, by the suffix of
// their names, and the window TVF's column that each becomes.
var legacyAux = map[string]string{"start": colWindowStart, "end": colWindowEnd, "rowtime": colWindowTime, "proctime": colWindowTime}

// legacyWindow reads f as a legacy window function: its window (TUMBLE,
// HOP or SESSION) and, for an auxiliary function, the column it becomes
// ("" for the group window itself).
func legacyWindow(f *sqlparser.FuncExpr) (fn, col string, ok bool) {
	if !f.Qualifier.IsEmpty() {
		return "", "", false
	}
	base, aux, _ := strings.Cut(f.Name.Lowered(), "_")
	switch base {
	case "tumble", "hop", "session":
	default:
		return "", "", false
	}
	if aux == "" {
		return strings.ToUpper(base), "", true
	}
	col, ok = legacyAux[aux]
	return strings.ToUpper(base), col, ok
}

// legacyWindowError refuses a query with a legacy group window, with the
// query written over the window TVF that replaces it: the group window's
// arguments (or the first auxiliary function's, which repeat them) go to
// the TVF, the auxiliary functions become window_start, window_end and
// window_time, and GROUP BY starts with window_start, window_end. It is
// nil for a query without one.
func (p *planner) legacyWindowError(s *sqlparser.Select) error {
	var group *sqlparser.FuncExpr
	var keys []string
	for _, ge := range s.GroupBy {
		if f, ok := ge.(*sqlparser.FuncExpr); ok {
			if _, col, ok := legacyWindow(f); ok && col == "" {
				group = f
				continue
			}
		}
		keys = append(keys, p.TextOf(ge))
	}
	var aux []*sqlparser.FuncExpr
	var having sqlparser.SQLNode
	if s.Having != nil {
		having = s.Having.Expr
	}
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if f, ok := n.(*sqlparser.FuncExpr); ok {
			if _, col, ok := legacyWindow(f); ok && col != "" {
				aux = append(aux, f)
				return false, nil
			}
		}
		return true, nil
	}, s.SelectExprs, having)
	if group == nil && len(aux) == 0 {
		return nil
	}
	w := group
	if w == nil {
		w = aux[0]
	}
	fn, _, _ := legacyWindow(w)
	var args []string
	for _, e := range w.Exprs {
		args = append(args, p.TextOf(e))
	}
	call := fmt.Sprintf("%s(%s)", strings.ToUpper(w.Name.String()), strings.Join(args, ", "))
	what := fmt.Sprintf("%s belongs to Flink's legacy group window (GROUP BY %s(...))", call, fn)
	if group != nil {
		what = fmt.Sprintf("GROUP BY %s is Flink's legacy group window", call)
	}
	// The window's columns replace the auxiliary functions where they
	// stand; the statement is refused, so it may change.
	for _, f := range aux {
		_, col, _ := legacyWindow(f)
		to := &sqlparser.ColName{Name: sqlparser.NewColIdent(col)}
		for _, it := range s.SelectExprs {
			if ae, ok := it.(*sqlparser.AliasedExpr); ok {
				ae.Expr = sqlparser.ReplaceExpr(ae.Expr, f, to)
			}
		}
		if s.Having != nil {
			s.Having.Expr = sqlparser.ReplaceExpr(s.Having.Expr, f, to)
		}
	}
	var items []string
	for _, it := range s.SelectExprs {
		items = append(items, p.TextOf(it))
	}
	tvf, advice := fn, "write it with the window table function "+fn
	if fn == "SESSION" {
		tvf, advice = "TUMBLE", "kshare has no session windows (nor Flink's SESSION window table function); for windows of a fixed size write TUMBLE"
	}
	ts, rest := "ts", "INTERVAL '1' MINUTE"
	if len(args) > 0 {
		ts = args[0]
	}
	if len(args) > 1 {
		rest = strings.Join(args[1:], ", ")
	}
	q := fmt.Sprintf("SELECT %s FROM TABLE(%s(TABLE %s, DESCRIPTOR(%s), %s))", strings.Join(items, ", "), tvf, p.scope.tbl.Name(), ts, rest)
	if s.Where != nil && s.Where.Expr != nil {
		q += " WHERE " + p.TextOf(s.Where.Expr)
	}
	q += " GROUP BY " + strings.Join(append([]string{colWindowStart, colWindowEnd}, keys...), ", ")
	if s.Having != nil {
		q += " HAVING " + p.TextOf(s.Having.Expr)
	}
	return expr.Errorf(ErrUnsupported, "%s, which kshare does not run; %s: %s", what, advice, q)
}
