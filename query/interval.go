package query

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file plans an interval join of two streams, as Flink SQL writes one:
//
//	FROM orders AS o [LEFT | RIGHT | FULL [OUTER]] JOIN shipments AS s
//	  ON o.id = s.order_id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '4' HOUR
//	FROM orders AS o, shipments AS s WHERE o.id = s.order_id AND s.ts BETWEEN ...
//
// Its conditions are equalities of a column of each side (the keys), a
// bound on each side of the difference of the two event times (their
// WATERMARK columns: BETWEEN, <, <=, >, >=, each time plus or minus a
// constant INTERVAL), and anything else (a filter of the pairs, or for an
// outer join what a pair must meet to count as one). intervalrun.go runs
// it.
//
// A join of two streams without a time bound (a regular join) is refused,
// naming the two forms that work: it would keep every row of both sides
// for as long as the query runs, its state growing without end. Flink
// bounds such state with 'table.exec.state.ttl', which silently drops
// matches once a row expires: an answer that depends on how long the job
// happened to run. kshare answers no query wrongly, so it asks for the time
// bound that makes the state bounded and the answer exact.

// joinExample is an interval join, for messages.
const joinExample = "FROM orders AS o JOIN shipments AS s ON o.id = s.order_id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '4' HOUR"

// isFullJoin reports whether toks[i:] starts FULL [OUTER] JOIN.
func isFullJoin(toks []parse.Token, i int) bool {
	if !toks[i].IsWord("full") || i+1 >= len(toks) {
		return false
	}
	return toks[i+1].IsWord("join") || i+2 < len(toks) && toks[i+1].IsWord("outer") && toks[i+2].IsWord("join")
}

// fullJoinClause makes FULL [OUTER] JOIN a JOIN for sqlparser and notes
// it; it returns the index of the last token before JOIN.
func (rw *rewritten) fullJoinClause(toks []parse.Token, i int) (int, error) {
	if rw.fullJoin {
		return 0, syntaxAt(rw.Src, toks[i].Start, "a query joins two tables: FULL JOIN is written twice")
	}
	rw.fullJoin = true
	end := i
	if toks[i+1].IsWord("outer") {
		end = i + 1
	}
	rw.edits = append(rw.edits, edit{toks[i].Start, toks[end].End, ""})
	return end, nil
}

// planCommaJoin plans FROM a, b WHERE ...: an inner join whose conditions
// are WHERE's.
func planCommaJoin(rw *rewritten, s *sqlparser.Select, cat Catalog) (*Plan, error) {
	if len(s.From) != 2 {
		return nil, expr.UnsupportedClause("a FROM list of more than two tables", "a query joins two tables: "+joinExample)
	}
	if rw.fullJoin {
		return nil, expr.UnsupportedClause("FULL JOIN after a FROM list", "a query joins two tables: "+joinExample)
	}
	je := &sqlparser.JoinTableExpr{LeftExpr: s.From[0], RightExpr: s.From[1], Join: sqlparser.JoinStr}
	if s.Where == nil || s.Where.Expr == nil {
		return nil, expr.Errorf(ErrUnsupported, "FROM with two tables joins them, and needs WHERE with an equality of a column of each and a bound on their times: FROM orders AS o, shipments AS s WHERE o.id = s.order_id AND s.ts BETWEEN o.ts AND o.ts + INTERVAL '4' HOUR")
	}
	je.Condition.On = s.Where.Expr
	s.Where = nil
	return planIntervalJoin(rw, s, je, cat)
}

