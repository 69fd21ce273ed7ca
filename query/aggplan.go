package query

// This file plans GROUP BY, HAVING and aggregate calls. An aggregate query
// runs in two steps: the input's rows are folded into groups (the keys and
// the aggregates' arguments are expressions over the table), and the select
// list and HAVING are expressions over the groups: over a "group batch"
// whose columns are the keys, then the aggregates' results.

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// aggPlan is the aggregation of a plan.
type aggPlan struct {
	keys     []expr.Node // over the input
	keyNames []string
	calls    []*aggCall
	having   expr.Node // over the group batch; nil: none
	// groupSchema is the group batch's: the keys, then the calls' results.
	groupSchema *arrow.Schema
}

// aggCall is one aggregate call: COUNT(*), SUM(price), ...
type aggCall struct {
	fn  string    // lower case: count, sum, avg, min, max, listagg
	arg expr.Node // over the input; nil for COUNT(*)
	// filter is the FILTER (WHERE ...) condition, over the input: the
	// call folds the rows it is TRUE for; nil for every row.
	filter   expr.Node
	distinct bool
	sep      string // LISTAGG's separator
	t        *types.DataType
	src      string
}

// isAggCall reports whether e is a call of an aggregate function, one
// kshare runs or one it refuses.
func isAggCall(e sqlparser.SQLNode) bool {
	switch e := e.(type) {
	case *sqlparser.FuncExpr:
		return e.Qualifier.IsEmpty() && (expr.IsAggregate(e.Name.Lowered()) || e.IsAggregate())
	case *sqlparser.GroupConcatExpr:
		return true
	}
	return false
}

// hasAggCall reports whether any of nodes calls an aggregate function.
func hasAggCall(nodes ...sqlparser.SQLNode) bool {
	found := false
	_ = sqlparser.Walk(func(n sqlparser.SQLNode) (bool, error) {
		if isAggCall(n) {
			found = true
		}
		return !found, nil
	}, nodes...)
	return found
}

// aggPhase says what an expression being planned is over.
type aggPhase int

const (
	phaseWhere  aggPhase = iota // WHERE, or the select list of a query without aggregation
	phaseKey                    // a GROUP BY expression
	phaseArg                    // an aggregate's argument
	phaseGroups                 // the select list or HAVING of an aggregate query
)

// aggPlanner is the planner's hook for aggregate calls and grouped columns
// (planner.agg): expr1 asks it first about every expression.
type aggPlanner struct {
	p      *planner
	phase  aggPhase
	plan   *aggPlan // nil while planning WHERE of a query without aggregation
	keySrc []string // the GROUP BY expressions' texts, lower case
	in     string   // the aggregate call whose argument is being planned
}

func (a *aggPlanner) expr(e sqlparser.Expr, src string) (expr.Node, bool, error) {
	if isAggCall(e) {
		n, err := a.call(e, src)
		return n, true, err
	}
	if a.phase != phaseGroups {
		return nil, false, nil
	}
	for k, ks := range a.keySrc {
		if strings.EqualFold(ks, src) || a.sameColumn(e, a.plan.keys[k]) {
			return a.groupRef(k, a.plan.keyNames[k], src, a.plan.keys[k].Type()), true, nil
		}
	}
	if c, ok := e.(*sqlparser.ColName); ok && a.p.scope.cols.Index(c.Name.String()) >= 0 {
		name := c.Name.String()
		return nil, true, expr.Errorf(ErrType, "column '%s' is neither grouped nor aggregated; add it to GROUP BY or use it in an aggregate such as MAX(%s)", options.Cut(name), options.Cut(name))
	}
	return nil, false, nil
}

// sameColumn reports whether e names the column that key reads: GROUP BY
// o.customer_id and SELECT customer_id are the same column.
func (a *aggPlanner) sameColumn(e sqlparser.Expr, key expr.Node) bool {
	c, ok := e.(*sqlparser.ColName)
	kr, kok := key.(*expr.ColRef)
	if ok && kok && len(a.p.scope.sides) > 0 {
		// A join's sides may share a name: GROUP BY o.id and SELECT c.id
		// are two columns.
		k, _, found, err := a.p.sideColumn(c)
		return found && err == nil && k == kr.Index
	}
	return ok && kok && strings.EqualFold(c.Name.String(), kr.Column.Name) &&
		(c.Qualifier.Name.IsEmpty() || a.p.isQualifier(c.Qualifier.Name.String()))
}

// groupRef is a reference to column k of the group batch. Its column name
// is what the select list calls it unless aliased: the grouped column's
// name, or none (EXPR$n) for an aggregate.
func (a *aggPlanner) groupRef(k int, name, src string, t *types.DataType) expr.Node {
	return expr.NewColRef(k, types.Column{Name: name, Type: t}, src)
}

