package query

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/types"
)

// The statement is read twice: once by parse's lexer, on whose tokens the
// rewrite here turns Flink's spellings into ones xwb1989/sqlparser (a MySQL grammar)
// accepts, and then by sqlparser itself. The rewrite knows only tokens; the
// grammar stays sqlparser's.
//
// What the rewrite does, and why:
//   - CAST(x AS <Flink type>) and TRY_CAST(...): MySQL's CAST knows neither
//     STRING, BIGINT, TIMESTAMP(3) nor most of Flink's types. The cast
//     becomes a call of a placeholder function whose number indexes the
//     parsed target type.
//   - DATE '...', TIME '...', TIMESTAMP '...': MySQL reads these as a column
//     with a string alias, which would silently select the wrong thing. They
//     become casts of the string.
//   - Backslashes in string literals: Flink has no backslash escapes; MySQL
//     has. Doubling them makes sqlparser hand back the text as written.
//   - Names with letters beyond ASCII: Flink reads them, sqlparser reads
//     only ASCII letters in a bare name, so they are quoted with backticks.
//   - || and &&: MySQL reads them as OR and AND; in Flink || concatenates
//     strings. || becomes MySQL's DIV, which binds as * does, as || does in
//     Flink (Calcite); the analysis reads DIV as concatenation, and a DIV
//     the user wrote is refused here. && is refused.
//   - SUBSTRING(s FROM i FOR n), POSITION(a IN b), TRIM(LEADING c FROM s):
//     MySQL knows the first only for a column and the others not at all.
//     The keywords inside become commas and the name a placeholder
//     (expr.FuncPrefix, expr.TrimPrefix) that the analysis maps back.
//   - FILTER (WHERE cond) after an aggregate call: MySQL has no such
//     clause. The condition becomes the call's last argument, wrapped in
//     a placeholder (expr.FilterFunc) that the aggregate planner takes out.
//   - IS [NOT] UNKNOWN: MySQL knows IS [NOT] NULL only, which is the same
//     test of a BOOLEAN. The rewrite writes NULL and notes which IS it
//     was, so that the analysis still asks for a BOOLEAN operand.

// scan reads src with parse's lexer, the one every statement goes through,
// comments included: the rewrite removes them itself.
func scan(src string) ([]parse.Token, error) {
	lx := parse.NewLexer(src)
	lx.Comments = true
	var toks []parse.Token
	for {
		t, err := lx.Next()
		if err != nil {
			return nil, expr.FromParse(err, "syntax error at ")
		}
		if t.Kind == parse.EOF {
			return toks, nil
		}
		toks = append(toks, t)
	}
}