// planIntervalJoin plans a join of two streams.
func planIntervalJoin(rw *rewritten, s *sqlparser.Select, je *sqlparser.JoinTableExpr, cat Catalog) (*Plan, error) {
	var outer [2]bool
	kind := "JOIN"
	switch {
	case rw.fullJoin && je.Join == sqlparser.JoinStr:
		outer, kind = [2]bool{true, true}, "FULL JOIN"
	case je.Join == sqlparser.JoinStr:
	case je.Join == sqlparser.LeftJoinStr:
		outer[0], kind = true, "LEFT JOIN"
	case je.Join == sqlparser.RightJoinStr:
		outer[1], kind = true, "RIGHT JOIN"
	default:
		return nil, expr.UnsupportedClause(strings.ToUpper(je.Join), "a join of two streams is JOIN, LEFT, RIGHT or FULL [OUTER] JOIN: "+joinExample)
	}
	if len(je.Condition.Using) > 0 {
		return nil, expr.UnsupportedClause("JOIN ... USING", "write ON o.id = s.order_id")
	}
	left, right, la, ra, err := joinTables(je, cat, "s")
	if err != nil {
		return nil, err
	}
	lt, rtn := left.Name(), right.Name()
	if _, ok := right.Source.(flow.LookupSource); ok && (left.Bound.Def.Watermark == nil || right.Bound.Def.Watermark == nil) {
		// Most likely a lookup join without its FOR SYSTEM_TIME AS OF.
		return nil, expr.Errorf(ErrUnsupported, "JOIN of '%s' with '%s': a table looked up by key for each row of a stream follows the stream's processing time: "+
			"FROM orders AS o [LEFT] JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id; "+
			"a join of two streams bounds their event times (both tables need a WATERMARK): %s",
			options.Cut(left.Name()), options.Cut(right.Name()), joinExample)
	}
	for _, t := range []*table.Table{left, right} {
		if err := checkStreamSide(t); err != nil {
			return nil, err
		}
	}
	ld, rd := left.Bound.Def, right.Bound.Def
	rcols := rd.Schema.Columns
	d, ls, rs := joinedDef(left, right, la, ra, rcols, outer[1], outer[0])
	// The joined rows have no time attribute: a pair is made when its later
	// row arrives, in no order of either time.
	d.Watermark = nil
	sides := []*side{ls, rs}

	// The conditions: ON's, and for an inner join WHERE's too, which mean
	// the same there.
	var conj []sqlparser.Expr
	splitAnd(je.Condition.On, &conj)
	if !outer[0] && !outer[1] && s.Where != nil && s.Where.Expr != nil {
		splitAnd(s.Where.Expr, &conj)
		s.Where = nil
	}
	ij := &intervalJoin{names: [2]string{left.Name(), right.Name()}, in: [2]flow.Source{left.Source, right.Source}, outer: outer,
		delay: [2]time.Duration{ld.Watermark.Delay, rd.Watermark.Delay}, lower: math.MinInt64, upper: math.MaxInt64}
	srcCols := [2][]types.Column{ld.Schema.Columns, rcols}
	for k, t := range []*table.Table{left, right} {
		wm := t.Bound.Def.Watermark.Column
		ij.times[k] = slices.IndexFunc(srcCols[k], func(c types.Column) bool { return strings.EqualFold(c.Name, wm) })
		if ij.times[k] < 0 {
			return nil, expr.Errorf(ErrUnsupported, "%s of '%s' and '%s': the event time of table '%s' ('%s') is a computed column; an interval join reads the times of columns the tables read",
				kind, options.Cut(left.Name()), options.Cut(right.Name()), options.Cut(t.Name()), options.Cut(wm))
		}
	}
	var rest sqlparser.Expr
	bounded := [2]bool{}
	for _, e := range conj {
		if l, r, ok := keyPair(e, sides); ok {
			lk, rk, err := streamKey(sides, srcCols, l, r)
			if err != nil {
				return nil, err
			}
			ij.keys[0], ij.keys[1] = append(ij.keys[0], lk), append(ij.keys[1], rk)
			continue
		}
		lo, hi, ok, err := timeBound(e, sides, [2]string{ld.Watermark.Column, rd.Watermark.Column})
		if err != nil {
			return nil, err
		}
		if ok {
			if lo != math.MinInt64 {
				ij.lower, bounded[0] = max(ij.lower, lo), true
			}
			if hi != math.MaxInt64 {
				ij.upper, bounded[1] = min(ij.upper, hi), true
			}
			continue
		}
		if rest == nil {
			rest = e
		} else {
			rest = &sqlparser.AndExpr{Left: rest, Right: e}
		}
	}
	lq, rq := la, ra
	lts, rts := ld.Watermark.Column, rd.Watermark.Column
	if len(ij.keys[0]) == 0 {
		return nil, expr.Errorf(ErrUnsupported, "%s of '%s' and '%s' needs an equality of a column of each side (%s.id = %s.order_id): the rows of two streams are joined by key: %s",
			kind, options.Cut(lq), options.Cut(rq), lq, rq, joinExample)
	}
	switch {
	case !bounded[0] && !bounded[1]:
		hint := ""
		if _, ok := right.Source.(flow.LookupSource); ok {
			hint = fmt.Sprintf("; to look rows of '%s' up for each row of '%s', write a lookup join: FROM %s JOIN %s FOR SYSTEM_TIME AS OF %s.proc_time ...",
				options.Cut(right.Name()), options.Cut(left.Name()), types.QuoteIdent(lt), types.QuoteIdent(rtn), lq)
		}
		return nil, expr.Errorf(ErrUnsupported, "%s of two streams, '%s' and '%s', needs a bound on their event times, so that a row can be let go once no row it could meet is still to come: "+
			"%s.%s BETWEEN %s.%s - INTERVAL '1' HOUR AND %s.%s (a join without one would keep every row for as long as the query runs; kshare joins two streams with a time bound, or a stream with a table it looks up by key: FOR SYSTEM_TIME AS OF)%s",
			kind, options.Cut(left.Name()), options.Cut(right.Name()), rq, rts, lq, lts, lq, lts, hint)
	case !bounded[0]:
		return nil, expr.Errorf(ErrUnsupported, "%s of '%s' and '%s' bounds %s.%s from above only; give it a lower bound too: %s.%s >= %s.%s - INTERVAL '1' HOUR (or BETWEEN)",
			kind, options.Cut(left.Name()), options.Cut(right.Name()), rq, rts, rq, rts, lq, lts)
	case !bounded[1]:
		return nil, expr.Errorf(ErrUnsupported, "%s of '%s' and '%s' bounds %s.%s from below only; give it an upper bound too: %s.%s <= %s.%s + INTERVAL '1' HOUR (or BETWEEN)",
			kind, options.Cut(left.Name()), options.Cut(right.Name()), rq, rts, rq, rts, lq, lts)
	case ij.lower > ij.upper:
		return nil, expr.Errorf(ErrUnsupported, "%s of '%s' and '%s': its time bounds leave no pair (%s.%s - %s.%s would be at least %s and at most %s)",
			kind, options.Cut(left.Name()), options.Cut(right.Name()), rq, rts, lq, lts, time.Duration(ij.lower)*time.Millisecond, time.Duration(ij.upper)*time.Millisecond)
	}
	if rest != nil {
		if !outer[0] && !outer[1] {
			// An inner join's other conditions filter the pairs, as
			// WHERE does.
			s.Where = &sqlparser.Where{Type: sqlparser.WhereStr, Expr: rest}
		} else if ij.residual, err = planResidual(rw, rest, d, sides, la, ra); err != nil {
			return nil, err
		}
	}
	ij.fields = d.Schema.Arrow().Fields()
	b := *left.Bound
	b.Def = d
	joined := &table.Table{Bound: &b, Source: ij}
	return planTableIn(rw, s, joined, []string{la, ra}, sides)
}

