package query

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/lookup"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file plans a lookup join, as Flink SQL writes one:
//
//	FROM orders AS o [LEFT] JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c
//	  ON o.customer_id = c.id [AND ...]
//
// The stream's table (orders) is read through a lookup.Source that appends
// the looked-up table's columns to each row, so the rest of the plan reads
// one table whose columns come from two sides: o.x and c.y resolve against
// their side (scope.sides), a name both sides have must be qualified.

// systemTime is the FOR SYSTEM_TIME AS OF the rewrite took out.
type systemTime struct {
	at        int    // where FOR is in the source
	table     string // the table it follows
	qualifier string // of the time attribute, "" if unqualified
	column    string
}

// isSystemTime reports whether toks[i:] starts FOR SYSTEM_TIME AS OF.
func isSystemTime(toks []parse.Token, i int) bool {
	return i+3 < len(toks) && toks[i].IsWord("for") && toks[i+1].IsWord("system_time") && toks[i+2].IsWord("as") && toks[i+3].IsWord("of")
}

// systemTimeClause takes FOR SYSTEM_TIME AS OF [q.]column out of the
// statement (sqlparser has no such clause) and keeps it for the planner;
// it returns the index of its last token.
func (rw *rewritten) systemTimeClause(toks []parse.Token, i int) (int, error) {
	if rw.asOf != nil {
		return 0, syntaxAt(rw.Src, toks[i].Start, "a query joins one looked-up table: FOR SYSTEM_TIME AS OF is written twice")
	}
	if i == 0 || !isName(toks[i-1]) {
		return 0, syntaxAt(rw.Src, toks[i].Start, "FOR SYSTEM_TIME AS OF follows the name of the looked-up table: JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c")
	}
	st := &systemTime{at: toks[i].Start, table: toks[i-1].Val}
	j := i + 4
	switch {
	case j+2 < len(toks) && isName(toks[j]) && toks[j+1].IsSymbol(".") && isName(toks[j+2]):
		st.qualifier, st.column = toks[j].Val, toks[j+2].Val
		j += 2
	case j < len(toks) && isName(toks[j]):
		st.column = toks[j].Val
	default:
		return 0, syntaxAt(rw.Src, toks[i].Start, "FOR SYSTEM_TIME AS OF takes the stream's time attribute, a column AS PROCTIME(): FOR SYSTEM_TIME AS OF o.proc_time")
	}
	rw.asOf = st
	rw.edits = append(rw.edits, edit{toks[i].Start, toks[j].End, ""})
	return j, nil
}

// side is one table of a join in the planner's scope: its qualifier and
// where each of its columns is among the scope's, by lower-case name.
type side struct {
	table     string
	qualifier string
	names     []string // its columns' names, in its order
	at        []int    // each one's position in the scope's columns
}

func (s *side) index(name string) int {
	for i, n := range s.names {
		if strings.EqualFold(n, name) {
			return s.at[i]
		}
	}
	return -1
}