func (a *aggPlanner) call(e sqlparser.Expr, src string) (expr.Node, error) {
	f, ok := e.(*sqlparser.FuncExpr)
	name := "GROUP_CONCAT"
	if ok {
		name = strings.ToUpper(f.Name.String())
	}
	switch a.phase {
	case phaseWhere:
		return nil, expr.Errorf(ErrUnsupported, "aggregate function %s is not allowed in WHERE, which filters records before they are grouped; filter groups with HAVING (%s)", name, src)
	case phaseKey:
		return nil, expr.Errorf(ErrUnsupported, "aggregate function %s is not allowed in GROUP BY (%s)", name, src)
	case phaseArg:
		return nil, expr.Errorf(ErrUnsupported, "aggregate calls cannot be nested: %s inside %s", src, a.in)
	}
	if !ok || !expr.IsAggregate(name) {
		return nil, expr.Errorf(ErrUnsupported, "aggregate function %s is not supported; kshare has %s", name, expr.AggregateNames)
	}
	for k, c := range a.plan.calls {
		if strings.EqualFold(c.src, src) {
			return a.groupRef(len(a.plan.keys)+k, "", src, c.t), nil
		}
	}
	c, err := a.planCall(f, strings.ToLower(name), src)
	if err != nil {
		return nil, err
	}
	a.plan.calls = append(a.plan.calls, c)
	return a.groupRef(len(a.plan.keys)+len(a.plan.calls)-1, "", src, c.t), nil
}

func (a *aggPlanner) planCall(f *sqlparser.FuncExpr, fn, src string) (*aggCall, error) {
	c := &aggCall{fn: fn, distinct: f.Distinct, src: src, sep: ","}
	upper := strings.ToUpper(fn)
	cond, exprs := expr.FilterOf(f)
	if cond != nil {
		x, err := a.arg(cond, src)
		if err != nil {
			return nil, err
		}
		x = expr.TypedNull(x, types.BooleanType())
		if x.Type().Kind != types.Boolean {
			return nil, expr.Errorf(ErrType, "FILTER (WHERE ...) needs a BOOLEAN condition, got %s (%s)", expr.TypeName(x.Type()), src)
		}
		c.filter = x
	}
	if len(exprs) == 1 {
		if _, star := exprs[0].(*sqlparser.StarExpr); star {
			if fn != "count" || f.Distinct {
				return nil, expr.Errorf(ErrSyntax, "%s(*) is not a function call; only COUNT(*) takes * (%s)", upper, src)
			}
			c.t = &types.DataType{Kind: types.BigInt, NotNull: true}
			return c, nil
		}
	}
	want := 1
	if fn == "listagg" && len(exprs) == 2 {
		want = 2
	}
	if len(exprs) != want {
		if fn == "listagg" {
			return nil, expr.Errorf(ErrSyntax, "LISTAGG takes a value and an optional separator (%s)", src)
		}
		return nil, expr.Errorf(ErrSyntax, "%s takes one argument (%s)", upper, src)
	}
	args := make([]sqlparser.Expr, want)
	for k, se := range exprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok || !ae.As.IsEmpty() {
			return nil, expr.Errorf(ErrSyntax, "bad argument of %s (%s)", upper, src)
		}
		args[k] = ae.Expr
	}
	x, err := a.arg(args[0], src)
	if err != nil {
		return nil, err
	}
	if x.Type() == nil {
		return nil, expr.Errorf(ErrType, "%s of NULL needs a type; write CAST(NULL AS <type>) (%s)", upper, src)
	}
	c.arg = x
	t := x.Type()
	if c.distinct && !comparable(t) {
		return nil, expr.Errorf(ErrType, "DISTINCT cannot compare %s values (%s); aggregate a column of another type", expr.TypeName(t), src)
	}
	switch fn {
	case "count":
		c.t = &types.DataType{Kind: types.BigInt, NotNull: true}
	case "sum", "avg":
		if !expr.IsNumeric(t) {
			return nil, expr.Errorf(ErrType, "%s needs a numeric argument, got %s (%s)", upper, expr.TypeName(t), x.Text())
		}
		c.t = t.WithNotNull(false)
		if t.Kind == types.Decimal {
			// Flink's: SUM is DECIMAL(38, s), AVG DECIMAL(38, max(6, s)).
			s := t.Scale
			if fn == "avg" {
				s = max(s, 6)
			}
			c.t = types.DecimalType(38, s)
		}
	case "min", "max":
		if !comparable(t) {
			return nil, expr.Errorf(ErrType, "%s cannot order %s values (%s)", upper, expr.TypeName(t), x.Text())
		}
		c.t = t.WithNotNull(false)
	case "listagg":
		if !expr.IsChar(t) {
			return nil, expr.Errorf(ErrType, "LISTAGG needs a string argument, got %s (%s); CAST it to STRING", expr.TypeName(t), x.Text())
		}
		if want == 2 {
			v, ok := args[1].(*sqlparser.SQLVal)
			if !ok || v.Type != sqlparser.StrVal {
				return nil, expr.Errorf(ErrType, "LISTAGG's separator must be a string literal (%s)", src)
			}
			c.sep = string(v.Val)
		}
		c.t = types.StringType()
	}
	return c, nil
}