// checkStreamSide checks that t can be a side of a join of two streams:
// it is read, it is a table of inserts, it has an event time.
func checkStreamSide(t *table.Table) error {
	if t.Source == nil {
		return expr.Errorf(ErrUnsupported, "table '%s' cannot be read", options.Cut(t.Name()))
	}
	if what, ok := t.Bound.Changelog(); ok {
		return expr.Errorf(ErrUnsupported, "table '%s' is a changelog (%s); a join of two streams takes tables of inserts (a changelog's latest rows are joined with FOR SYSTEM_TIME AS OF: a temporal join)", options.Cut(t.Name()), what)
	}
	if t.Bound.Def.Watermark == nil {
		return expr.Errorf(ErrUnsupported, "table '%s' has no WATERMARK; a join of two streams bounds their event times (%s): declare its event time, WATERMARK FOR ts AS ts - INTERVAL '5' SECOND",
			options.Cut(t.Name()), joinExample)
	}
	return nil
}

// streamKey checks the key equality of left column l and right column r
// (indexes among the sides' columns) and returns their positions among
// the sides' source columns.
func streamKey(sides []*side, src [2][]types.Column, l, r int) (int, int, error) {
	var at [2]int
	for k, i := range []int{l, r} {
		name := sides[k].names[i]
		at[k] = slices.IndexFunc(src[k], func(c types.Column) bool { return strings.EqualFold(c.Name, name) })
		if at[k] < 0 {
			return 0, 0, expr.Errorf(ErrUnsupported, "join key '%s' is a computed column of table '%s'; a join's keys are columns the tables read", options.Cut(name), options.Cut(sides[k].table))
		}
	}
	lt, rt := src[0][at[0]].Type, src[1][at[1]].Type
	if !joinable(lt, rt) {
		return 0, 0, expr.Errorf(ErrType, "join key %s.%s is %s and %s.%s is %s; the keys of a join have one type (integers of any width go together)",
			options.Cut(sides[0].qualifier), options.Cut(sides[0].names[l]), expr.TypeName(lt), options.Cut(sides[1].qualifier), options.Cut(sides[1].names[r]), expr.TypeName(rt))
	}
	return at[0], at[1], nil
}