// planJoin plans a SELECT whose FROM is a join: a lookup join (with FOR
// SYSTEM_TIME AS OF), else a join of two streams (interval.go).
func planJoin(rw *rewritten, s *sqlparser.Select, je *sqlparser.JoinTableExpr, cat Catalog) (*Plan, error) {
	if rw.asOf == nil {
		return planIntervalJoin(rw, s, je, cat)
	}
	example := "FROM orders AS o [LEFT] JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id"
	if rw.fullJoin {
		return nil, expr.UnsupportedClause("FULL JOIN", "a lookup join is JOIN or LEFT JOIN: "+example)
	}
	var outer bool
	switch je.Join {
	case sqlparser.JoinStr:
	case sqlparser.LeftJoinStr:
		outer = true
	case sqlparser.RightJoinStr:
		return nil, expr.UnsupportedClause("RIGHT JOIN", "a lookup join looks rows of the right table up for each row of the left: write it as "+example)
	default:
		return nil, expr.UnsupportedClause(strings.ToUpper(je.Join), "a lookup join is JOIN or LEFT JOIN: "+example)
	}
	left, right, la, ra, err := joinTables(je, cat, "c")
	if err != nil {
		return nil, err
	}
	if rtn := right.Name(); !strings.EqualFold(rw.asOf.table, rtn) {
		return nil, expr.Errorf(ErrUnsupported, "FOR SYSTEM_TIME AS OF follows table '%s', and the looked-up table is the JOIN's right side ('%s'): %s",
			options.Cut(rw.asOf.table), options.Cut(rtn), example)
	}
	if left.Source == nil {
		return nil, expr.Errorf(ErrUnsupported, "table '%s' cannot be read", options.Cut(left.Name()))
	}
	if what, ok := left.Bound.Changelog(); ok {
		return nil, expr.Errorf(ErrUnsupported, "table '%s' is a changelog (%s); a lookup join takes a table of inserts on its left", options.Cut(left.Name()), what)
	}
	look, ok := right.Source.(flow.LookupSource)
	if !ok {
		conn := "?"
		if right.Bound.Connector != nil {
			conn = right.Bound.Connector.Name()
		}
		return nil, expr.Errorf(ErrUnsupported, "table '%s' (connector '%s') cannot be looked up by key; the right side of a lookup join is a 'jdbc' table", options.Cut(right.Name()), conn)
	}
	asOf, asOfCol, err := checkAsOf(rw.asOf, left, la, right)
	if err != nil {
		return nil, err
	}
	ld := left.Bound.Def
	rcols, _ := right.Bound.Def.Schema.Physical()
	d, ls, rs := joinedDef(left, right, la, ra, rcols, false, outer)
	sides := []*side{ls, rs}
	keys, rkeys, rest, err := joinKeys(rw, je.Condition, sides, ld, rcols, outer)
	if err != nil {
		return nil, err
	}
	var residual func(memory.Allocator, arrow.RecordBatch) ([]bool, error)
	switch {
	case rest != nil && outer:
		// A LEFT JOIN's other conditions say which looked-up rows match:
		// a row none of whose matches meets them keeps its NULLs.
		if residual, err = planResidual(rw, rest, d, sides, la, ra); err != nil {
			return nil, err
		}
	case rest != nil:
		// An inner join's other conditions filter the joined rows, as
		// WHERE does.
		if s.Where == nil || s.Where.Expr == nil {
			s.Where = &sqlparser.Where{Type: sqlparser.WhereStr, Expr: rest}
		} else {
			s.Where.Expr = &sqlparser.AndExpr{Left: &sqlparser.ParenExpr{Expr: rest}, Right: &sqlparser.ParenExpr{Expr: s.Where.Expr}}
		}
	}
	b := *left.Bound
	b.Def = d
	src := &lookup.Source{Table: left.Name(), Lookup: right.Name(), Input: left.Source, Right: look,
		RightColumns: rcols, Keys: keys, RightKeys: rkeys, Outer: outer, AsOf: asOf, AsOfColumn: asOfCol, Residual: residual}
	joined := &table.Table{Bound: &b, Source: src.Reader()}
	return planTableIn(rw, s, joined, []string{la, ra}, sides)
}

// KeepsLookups reports whether the query looks rows up in a table it keeps
// itself (a temporal join following a topic, flow.RowKeeper): with a
// State that has a Keep (a job's state directory), the rows are kept there
// rather than in memory.
func (p *Plan) KeepsLookups() bool {
	j, ok := p.tbl.Source.(lookup.Joined)
	if !ok {
		return false
	}
	_, keeps := j.Join().Right.(flow.RowKeeper)
	return keeps
}