// pair reports whether toks[i] and the token after it are the two
// characters of op (||, &&) written together: the lexer reads symbols one
// character at a time, and only the rewrite cares which pairs MySQL reads
// as one operator.
func pair(toks []parse.Token, i int, op string) bool {
	return i+1 < len(toks) && toks[i].IsSymbol(op[:1]) && toks[i+1].IsSymbol(op[1:]) && toks[i].End == toks[i+1].Start
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// line is the line of src an offset is on, from 1.
func line(src string, off int) int {
	l, _ := parse.Position(src, off)
	return l
}

// errorAt prefixes e's message with where in src it is.
func errorAt(src string, off int, e *Error) *Error {
	l, c := parse.Position(src, off)
	e.Msg = fmt.Sprintf("line %d, column %d: %s", l, c, e.Msg)
	return e
}

func syntaxAt(src string, off int, msg string) *Error {
	l, c := parse.Position(src, off)
	return expr.Errorf(ErrSyntax, "syntax error at line %d, column %d: %s", l, c, msg)
}

// callSyntax is how Flink writes the arguments of a function that
// sqlparser cannot read as a call.
type callSyntax struct {
	commas []string // keywords that separate arguments (SUBSTRING(s FROM i FOR n))
	// unitFirst: the first argument is a unit word (EXTRACT(YEAR FROM t),
	// TIMESTAMPADD(DAY, n, t)); unitAfter: a unit word follows this keyword
	// (FLOOR(t TO DAY)). The word becomes a string literal.
	unitFirst bool
	unitAfter string
	// returning: RETURNING <type> and ON EMPTY / ON ERROR clauses may end
	// the arguments (JSON_VALUE); the call becomes a TRY_CAST of it to the
	// type (expr.CastSpec.returning), each clause two more arguments
	// (jsonClauses).
	returning bool
}

// funcSyntax are the functions sqlparser cannot read as calls (TRIM's
// arguments are read apart). sqlparser reads REGEXP only as MySQL's
// operator.
var funcSyntax = map[string]callSyntax{
	"substring": {commas: []string{"from", "for"}}, "substr": {commas: []string{"from", "for"}},
	"position": {commas: []string{"in"}}, "trim": {}, "regexp": {},
	"extract":      {commas: []string{"from"}, unitFirst: true},
	"timestampadd": {unitFirst: true}, "timestampdiff": {unitFirst: true},
	"floor": {commas: []string{"to"}, unitAfter: "to"}, "ceil": {commas: []string{"to"}, unitAfter: "to"},
	"ceiling":    {commas: []string{"to"}, unitAfter: "to"},
	"json_value": {returning: true},
}

// itemAccess rewrites x[k] (toks[i] is the [) into a call of the item
// placeholder, item(x, k), which sqlparser reads: x is a name (a.b), a call
// or another x[k] (closes maps the ] of each to where its x starts).
func (rw *rewritten) itemAccess(toks []parse.Token, i int, closes map[int]int) {
	start := operandStart(toks, i, closes)
	end := closing(toks, i, "[", "]")
	if start < 0 || end < 0 {
		return // the parser reports it
	}
	closes[end] = start
	rw.edits = append(rw.edits,
		edit{toks[start].Start, toks[start].Start, expr.FuncPrefix + expr.ItemFunc + "("},
		edit{toks[i].Start, toks[i].End, ", "},
		edit{toks[end].Start, toks[end].End, ")"})
}

// closing is the index of the token that closes the open bracket at
// toks[i], -1 if none does.
func closing(toks []parse.Token, i int, open, close string) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch {
		case toks[j].IsSymbol(open):
			depth++
		case toks[j].IsSymbol(close):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func isName(t parse.Token) bool { return t.Kind == parse.Ident || t.Kind == parse.QuotedIdent }

// isFuncName reports whether t, before a (, names a function rather than
// being a keyword (SELECT (x)[1]).
func isFuncName(t parse.Token) bool {
	if t.Kind != parse.Ident {
		return t.Kind == parse.QuotedIdent
	}
	known := expr.IsFunction(t.Val)
	return known || hasSyntax(t.Val) || !isKeyword(t.Val)
}

// operandStart is the token where the operand of the [ at toks[i] starts,
// -1 if there is none kshare reads.
func operandStart(toks []parse.Token, i int, closes map[int]int) int {
	j := i - 1
	switch {
	case j < 0:
		return -1
	case toks[j].IsSymbol("]"):
		if s, ok := closes[j]; ok {
			return s
		}
		return -1
	case toks[j].IsSymbol(")"):
		depth := 0
		for ; j >= 0; j-- {
			if toks[j].IsSymbol(")") {
				depth++
			} else if toks[j].IsSymbol("(") {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j <= 0 || !isFuncName(toks[j-1]) {
			return j // (x)[k]
		}
		j-- // f(x)[k]
	case !isName(toks[j]):
		return -1
	}
	for j >= 2 && toks[j-1].IsSymbol(".") && isName(toks[j-2]) {
		j -= 2
	}
	return j
}

func hasSyntax(name string) bool {
	_, ok := funcSyntax[strings.ToLower(name)]
	return ok
}

// funcSyntax rewrites the call at toks[i] (a name of funcSyntax, then "(")
// into a plain call: its keywords at the call's own level become commas.
func (rw *rewritten) funcSyntax(toks []parse.Token, i int) {
	name := strings.ToLower(toks[i].Val)
	var inner []int // tokens at the call's own level
	depth := 0
	closed := false
	closeAt := 0
	for j := i + 1; j < len(toks) && !closed; j++ {
		switch {
		case toks[j].IsSymbol("("):
			depth++
		case toks[j].IsSymbol(")"):
			depth--
			closed, closeAt = depth == 0, j
		case depth == 1:
			inner = append(inner, j)
		}
	}
	if !closed {
		return // the parser reports it
	}
	comma := func(j int, with string) { rw.edits = append(rw.edits, edit{toks[j].Start, toks[j].End, with}) }
	if name != "trim" {
		syn := funcSyntax[name]
		unit := func(j int) {
			if j < len(toks) && toks[j].Kind == parse.Ident {
				comma(j, types.QuoteString(strings.ToUpper(toks[j].Val)))
			}
		}
		if syn.unitFirst && len(inner) > 0 {
			unit(inner[0])
		}
		for _, j := range inner {
			for _, w := range syn.commas {
				if toks[j].IsWord(w) {
					comma(j, ",")
				}
			}
			if syn.unitAfter != "" && toks[j].IsWord(syn.unitAfter) {
				unit(j + 1)
			}
		}
		clauses := []int{closeAt} // where each clause starts, and the )
		if syn.returning {
			clauses = rw.jsonClauses(toks, inner, closeAt)
		}
		for _, j := range inner {
			if syn.returning && toks[j].IsWord("returning") {
				// f(args RETURNING t) -> cast(f(args)): the type stays in
				// the source, where castType reads it; it ends where the
				// next clause starts.
				next := closeAt
				for _, c := range clauses {
					if c > j && c < next {
						next = c
					}
				}
				n := len(rw.Casts)
				start, end := toks[j].End, toks[next].Start
				rw.Casts = append(rw.Casts, expr.CastSpec{Type: strings.TrimSpace(rw.Src[start:end]), Start: start, End: end, Try: true, Returning: true})
				comma(i, fmt.Sprintf("%s%d(%s%s", expr.CastFunc, n, expr.FuncPrefix, name))
				rw.edits = append(rw.edits, edit{toks[j].Start, end, ""},
					edit{toks[closeAt].Start, toks[closeAt].Start, ")"})
				return
			}
		}
		comma(i, expr.FuncPrefix+name)
		return
	}
	from := -1
	for _, j := range inner {
		if toks[j].IsWord("from") {
			from = j
			break
		}
	}
	if from < 0 {
		comma(i, expr.FuncPrefix+name)
		return
	}
	mode, chars := "both", i+2 // where the characters would start
	if first := toks[i+2]; first.IsWord("both") || first.IsWord("leading") || first.IsWord("trailing") {
		mode, chars = strings.ToLower(first.Val), i+3
		comma(i+2, "")
	}
	comma(i, expr.TrimPrefix+mode)
	if from == chars {
		comma(from, "") // no characters: TRIM(LEADING FROM s)
	} else {
		comma(from, ",")
	}
}

// jsonClauses rewrites JSON_VALUE's {NULL | ERROR | DEFAULT expr} ON
// {EMPTY | ERROR} clauses among the call's tokens (inner, at its own level)
// into two arguments each: 'ON EMPTY NULL', NULL or 'ON ERROR DEFAULT',
// expr. It returns where each clause starts, then closeAt.
func (rw *rewritten) jsonClauses(toks []parse.Token, inner []int, closeAt int) []int {
	var starts []int
	from := 0 // in inner, after the last comma or clause
	for k, j := range inner {
		if toks[j].IsSymbol(",") {
			from = k + 1
		}
		if !toks[j].IsWord("on") || k+1 >= len(inner) || !toks[inner[k+1]].IsWord("empty") && !toks[inner[k+1]].IsWord("error") {
			continue
		}
		on, end := strings.ToUpper(toks[inner[k+1]].Val), toks[inner[k+1]].End
		def := -1
		for d := from; d < k; d++ {
			if toks[inner[d]].IsWord("default") {
				def = d
				break
			}
		}
		switch {
		case def >= 0:
			start := inner[def]
			rw.edits = append(rw.edits, edit{toks[start].Start, toks[start].End, fmt.Sprintf(", 'ON %s DEFAULT', ", on)},
				edit{toks[j].Start, end, ""})
			starts = append(starts, start)
		case k > from && (toks[inner[k-1]].IsWord("null") || toks[inner[k-1]].IsWord("error")):
			start := inner[k-1]
			rw.edits = append(rw.edits, edit{toks[start].Start, end, fmt.Sprintf(", 'ON %s %s', NULL", on, strings.ToUpper(toks[start].Val))})
			starts = append(starts, start)
		}
		from = k + 2
	}
	return append(starts, closeAt)
}

type edit struct {
	start, end int // replaced source span
	with       string
}

// rewritten is a statement ready for sqlparser, with what is needed to map
// sqlparser's positions back onto the source.
type rewritten struct {
	// Source is the statement as written (Src) and what the compiler of
	// its expressions reads of the rewrite (Casts, Unknowns).
	expr.Source
	sql   string        // for sqlparser
	edits []edit        // sorted, non-overlapping
	toks  []parse.Token // comments left out
	// window is the window TVF the rewrite took out (FROM TABLE(TUMBLE(...))),
	// nil without one; see window.go.
	window *windowSpec
	// isOps say, for each IS [NOT] NULL | TRUE | FALSE | UNKNOWN in the
	// order written, whether it is UNKNOWN, which the rewrite made NULL;
	// Unknowns are the parsed IsExprs that were (see markUnknowns).
	isOps []bool
	// asOf is the FOR SYSTEM_TIME AS OF of a lookup join, taken out of
	// the text (see join.go); nil without one.
	asOf *systemTime
	// fullJoin: the statement's FULL [OUTER] JOIN, which sqlparser does
	// not read, was made a JOIN (see interval.go).
	fullJoin bool
}

// text is t as written.
func (rw *rewritten) text(t parse.Token) string { return rw.Src[t.Start:t.End] }

// rewrite runs the phases of the rewrite: the tokens are read (readTokens),
// Flink's spellings among them become MySQL's (flinkSyntax), the comments
// go (dropComments), and the edits are made (apply).
func rewrite(src string) (*rewritten, error) {
	toks, comments, err := readTokens(src)
	if err != nil {
		return nil, err
	}
	rw := &rewritten{Source: expr.Source{Src: src}, toks: toks}
	typeSpans, err := rw.flinkSyntax(toks)
	if err != nil {
		return nil, err
	}
	rw.dropComments(comments, typeSpans)
	if err := rw.apply(); err != nil {
		return nil, err
	}
	return rw, nil
}

// readTokens scans src into its tokens and its comments, refusing what
// neither grammar should guess at: hints and double quotes.
func readTokens(src string) (toks, comments []parse.Token, err error) {
	all, err := scan(src)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range all {
		switch {
		case t.Kind == parse.Comment && strings.HasPrefix(t.Val, "/*+"):
			return nil, nil, errorAt(src, t.Start, expr.UnsupportedClause("a hint (/*+ ... */)", "set a table's options in its CREATE TABLE"))
		case t.Kind == parse.Comment:
			comments = append(comments, t)
		case t.Kind == parse.DQString:
			// Flink has no double-quoted literals; MySQL reads them as
			// strings, PostgreSQL as names. Either guess could answer
			// SELECT "name" wrongly, so neither is taken.
			return nil, nil, errorAt(src, t.Start, expr.Errorf(ErrSyntax,
				"double quotes are not supported: quote names with backticks (`name`) and strings with single quotes ('text')"))
		default:
			toks = append(toks, t)
		}
	}
	return toks, comments, nil
}

// flinkSyntax goes through the tokens once and records the edits that
// turn Flink's spellings into MySQL's. It returns the spans of the CASTs'
// target types: the AS of a CAST mapped to the ) that ends its type, which
// is the cast's, not text to rewrite (CAST(x AS TIME) has no typed literal
// in it).
func (rw *rewritten) flinkSyntax(toks []parse.Token) (map[int]int, error) {
	src := rw.Src
	typeSpans := map[int]int{}
	operands := map[int]int{} // the ] of x[k] -> where x starts
	for i := 0; i < len(toks); i++ {
		if end, ok := typeSpans[i]; ok {
			i = end - 1
			continue
		}
		t := toks[i]
		switch {
		case isWindowTVF(toks, i):
			end, err := rw.windowTVF(toks, i)
			if err != nil {
				return nil, err
			}
			i = end
		case isFullJoin(toks, i):
			end, err := rw.fullJoinClause(toks, i)
			if err != nil {
				return nil, err
			}
			i = end
		case isSystemTime(toks, i):
			end, err := rw.systemTimeClause(toks, i)
			if err != nil {
				return nil, err
			}
			i = end
		case t.IsSymbol("["):
			rw.itemAccess(toks, i, operands)
		case pair(toks, i, "||"):
			rw.edits = append(rw.edits, edit{t.Start, toks[i+1].End, " " + expr.ConcatOp + " "})
			i++
		case t.IsWord(expr.ConcatOp):
			return nil, errorAt(src, t.Start, expr.UnsupportedExpr("DIV", "write / on integers"))
		case i+1 < len(toks) && toks[i+1].IsSymbol("(") && t.Kind == parse.Ident && hasSyntax(t.Val):
			rw.funcSyntax(toks, i)
		case pair(toks, i, "&&"):
			return nil, errorAt(src, t.Start, expr.UnsupportedExpr("&&", "write AND"))
		case isAggFilter(toks, i):
			rw.aggFilter(toks, i)
		case t.IsWord("is"):
			rw.isTest(toks, i)
		case t.IsWord("interval") && i+4 < len(toks) && toks[i+1].Kind == parse.String && toks[i+2].Kind == parse.Ident && toks[i+3].IsWord("to") && toks[i+4].Kind == parse.Ident:
			// INTERVAL '1:30' HOUR TO MINUTE: sqlparser reads one word
			// for the unit (see expr.IntervalPrefix).
			rw.edits = append(rw.edits, edit{toks[i+2].Start, toks[i+4].End, expr.IntervalPrefix + strings.ToLower(toks[i+2].Val) + "_to_" + strings.ToLower(toks[i+4].Val)})
		case t.Kind == parse.Ident && !isASCII(t.Val):
			rw.edits = append(rw.edits, edit{t.Start, t.End, types.QuoteIdent(t.Val)})
		case t.Kind == parse.String:
			if text := rw.text(t); strings.Contains(text, `\`) {
				rw.edits = append(rw.edits, edit{t.Start, t.End, strings.ReplaceAll(text, `\`, `\\`)})
			}
		case (t.IsWord("cast") || t.IsWord("try_cast")) && i+1 < len(toks) && toks[i+1].IsSymbol("("):
			rw.cast(toks, i, typeSpans)
		case (t.IsWord("date") || t.IsWord("time") || t.IsWord("timestamp")) && i+1 < len(toks) && toks[i+1].Kind == parse.String:
			rw.typedLiteral(toks, i)
			i++
		}
	}
	return typeSpans, nil
}

// cast takes the target type out of the CAST or TRY_CAST at toks[i] (see
// expr.CastFunc) and records its span in typeSpans.
func (rw *rewritten) cast(toks []parse.Token, i int, typeSpans map[int]int) {
	closeAt, asAt := -1, -1
	depth := 0
	for j := i + 1; j < len(toks); j++ {
		switch {
		case toks[j].IsSymbol("("):
			depth++
		case toks[j].IsSymbol(")"):
			depth--
		case depth == 1 && asAt < 0 && toks[j].IsWord("as"):
			asAt = j
		}
		if depth == 0 {
			closeAt = j
			break
		}
	}
	if closeAt < 0 || asAt < 0 {
		return // let the parser report it
	}
	typeSpans[asAt] = closeAt
	t := toks[i]
	typ := strings.TrimSpace(rw.Src[toks[asAt].End:toks[closeAt].Start])
	n := len(rw.Casts)
	rw.Casts = append(rw.Casts, expr.CastSpec{Type: typ, Start: toks[asAt].End, End: toks[closeAt].Start, Try: t.IsWord("try_cast")})
	rw.edits = append(rw.edits,
		edit{t.Start, t.End, fmt.Sprintf("%s%d", expr.CastFunc, n)},
		edit{toks[asAt].Start, toks[closeAt].Start, ""})
}

// typedLiteral makes DATE '...', TIME '...' or TIMESTAMP '...' at toks[i]
// a cast of its string.
func (rw *rewritten) typedLiteral(toks []parse.Token, i int) {
	t, s := toks[i], toks[i+1]
	n := len(rw.Casts)
	k := map[string]expr.LitKind{"date": expr.LitDate, "time": expr.LitTime, "timestamp": expr.LitTimestamp}[strings.ToLower(t.Val)]
	rw.Casts = append(rw.Casts, expr.CastSpec{Type: strings.ToUpper(t.Val), Lit: true, Kind: k})
	body := rw.text(s)
	if strings.Contains(body, `\`) {
		body = strings.ReplaceAll(body, `\`, `\\`)
	}
	rw.edits = append(rw.edits, edit{t.Start, s.End, fmt.Sprintf("%s%d(%s)", expr.CastFunc, n, body)})
}

// isAggFilter reports whether toks[i] starts the FILTER (WHERE ...) clause
// of a call: it follows the call's ).
func isAggFilter(toks []parse.Token, i int) bool {
	return i > 0 && i+2 < len(toks) && toks[i].IsWord("filter") && toks[i-1].IsSymbol(")") &&
		toks[i+1].IsSymbol("(") && toks[i+2].IsWord("where")
}

// aggFilter moves the FILTER (WHERE cond) clause at toks[i] into the call
// before it, which sqlparser reads: COUNT(*) FILTER (WHERE x > 1) becomes
// COUNT(*, __kshare_filter(x > 1)). The analysis takes it out again (see
// expr.FilterOf) and refuses it on anything but an aggregate.
func (rw *rewritten) aggFilter(toks []parse.Token, i int) {
	closeAt := closing(toks, i+1, "(", ")")
	if closeAt < 0 {
		return // the parser reports it
	}
	rw.edits = append(rw.edits,
		edit{toks[i-1].Start, toks[i+2].End, ", " + expr.FilterFunc + "("},
		edit{toks[closeAt].End, toks[closeAt].End, ")"})
}

// isTest notes the IS at toks[i] for markUnknowns, and makes IS [NOT]
// UNKNOWN, which sqlparser does not know, IS [NOT] NULL: for the BOOLEAN
// operand that Flink requires, they are the same test.
func (rw *rewritten) isTest(toks []parse.Token, i int) {
	j := i + 1
	if j < len(toks) && toks[j].IsWord("not") {
		j++
	}
	if j >= len(toks) {
		return
	}
	switch w := toks[j]; {
	case w.IsWord("unknown"):
		rw.edits = append(rw.edits, edit{w.Start, w.End, "null"})
		rw.isOps = append(rw.isOps, true)
	case w.IsWord("null") || w.IsWord("true") || w.IsWord("false"):
		rw.isOps = append(rw.isOps, false)
	}
}

// markUnknowns finds the IsExprs of stmt that the rewrite made of IS [NOT]
// UNKNOWN (rw.isOps): the parser makes one IsExpr of each IS it read, and
// visiting each IsExpr after its operand finds them in the order written.
func (rw *rewritten) markUnknowns(stmt sqlparser.SQLNode) error {
	if !slices.Contains(rw.isOps, true) {
		return nil
	}
	var order []*sqlparser.IsExpr
	var visit sqlparser.Visit
	visit = func(n sqlparser.SQLNode) (bool, error) {
		is, ok := n.(*sqlparser.IsExpr)
		if !ok {
			return true, nil
		}
		if err := sqlparser.Walk(visit, is.Expr); err != nil {
			return false, err
		}
		order = append(order, is)
		return false, nil
	}
	_ = sqlparser.Walk(visit, stmt)
	if len(order) != len(rw.isOps) {
		// Never expected: refuse rather than guess which test is which.
		return expr.Errorf(ErrSyntax, "cannot read IS UNKNOWN in this statement; write IS NULL, which is the same test of a BOOLEAN")
	}
	rw.Unknowns = map[*sqlparser.IsExpr]bool{}
	for k, is := range order {
		if rw.isOps[k] {
			rw.Unknowns[is] = true
		}
	}
	return nil
}

// dropComments removes the comments, so that sqlparser neither reads
// MySQL's executable comments (/*! ... */) nor trips on "--x"; one inside
// a CAST's type or a typed literal goes with the text replaced around it.
func (rw *rewritten) dropComments(comments []parse.Token, typeSpans map[int]int) {
	toks := rw.toks
	main := len(rw.edits)
	for _, c := range comments {
		covered := false
		for as, end := range typeSpans {
			covered = covered || c.Start >= toks[as].Start && c.End <= toks[end].Start
		}
		for _, e := range rw.edits[:main] {
			covered = covered || c.Start < e.end && e.start < c.End
		}
		if !covered {
			rw.edits = append(rw.edits, edit{c.Start, c.End, " "})
		}
	}
}

// apply sorts the edits and makes them, giving the text for sqlparser.
func (rw *rewritten) apply() error {
	// Edits at one place: insertions first, the later one first (x[1][2]
	// inserts item( twice at x, the outer one second), then what replaces
	// text there.
	order := make([]int, len(rw.edits))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := rw.edits[order[a]], rw.edits[order[b]]
		if ea.start != eb.start {
			return ea.start < eb.start
		}
		za, zb := ea.end == ea.start, eb.end == eb.start
		if za != zb {
			return za
		}
		return za && order[a] > order[b]
	})
	sorted := make([]edit, len(order))
	for k, o := range order {
		sorted[k] = rw.edits[o]
	}
	rw.edits = sorted
	var b strings.Builder
	at := 0
	for _, e := range rw.edits {
		if e.start < at {
			// Edits come from disjoint tokens; if they ever overlap, refuse
			// the statement rather than hand sqlparser a mangled one.
			return syntaxAt(rw.Src, e.start, "cannot read this statement here")
		}
		b.WriteString(rw.Src[at:e.start])
		b.WriteString(e.with)
		at = e.end
	}
	b.WriteString(rw.Src[at:])
	rw.sql = b.String()
	return nil
}

// origin maps an offset in the rewritten text back onto the source. An
// offset inside a replacement maps to the start of what it replaced.
func (rw *rewritten) origin(off int) int {
	delta := 0 // rewritten minus source, for edits passed so far
	for _, e := range rw.edits {
		newStart := e.start + delta
		newEnd := newStart + len(e.with)
		if off < newStart {
			break
		}
		if off < newEnd {
			return e.start
		}
		delta += len(e.with) - (e.end - e.start)
	}
	return off - delta
}