// splitAnd appends the terms of e's conjunction to out.
func splitAnd(e sqlparser.Expr, out *[]sqlparser.Expr) {
	switch x := e.(type) {
	case nil:
	case *sqlparser.AndExpr:
		splitAnd(x.Left, out)
		splitAnd(x.Right, out)
	case *sqlparser.ParenExpr:
		if _, ok := x.Expr.(*sqlparser.AndExpr); ok {
			splitAnd(x.Expr, out)
			return
		}
		*out = append(*out, e)
	default:
		*out = append(*out, e)
	}
}

// timeBound reads e as a bound on the right's time less the left's, in
// ms: [lo, hi], math.MinInt64 or math.MaxInt64 where it says nothing; ok
// is false when e compares no time of one side with one of the other.
// times are the sides' event-time columns.
func timeBound(e sqlparser.Expr, sides []*side, times [2]string) (lo, hi int64, ok bool, err error) {
	lo, hi = math.MinInt64, math.MaxInt64
	switch x := e.(type) {
	case *sqlparser.RangeCond:
		if x.Operator != sqlparser.BetweenStr {
			return lo, hi, false, nil
		}
		lo1, hi1, ok1, err := compareTimes(x.Left, ">=", x.From, sides, times)
		if err != nil || !ok1 {
			return lo, hi, false, err
		}
		lo2, hi2, ok2, err := compareTimes(x.Left, "<=", x.To, sides, times)
		if err != nil || !ok2 {
			return lo, hi, false, err
		}
		return max(lo1, lo2), min(hi1, hi2), true, nil
	case *sqlparser.ComparisonExpr:
		switch x.Operator {
		case sqlparser.LessThanStr, sqlparser.LessEqualStr, sqlparser.GreaterThanStr, sqlparser.GreaterEqualStr:
			return compareTimes(x.Left, x.Operator, x.Right, sides, times)
		}
	}
	return lo, hi, false, nil
}