// joinedDef is the table a join reads: the left's columns (computed ones
// included), then rcols, the right's, renamed where a name is taken so
// that every column of the scope has its own (Flink's SELECT * does the
// same: id, id0); and the scope's two sides. nullLeft and nullRight make a
// side's columns nullable (the NULLs of an outer join).
func joinedDef(left, right *table.Table, la, ra string, rcols []types.Column, nullLeft, nullRight bool) (*table.Definition, *side, *side) {
	ld := left.Bound.Def
	d := ld.Clone()
	if nullLeft {
		for i := range d.Schema.Columns {
			d.Schema.Columns[i].Type = d.Schema.Columns[i].Type.WithNotNull(false)
		}
		for i := range d.Computed {
			d.Computed[i].Type = d.Computed[i].Type.WithNotNull(false)
		}
	}
	taken := map[string]bool{}
	for _, c := range ld.Columns() {
		taken[strings.ToLower(c.Name)] = true
	}
	ls := &side{table: left.Name(), qualifier: la}
	rs := &side{table: right.Name(), qualifier: ra}
	for _, c := range ld.Columns() {
		ls.names = append(ls.names, c.Name)
	}
	var internal []string
	for _, c := range rcols {
		n := c.Name
		for k := 0; taken[strings.ToLower(n)]; k++ {
			n = fmt.Sprintf("%s%d", c.Name, k)
		}
		taken[strings.ToLower(n)] = true
		internal = append(internal, n)
		rs.names = append(rs.names, c.Name)
		rc := c
		rc.Name = n
		if nullRight {
			rc.Type = rc.Type.WithNotNull(false)
		}
		d.Schema.Columns = append(d.Schema.Columns, rc)
	}
	all := d.Columns()
	for _, n := range ls.names {
		ls.at = append(ls.at, slices.IndexFunc(all, func(c types.Column) bool { return c.Name == n }))
	}
	for _, n := range internal {
		rs.at = append(rs.at, slices.IndexFunc(all, func(c types.Column) bool { return c.Name == n }))
	}
	return d, ls, rs
}

// planResidual plans a LEFT JOIN's ON conditions other than its keys over
// the joined rows as lookup.Source makes them (the left table's source
// columns, then the looked-up table's): a looked-up row matches only if
// they are TRUE for it. They read no computed column, which is not in
// those rows yet.
func planResidual(rw *rewritten, cond sqlparser.Expr, d *table.Definition, sides []*side, la, ra string) (func(memory.Allocator, arrow.RecordBatch) ([]bool, error), error) {
	tbl := &table.Table{Bound: &table.Bound{Def: d}}
	rp := newPlanner(rw, scope{tbl: tbl, qualifiers: []string{la, ra}, cols: &types.Schema{Columns: d.Columns()}, sides: sides})
	n, err := rp.Expr(cond)
	if err != nil {
		return nil, err
	}
	if n.Type() == nil {
		n = expr.TypedNull(n, types.BooleanType())
	}
	if n.Type().Kind != types.Boolean {
		return nil, expr.Errorf(ErrType, "ON needs BOOLEAN conditions, got %s (%s)", expr.TypeName(n.Type()), n.Text())
	}
	all := rp.scope.cols.Columns
	for _, r := range rp.refs {
		name := all[r.Index].Name
		k := slices.IndexFunc(d.Schema.Columns, func(c types.Column) bool { return c.Name == name })
		if k < 0 {
			return nil, expr.Errorf(ErrUnsupported, "an outer join's ON reads '%s', a computed column; it reads the columns the tables read (put the condition in WHERE to filter the joined rows instead)",
				options.Cut(r.Text()))
		}
		r.Index = k
	}
	return func(mem memory.Allocator, rec arrow.RecordBatch) ([]bool, error) {
		ec := expr.NewEvalCtx(mem)
		a, err := n.Eval(ec, rec)
		if err != nil {
			return nil, err
		}
		defer a.Release()
		out := make([]bool, a.Len())
		if c, ok := a.(*array.Boolean); ok {
			for i := range out {
				out[i] = c.IsValid(i) && c.Value(i)
			}
		}
		return out, nil
	}, nil
}