// arg plans e, an argument or the FILTER condition of the aggregate call
// src: an expression over the input's rows.
func (a *aggPlanner) arg(e sqlparser.Expr, src string) (expr.Node, error) {
	a.phase, a.in = phaseArg, src
	defer func() { a.phase, a.in = phaseGroups, "" }()
	return a.p.Expr(e)
}

// distinctAsGroupBy turns SELECT DISTINCT a, b into GROUP BY a, b, as
// Flink plans it: an updating result whose rows are only ever inserted,
// each the first time its values come.
func distinctAsGroupBy(s *sqlparser.Select) error {
	if s.Distinct == "" {
		return nil
	}
	if len(s.GroupBy) > 0 || s.Having != nil || hasAggCall(s.SelectExprs) {
		return expr.UnsupportedClause("SELECT DISTINCT with GROUP BY or aggregates")
	}
	for _, it := range s.SelectExprs {
		ae, ok := it.(*sqlparser.AliasedExpr)
		if !ok {
			return expr.Errorf(ErrUnsupported, "SELECT DISTINCT * is not supported; list the columns (SELECT DISTINCT a, b FROM ...)")
		}
		s.GroupBy = append(s.GroupBy, ae.Expr)
	}
	s.Distinct = ""
	return nil
}

// comparable reports whether values of t can be compared and ordered by
// the aggregation: the scalar types. ARRAY, MAP and ROW cannot.
func comparable(t *types.DataType) bool {
	_, ok := physOf(t)
	return ok
}

// planAggregate plans the select list, GROUP BY and HAVING of an aggregate
// query into plan.
func (p *planner) planAggregate(plan *Plan, s *sqlparser.Select) error {
	a := p.agg
	ap := &aggPlan{}
	a.plan = ap
	if plan.limit >= 0 {
		return expr.Errorf(ErrUnsupported, "LIMIT on an aggregate query is not supported: its result is updating, so it has no first N rows; use the 'max-rows' setting to stop after N changes")
	}
	a.phase = phaseKey
	for _, ge := range s.GroupBy {
		k, err := p.Expr(ge)
		if err != nil {
			return err
		}
		if k.Type() == nil {
			return expr.Errorf(ErrType, "GROUP BY NULL needs a type; write CAST(NULL AS <type>)")
		}
		if !comparable(k.Type()) {
			return expr.Errorf(ErrType, "GROUP BY cannot compare %s values (%s)", expr.TypeName(k.Type()), k.Text())
		}
		name := ""
		if c, ok := k.(*expr.ColRef); ok {
			name = c.Column.Name
		}
		ap.keys = append(ap.keys, k)
		ap.keyNames = append(ap.keyNames, name)
		a.keySrc = append(a.keySrc, p.TextOf(ge))
	}
	a.phase = phaseGroups
	for _, it := range s.SelectExprs {
		if _, ok := it.(*sqlparser.StarExpr); ok {
			return expr.Errorf(ErrType, "SELECT * cannot be used with GROUP BY or aggregates: list the grouped columns and the aggregates")
		}
	}
	if err := p.selectList(plan, s.SelectExprs); err != nil {
		return err
	}
	if s.Having != nil {
		h, err := p.Expr(s.Having.Expr)
		if err != nil {
			return err
		}
		if h.Type() == nil || h.Type().Kind != types.Boolean {
			return expr.Errorf(ErrType, "HAVING needs a BOOLEAN predicate, got %s (%s)", typeName(h), h.Text())
		}
		ap.having = h
	}
	fs := make([]arrow.Field, 0, len(ap.keys)+len(ap.calls))
	for k, key := range ap.keys {
		fs = append(fs, arrow.Field{Name: fmt.Sprintf("$key%d", k), Type: key.Type().ArrowType(), Nullable: true})
	}
	for k, c := range ap.calls {
		fs = append(fs, arrow.Field{Name: fmt.Sprintf("$agg%d", k), Type: c.t.ArrowType(), Nullable: true})
	}
	ap.groupSchema = arrow.NewSchema(fs, nil)
	plan.agg = ap
	a.phase = phaseWhere
	return nil
}

func typeName(n expr.Node) string {
	if n.Type() == nil {
		return "NULL"
	}
	return expr.TypeName(n.Type())
}