// compareTimes reads a op b, each a side's time plus a constant, as a
// bound on the right's time less the left's.
func compareTimes(a sqlparser.Expr, op string, b sqlparser.Expr, sides []*side, times [2]string) (lo, hi int64, ok bool, err error) {
	lo, hi = math.MinInt64, math.MaxInt64
	sa, x, oka, err := timeTerm(a, sides, times)
	if err != nil || !oka {
		return lo, hi, false, err
	}
	sb, y, okb, err := timeTerm(b, sides, times)
	if err != nil || !okb || sa == sb {
		return lo, hi, false, err
	}
	// r + x op l + y is r - l op y - x; l + x op r + y is r - l op' x - y,
	// op' the other way round.
	c := y - x
	if sa == 0 {
		c = x - y
		op = map[string]string{"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op]
	}
	switch op {
	case ">=":
		lo = c
	case ">":
		lo = c + 1 // times are in ms
	case "<=":
		hi = c
	case "<":
		hi = c - 1
	}
	return lo, hi, true, nil
}

// timeTerm reads e as side's event time plus off (ms): the column, or it
// plus or minus a constant INTERVAL. ok is false for anything else.
func timeTerm(e sqlparser.Expr, sides []*side, times [2]string) (side int, off int64, ok bool, err error) {
	switch x := e.(type) {
	case *sqlparser.ParenExpr:
		return timeTerm(x.Expr, sides, times)
	case *sqlparser.ColName:
		k, i := sideOf(x, sides)
		if k < 0 || !strings.EqualFold(sides[k].names[i], times[k]) {
			return 0, 0, false, nil
		}
		return k, 0, true, nil
	case *sqlparser.BinaryExpr:
		if x.Operator != sqlparser.PlusStr && x.Operator != sqlparser.MinusStr {
			return 0, 0, false, nil
		}
		col, iv := x.Left, x.Right
		if _, isIv := x.Left.(*sqlparser.IntervalExpr); isIv && x.Operator == sqlparser.PlusStr {
			col, iv = x.Right, x.Left
		}
		ie, isIv := iv.(*sqlparser.IntervalExpr)
		if !isIv {
			return 0, 0, false, nil
		}
		k, base, ok, err := timeTerm(col, sides, times)
		if err != nil || !ok {
			return 0, 0, false, err
		}
		d, err := constInterval(ie)
		if err != nil {
			return 0, 0, false, err
		}
		if x.Operator == sqlparser.MinusStr {
			d = -d
		}
		return k, base + d.Milliseconds(), true, nil
	}
	return 0, 0, false, nil
}

// constInterval is INTERVAL 'n' unit (or a compound interval of days to
// seconds) as a duration.
func constInterval(ie *sqlparser.IntervalExpr) (time.Duration, error) {
	v, ok := ie.Expr.(*sqlparser.SQLVal)
	if !ok || (v.Type != sqlparser.StrVal && v.Type != sqlparser.IntVal) {
		return 0, expr.Errorf(ErrUnsupported, "a join's time bound is a constant INTERVAL: INTERVAL '1' HOUR")
	}
	unit := strings.ToLower(ie.Unit)
	if units, ok := strings.CutPrefix(unit, expr.IntervalPrefix); ok {
		from, to, _ := strings.Cut(units, "_to_")
		c, err := expr.ParseCompound(string(v.Val), from, to)
		if err != nil {
			return 0, expr.Errorf(ErrSyntax, "%v", err)
		}
		if c.Months != 0 {
			return 0, expr.Errorf(ErrUnsupported, "a join's time bound is an interval of days to seconds; months and years are of no fixed length")
		}
		return c.D, nil
	}
	d, err := table.ParseInterval(string(v.Val), ie.Unit)
	if err != nil {
		return 0, expr.Errorf(ErrSyntax, "a join's time bound: %v", err)
	}
	return d, nil
}

// JoinsStreams reports whether the query joins two streams (an interval
// join): it keeps their rows in a State (Options.State), without which it
// does not run.
func (p *Plan) JoinsStreams() bool {
	_, ok := p.tbl.Source.(*intervalJoin)
	return ok
}