// joinTables finds the tables of a join's two sides and their
// qualifiers (an alias, else the name), which must differ; alias is the
// one a message suggests for the right side.
func joinTables(je *sqlparser.JoinTableExpr, cat Catalog, alias string) (left, right *table.Table, la, ra string, err error) {
	lt, la, err := joinSide(je.LeftExpr)
	if err != nil {
		return nil, nil, "", "", err
	}
	rtn, ra, err := joinSide(je.RightExpr)
	if err != nil {
		return nil, nil, "", "", err
	}
	if left, err = cat.Lookup(lt); err != nil {
		return nil, nil, "", "", unknownTable(cat, err)
	}
	if right, err = cat.Lookup(rtn); err != nil {
		return nil, nil, "", "", unknownTable(cat, err)
	}
	if la == "" {
		la = left.Name()
	}
	if ra == "" {
		ra = right.Name()
	}
	if strings.EqualFold(la, ra) {
		return nil, nil, "", "", expr.Errorf(ErrUnsupported, "both sides of the JOIN are called '%s'; give one an alias (JOIN %s AS %s)", options.Cut(la), types.QuoteIdent(rtn), alias)
	}
	return left, right, la, ra, nil
}

// joinSide is the table and alias of one side of a join.
func joinSide(te sqlparser.TableExpr) (name, alias string, err error) {
	at, ok := te.(*sqlparser.AliasedTableExpr)
	if !ok {
		return "", "", expr.UnsupportedClause("a join of more than two tables")
	}
	tn, ok := at.Expr.(sqlparser.TableName)
	if !ok {
		return "", "", expr.UnsupportedClause("a subquery in a JOIN")
	}
	if !tn.Qualifier.IsEmpty() {
		return "", "", expr.Errorf(ErrUnsupported, "qualified table name %s.%s is not supported; name the table alone", tn.Qualifier.String(), tn.Name.String())
	}
	return tn.Name.String(), at.As.String(), nil
}

// checkAsOf checks what FOR SYSTEM_TIME AS OF names: the left table's
// processing time (a lookup of the row as it is now), or its event time
// (its WATERMARK column: the version valid at the row's time, which a
// versioned right table keeps). For event time it returns the column's
// position among the left table's source columns.
func checkAsOf(st *systemTime, left *table.Table, alias string, right *table.Table) (eventTime bool, col int, err error) {
	if st.qualifier != "" && !strings.EqualFold(st.qualifier, alias) && !strings.EqualFold(st.qualifier, left.Name()) {
		return false, 0, expr.Errorf(ErrUnknownColumn, "FOR SYSTEM_TIME AS OF %s.%s: '%s' is not the JOIN's left table ('%s'); name its time attribute: %s.proc_time",
			options.Cut(st.qualifier), options.Cut(st.column), options.Cut(st.qualifier), options.Cut(alias), alias)
	}
	d := left.Bound.Def
	k := d.Index(st.column)
	if k < 0 {
		return false, 0, expr.Errorf(ErrUnknownColumn, "FOR SYSTEM_TIME AS OF: table '%s' has no column '%s'", options.Cut(left.Name()), options.Cut(st.column))
	}
	c := d.Columns()[k]
	if c.IsProctime() {
		return false, 0, nil
	}
	if d.Watermark == nil || !strings.EqualFold(d.Watermark.Column, c.Name) {
		return false, 0, expr.Errorf(ErrType, "FOR SYSTEM_TIME AS OF %s: the column is not a time attribute; add a column `proc_time AS PROCTIME()` to table '%s' and write FOR SYSTEM_TIME AS OF %s.proc_time (or name its WATERMARK column, for the version valid at each row's time)",
			options.Cut(c.Name), options.Cut(left.Name()), alias)
	}
	vs, ok := right.Source.(flow.VersionedSource)
	if !ok || !vs.Versioned() {
		return false, 0, expr.Errorf(ErrUnsupported, "FOR SYSTEM_TIME AS OF %s: an event-time temporal join reads the version of the row valid at '%s', which table '%s' does not keep: "+
			"use an 'upsert-kafka' table (or a 'kafka' table of changes with a PRIMARY KEY) with a WATERMARK, or look the row up as it is when read: "+
			"add a column `proc_time AS PROCTIME()` to table '%s' and write FOR SYSTEM_TIME AS OF %s.proc_time",
			options.Cut(c.Name), options.Cut(c.Name), options.Cut(right.Name()), options.Cut(left.Name()), alias)
	}
	col = slices.IndexFunc(d.Schema.Columns, func(sc types.Column) bool { return strings.EqualFold(sc.Name, c.Name) })
	if col < 0 {
		return false, 0, expr.Errorf(ErrUnsupported, "FOR SYSTEM_TIME AS OF %s: an event-time temporal join reads the time from a column table '%s' reads, and '%s' is computed",
			options.Cut(c.Name), options.Cut(left.Name()), options.Cut(c.Name))
	}
	return true, col, nil
}

// joinKeys reads ON: its equalities of a left and a right column are the
// lookup's keys, in the order written; the rest (rest, nil if none) is a
// filter on the joined rows, which only an inner join can take.
func joinKeys(rw *rewritten, cond sqlparser.JoinCondition, sides []*side, ld *table.Definition, rcols []types.Column, outer bool) (keys, rkeys []int, rest sqlparser.Expr, err error) {
	if len(cond.Using) > 0 {
		return nil, nil, nil, expr.UnsupportedClause("JOIN ... USING", "write ON o.customer_id = c.id")
	}
	if cond.On == nil {
		return nil, nil, nil, expr.Errorf(ErrSyntax, "a lookup join needs ON with an equality of a column of each side: ON o.customer_id = c.id")
	}
	var conj []sqlparser.Expr
	var split func(e sqlparser.Expr)
	split = func(e sqlparser.Expr) {
		switch x := e.(type) {
		case *sqlparser.AndExpr:
			split(x.Left)
			split(x.Right)
		case *sqlparser.ParenExpr:
			if _, ok := x.Expr.(*sqlparser.AndExpr); ok {
				split(x.Expr)
				return
			}
			conj = append(conj, e)
		default:
			conj = append(conj, e)
		}
	}
	split(cond.On)
	src := ld.Schema.Columns
	for _, e := range conj {
		l, r, ok := keyPair(e, sides)
		if !ok {
			if rest == nil {
				rest = e
			} else {
				rest = &sqlparser.AndExpr{Left: rest, Right: e}
			}
			continue
		}
		lname := sides[0].names[l]
		k := slices.IndexFunc(src, func(c types.Column) bool { return strings.EqualFold(c.Name, lname) })
		if k < 0 {
			return nil, nil, nil, expr.Errorf(ErrUnsupported, "join key '%s' is a computed column of table '%s'; a lookup join's keys are columns the table reads", options.Cut(lname), options.Cut(sides[0].table))
		}
		lt, rt := src[k].Type, rcols[r].Type
		if !joinable(lt, rt) {
			return nil, nil, nil, expr.Errorf(ErrType, "join key %s.%s is %s and %s.%s is %s; the keys of a lookup join have one type (integers of any width go together)",
				options.Cut(sides[0].qualifier), options.Cut(lname), expr.TypeName(lt), options.Cut(sides[1].qualifier), options.Cut(rcols[r].Name), expr.TypeName(rt))
		}
		keys = append(keys, k)
		rkeys = append(rkeys, r)
	}
	if len(keys) == 0 {
		return nil, nil, nil, expr.Errorf(ErrUnsupported, "ON needs an equality of a column of '%s' and one of '%s' (ON %s.customer_id = %s.id): the looked-up table is read by key",
			options.Cut(sides[0].qualifier), options.Cut(sides[1].qualifier), sides[0].qualifier, sides[1].qualifier)
	}
	return keys, rkeys, rest, nil
}

// keyPair reports whether e is l = r of a column of each side: l is the
// left column's index among its side's, r the right's.
func keyPair(e sqlparser.Expr, sides []*side) (l, r int, ok bool) {
	c, isCmp := e.(*sqlparser.ComparisonExpr)
	if !isCmp || c.Operator != sqlparser.EqualStr {
		return 0, 0, false
	}
	a, aok := c.Left.(*sqlparser.ColName)
	b, bok := c.Right.(*sqlparser.ColName)
	if !aok || !bok {
		return 0, 0, false
	}
	sa, ia := sideOf(a, sides)
	sb, ib := sideOf(b, sides)
	switch {
	case sa == 0 && sb == 1:
		return ia, ib, true
	case sa == 1 && sb == 0:
		return ib, ia, true
	}
	return 0, 0, false
}

// sideOf finds which side c names (and its index among that side's
// columns); -1 when none or both.
func sideOf(c *sqlparser.ColName, sides []*side) (int, int) {
	q := c.Qualifier.Name.String()
	found, at := -1, -1
	for k, s := range sides {
		if q != "" && !strings.EqualFold(q, s.qualifier) {
			continue
		}
		for i, n := range s.names {
			if strings.EqualFold(n, c.Name.String()) {
				if found >= 0 {
					return -1, -1
				}
				found, at = k, i
			}
		}
	}
	return found, at
}

// joinable reports whether columns of types a and b can be join keys.
func joinable(a, b *types.DataType) bool {
	if a.WithNotNull(false).Equal(b.WithNotNull(false)) {
		return true
	}
	isInt := func(t *types.DataType) bool {
		switch t.Kind {
		case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
			return true
		}
		return false
	}
	return isInt(a) && isInt(b)
}

// sideColumn resolves a column of a join's scope: q.name against side q,
// a bare name against the side that has it (an error if both do). ok is
// false outside a join.
func (p *planner) sideColumn(c *sqlparser.ColName) (k int, col types.Column, ok bool, err error) {
	if len(p.scope.sides) == 0 {
		return 0, types.Column{}, false, nil
	}
	name := c.Name.String()
	q := c.Qualifier.Name.String()
	var hits []*side
	for _, s := range p.scope.sides {
		if q != "" && !strings.EqualFold(q, s.qualifier) {
			continue
		}
		if s.index(name) >= 0 {
			hits = append(hits, s)
		}
	}
	switch len(hits) {
	case 0:
		var all, bare []string
		for _, s := range p.scope.sides {
			if q != "" && strings.EqualFold(q, s.qualifier) {
				return 0, types.Column{}, true, &Error{Kind: ErrUnknownColumn, Msg: fmt.Sprintf("unknown column '%s' of '%s' (table '%s'; its columns: %s)",
					options.Cut(name), options.Cut(s.qualifier), options.Cut(s.table), strings.Join(s.names, ", "))}
			}
			for _, n := range s.names {
				all = append(all, s.qualifier+"."+n)
				bare = append(bare, n)
			}
		}
		if q != "" {
			return 0, types.Column{}, false, nil // not a side: the caller says so
		}
		msg := fmt.Sprintf("unknown column '%s' in the join of '%s' and '%s'", options.Cut(name), options.Cut(p.scope.sides[0].table), options.Cut(p.scope.sides[1].table))
		if best := expr.Suggest(name, bare); best != "" {
			msg += fmt.Sprintf(" (did you mean '%s'?)", all[slices.Index(bare, best)])
		} else {
			msg += fmt.Sprintf(" (columns: %s)", strings.Join(all, ", "))
		}
		return 0, types.Column{}, true, &Error{Kind: ErrUnknownColumn, Msg: msg}
	case 1:
		k = hits[0].index(name)
		col = p.scope.cols.Columns[k]
		col.Name = hits[0].names[slices.Index(hits[0].at, k)]
		return k, col, true, nil
	}
	return 0, types.Column{}, true, &Error{Kind: ErrUnknownColumn, Msg: fmt.Sprintf("column '%s' is ambiguous: both '%s' and '%s' have it; write %s.%s or %s.%s",
		options.Cut(name), options.Cut(hits[0].qualifier), options.Cut(hits[1].qualifier), hits[0].qualifier, name, hits[1].qualifier, name)}
}

// sideNamed is the side of a join that q qualifies; nil for none (or
// outside a join).
func (p *planner) sideNamed(q string) *side {
	for _, s := range p.scope.sides {
		if q != "" && strings.EqualFold(q, s.qualifier) {
			return s
		}
	}
	return nil
}
