package query

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Catalog finds tables by name; *table.Catalog is one.
type Catalog interface {
	// Lookup finds a table; an unknown name is an error wrapping
	// table.ErrNoTable.
	Lookup(name string) (*table.Table, error)
	// List returns every table, which an unknown name's error lists.
	List() []*table.Table
}

// Plan is a checked SELECT over one table, ready to Run any number of times.
// A Plan is immutable.
type Plan struct {
	sql string
	tbl *table.Table
	// changelog: the table's rows are changes (table.Bound.Changelog),
	// which the query passes on with their kinds (see Updating).
	changelog bool
	cols      []types.Column
	exprs     []expr.Node
	where     expr.Node
	limit     int64 // -1: none
	schema    *arrow.Schema
	// agg is the aggregation of a query with GROUP BY or aggregate calls,
	// whose exprs are over its group batch; nil otherwise.
	agg *aggPlan
	// inputs are the table columns the expressions read, in table order;
	// the batch they evaluate on has these columns only (inSchema).
	inputs    []int
	inSchema  *arrow.Schema
	allInputs bool
	// computed are the plans of the table's computed columns, evaluated
	// on each source batch to make the batch of all its columns that the
	// expressions read (see extend); nil for a table without.
	computed []computedCol
	// window is the window TVF the query reads (FROM TABLE(TUMBLE(...))),
	// nil for a query over a plain table; see window.go.
	window *windowPlan
	// fullSchema is the schema of all the table's columns, computed ones
	// included; windowSchema has the window's columns after them.
	fullSchema, windowSchema *arrow.Schema
}

// Table is the table the query reads.
func (p *Plan) Table() *table.Table { return p.tbl }

// Columns are the result's columns: their names (aliases, table column
// names, or EXPR$<position> as Flink names an unnamed expression) and Flink
// types.
func (p *Plan) Columns() []types.Column { return p.cols }

// Schema is the Arrow schema of every result batch.
func (p *Plan) Schema() *arrow.Schema { return p.schema }

// Limit is the LIMIT clause's row count, if there is one.
func (p *Plan) Limit() (int64, bool) { return p.limit, p.limit >= 0 }

// Filters reports whether the query has a WHERE clause whose filtered-out
// records are accepted (see Rows): false over a flow.Looker, which
// consumes nothing.
func (p *Plan) Filters() bool {
	if p.where == nil || p.tbl == noTable {
		return false
	}
	_, looks := p.tbl.Source.(flow.Looker)
	return !looks
}

// Updating reports whether the result is updating: a query with GROUP BY
// or aggregate calls, or over a changelog table (Changelog), whose rows
// are changes (Rows.Op) of a result table rather than rows of their own.
// See "Aggregates" in Rows.
func (p *Plan) Updating() bool { return p.agg != nil || p.changelog }

// Changelog reports whether the query reads a changelog table (its format
// is a table.ChangelogFormat, or its connector a table.ChangelogConnector):
// its rows are the table's changes, passed on row by row with their kinds,
// so the query is Updating without an aggregate.
func (p *Plan) Changelog() bool { return p.changelog }

// KeepsGroups reports whether the query is an aggregate whose groups a
// State can keep (Options.State): GROUP BY or aggregates, not over
// windows (see KeepsWindows) nor over a changelog.
func (p *Plan) KeepsGroups() bool { return p.agg != nil && p.window == nil && !p.changelog }

// KeepsWindows reports whether the query is a window aggregation, whose
// open windows and watermark a State can keep (Options.State). With one,
// each window's row comes once and the result is insert-only
// (Rows.InsertOnly); without, the result is updating.
func (p *Plan) KeepsWindows() bool { return p.agg != nil && p.window != nil && !p.changelog }

// UpsertKey are the positions among Columns of an updating query's GROUP
// BY keys, in GROUP BY order: for each key, the first column that selects
// it as it is. ok is false for a query that is not updating, and for one
// that leaves a key out (or selects it only inside an expression), since
// its rows then carry no key by which a destination could replace them.
// An aggregate without GROUP BY has one row and an empty key. Over a
// changelog table (see Updating) the key is the table's PRIMARY KEY, each
// of its columns selected as it is; ok is false without one.
func (p *Plan) UpsertKey() (cols []int, ok bool) {
	if p.changelog {
		return p.changelogKey()
	}
	if p.agg == nil {
		return nil, false
	}
	cols = make([]int, len(p.agg.keys))
	for k := range p.agg.keys {
		cols[k] = -1
		for i, e := range p.exprs {
			// Over the group batch, columns 0..len(keys)-1 are the keys.
			if c, isRef := e.(*expr.ColRef); isRef && c.Index == k {
				cols[k] = i
				break
			}
		}
		if cols[k] < 0 {
			return nil, false
		}
	}
	return cols, true
}

// changelogKey is UpsertKey over a changelog table: where the query selects
// each column of the table's PRIMARY KEY as it is.
func (p *Plan) changelogKey() ([]int, bool) {
	def := p.tbl.Bound.Def
	if def.PrimaryKey == nil {
		return nil, false
	}
	all := def.Columns()
	var cols []int
	for _, name := range def.PrimaryKey.Columns {
		k := slices.IndexFunc(all, func(c types.Column) bool { return strings.EqualFold(c.Name, name) })
		in := slices.Index(p.inputs, k) // its place in the batch exprs read
		at := -1
		for i, e := range p.exprs {
			if c, isRef := e.(*expr.ColRef); isRef && in >= 0 && c.Index == in {
				at = i
				break
			}
		}
		if at < 0 {
			return nil, false
		}
		cols = append(cols, at)
	}
	return cols, true
}

// OpColumn is the column a destination of an updating query's rows
// writes first: each row's kind of change, "+I", "-U", "+U" or "-D".
var OpColumn = types.Column{Name: "op", Type: &types.DataType{Kind: types.Varchar, Length: 2, NotNull: true}}

// OutputColumns are the columns a destination of the result writes:
// Columns, after OpColumn when the query is updating.
func (p *Plan) OutputColumns() []types.Column {
	if !p.Updating() {
		return p.cols
	}
	return append([]types.Column{OpColumn}, p.cols...)
}

// OutputSchema is the Arrow schema of OutputColumns; see Rows.OutputBatch.
func (p *Plan) OutputSchema() *arrow.Schema {
	if !p.Updating() {
		return p.schema
	}
	fs := append([]arrow.Field{{Name: OpColumn.Name, Type: arrow.BinaryTypes.String}}, p.schema.Fields()...)
	return arrow.NewSchema(fs, nil)
}

// SQL is the statement as given.
func (p *Plan) SQL() string { return p.sql }

// Prepare parses and checks one SELECT statement against the catalog. It
// performs no I/O. The error, if any, is an *Error whose Kind says what went
// wrong, or the catalog's error for an unknown table.
//
// The statement has the expr.SelectShape
//
//	SELECT * | <expr> [AS <alias>], ... FROM <table> [WHERE <predicate>]
//	    [GROUP BY <expr>, ...] [HAVING <predicate>] [LIMIT <n>]
//
// Names are matched ignoring case; quote them with backticks (`offset`). See
// the package documentation for the expressions and types.
func Prepare(sql string, cat Catalog) (*Plan, error) {
	rw, stmt, err := parseStatement(sql)
	if err != nil {
		return nil, err
	}
	switch s := stmt.(type) {
	case *sqlparser.Select:
		return planSelect(rw, s, cat)
	case *sqlparser.Union:
		return nil, expr.UnsupportedClause(strings.ToUpper(s.Type))
	case *sqlparser.ParenSelect:
		return nil, expr.UnsupportedClause("a parenthesized SELECT")
	}
	return nil, notSelect(rw)
}

// parseStatement reads one statement through the front end: the rewrite
// of Flink's syntax, the checks of what the parser would misread, and the
// parser.
func parseStatement(sql string) (*rewritten, sqlparser.Statement, error) {
	rw, err := rewrite(sql)
	if err != nil {
		return nil, nil, err
	}
	if err := checkStatement(rw); err != nil {
		return nil, nil, err
	}
	if err := checkNesting(rw); err != nil {
		return nil, nil, err
	}
	stmt, err := sqlparser.Parse(rw.sql)
	if err != nil {
		return nil, nil, parseError(rw, err)
	}
	if err := rw.markUnknowns(stmt); err != nil {
		return nil, nil, err
	}
	return rw, stmt, nil
}

// scope resolves names against the one table of the query.
type scope struct {
	tbl        *table.Table
	qualifiers []string // the table's name and its alias
	// cols are all the table's columns, computed ones included, in the
	// order declared.
	cols *types.Schema
	// sides are the tables of a join, whose columns cols holds one after
	// the other (see join.go); nil for a query of one table.
	sides []*side
}

type planner struct {
	// The expressions of the statement are the compiler's; the planner is
	// their Scope (Column, Aggregate).
	*expr.Compiler
	rw    *rewritten
	scope scope
	refs  []*expr.ColRef // every column reference made, for narrowing
	agg   *aggPlanner
}

// newPlanner is a planner of rw's expressions over scope s.
func newPlanner(rw *rewritten, s scope) *planner {
	p := &planner{rw: rw, scope: s}
	p.agg = &aggPlanner{p: p}
	p.Compiler = expr.NewCompiler(&rw.Source, p)
	return p
}

// Column plans a reference to a column, or to a ROW column's field.
func (p *planner) Column(c *sqlparser.ColName, src string) (expr.Node, error) {
	if n, ok, err := p.rowField(c, src); ok || err != nil {
		return n, err
	}
	return p.column(c)
}

// Aggregate plans an aggregate call or a grouped expression (aggplan.go).
func (p *planner) Aggregate(e sqlparser.Expr, src string) (expr.Node, bool, error) {
	if p.agg == nil {
		return nil, false, nil
	}
	return p.agg.expr(e, src)
}

func (p *planner) ref(k int, c types.Column, name string) *expr.ColRef {
	r := expr.NewColRef(k, c, name)
	p.refs = append(p.refs, r)
	return r
}

// narrow makes the plan read only the columns its expressions use: the
// batch it evaluates on holds those, in table order, and each reference is
// renumbered into it. Filtering then copies no column nobody reads.
func (p *planner) narrow(plan *Plan) {
	used := map[int]bool{}
	for _, r := range p.refs {
		used[r.Index] = true
	}
	cols := p.scope.cols.Columns
	at := map[int]int{}
	var fs []arrow.Field
	for k, c := range cols {
		if used[k] {
			at[k] = len(plan.inputs)
			plan.inputs = append(plan.inputs, k)
			fs = append(fs, arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable()})
		}
	}
	for _, r := range p.refs {
		r.Index = at[r.Index]
	}
	plan.inSchema = arrow.NewSchema(fs, nil)
	plan.allInputs = len(plan.inputs) == len(cols)
}

func planSelect(rw *rewritten, s *sqlparser.Select, cat Catalog) (*Plan, error) {
	if err := distinctAsGroupBy(s); err != nil {
		return nil, err
	}
	switch {
	case s.Hints != "":
		return nil, expr.UnsupportedClause(strings.ToUpper(strings.TrimSpace(s.Hints)))
	case len(s.OrderBy) > 0:
		return nil, expr.UnsupportedClause("ORDER BY", "a share group hands out records in no particular order")
	case s.Lock != "":
		return nil, expr.UnsupportedClause(strings.ToUpper(strings.TrimSpace(s.Lock)))
	}
	if len(s.From) > 1 {
		return planCommaJoin(rw, s, cat)
	}
	if noFrom(rw, s) {
		return planNoFrom(rw, s)
	}
	var name, alias string
	switch te := s.From[0].(type) {
	case *sqlparser.AliasedTableExpr:
		switch e := te.Expr.(type) {
		case sqlparser.TableName:
			if !e.Qualifier.IsEmpty() {
				return nil, expr.Errorf(ErrUnsupported, "qualified table name %s.%s is not supported; name the table alone", e.Qualifier.String(), e.Name.String())
			}
			name = e.Name.String()
		case *sqlparser.Subquery:
			return nil, expr.UnsupportedClause("a subquery in FROM")
		default:
			return nil, expr.UnsupportedClause("this FROM clause")
		}
		if len(te.Partitions) > 0 {
			return nil, expr.UnsupportedClause("PARTITION (...) in FROM")
		}
		if te.Hints != nil {
			return nil, expr.UnsupportedClause("USE, FORCE or IGNORE INDEX")
		}
		alias = te.As.String()
	case *sqlparser.JoinTableExpr:
		return planJoin(rw, s, te, cat)
	default:
		return nil, expr.UnsupportedClause("a parenthesized FROM clause")
	}
	if rw.fullJoin {
		return nil, expr.UnsupportedClause("FULL JOIN here", "a FULL JOIN joins two tables: "+joinExample)
	}
	if rw.asOf != nil {
		return nil, expr.Errorf(ErrUnsupported, "FOR SYSTEM_TIME AS OF belongs to a lookup join: FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id")
	}
	tbl, err := cat.Lookup(name)
	if err != nil {
		return nil, unknownTable(cat, err)
	}
	qualifiers := []string{name}
	if alias != "" {
		qualifiers = []string{alias}
	}
	return planTable(rw, s, tbl, qualifiers)
}

// planTable plans s over tbl, whose name (or alias) is in qualifiers.
func planTable(rw *rewritten, s *sqlparser.Select, tbl *table.Table, qualifiers []string) (*Plan, error) {
	return planTableIn(rw, s, tbl, qualifiers, nil)
}

// planTableIn plans s over tbl, which is the join of sides when there are
// any.
func planTableIn(rw *rewritten, s *sqlparser.Select, tbl *table.Table, qualifiers []string, sides []*side) (*Plan, error) {
	cols := &types.Schema{Columns: tbl.Bound.Def.Columns()}
	p := newPlanner(rw, scope{tbl: tbl, qualifiers: qualifiers, cols: cols, sides: sides})
	plan := &Plan{sql: rw.Src, tbl: tbl, limit: -1}
	if what, ok := tbl.Bound.Changelog(); ok {
		// Its rows are changes: the query passes them on, each with its
		// kind, row by row. What keeps state across rows cannot take
		// them yet: its accumulators and windows fold inserts only.
		plan.changelog = true
		op := ""
		switch {
		case rw.window != nil:
			op = "a window function"
		case len(s.GroupBy) > 0 || s.Having != nil || hasAggCall(s.SelectExprs):
			op = "GROUP BY and aggregates"
		}
		if op != "" {
			return nil, expr.Errorf(ErrUnsupported, "table '%s' is a changelog (%s: its rows are inserts, updates and deletes), and %s take inserts only; select its rows as they are (with WHERE and expressions), or INSERT them into a table that takes changes and query that",
				tbl.Name(), what, op)
		}
	}
	computed, err := planComputedColumns(tbl.Bound.Def)
	if err != nil {
		return nil, err
	}
	plan.computed = computed
	plan.fullSchema = cols.Arrow()
	if rw.window != nil && tbl != noTable {
		wp, wcols, err := windowColumns(rw.window, tbl.Bound.Def)
		if err != nil {
			return nil, err
		}
		plan.window = wp
		cols.Columns = append(slices.Clone(cols.Columns), wcols...)
		plan.windowSchema = cols.Arrow()
	}
	if s.Limit != nil {
		if s.Limit.Offset != nil {
			return nil, expr.UnsupportedClause("OFFSET")
		}
		v, ok := s.Limit.Rowcount.(*sqlparser.SQLVal)
		if !ok || v.Type != sqlparser.IntVal {
			return nil, expr.Errorf(ErrSyntax, "LIMIT needs a whole number of rows, got %s", p.TextOf(s.Limit.Rowcount))
		}
		n, err := strconv.ParseInt(string(v.Val), 10, 64)
		if err != nil {
			return nil, expr.Errorf(ErrSyntax, "LIMIT %s is out of range", v.Val)
		}
		plan.limit = n
	}
	if err := p.legacyWindowError(s); err != nil {
		return nil, err
	}
	var having sqlparser.SQLNode
	if s.Having != nil {
		having = s.Having.Expr
	}
	if len(s.GroupBy) > 0 || having != nil || hasAggCall(s.SelectExprs, having) {
		if err := p.planAggregate(plan, s); err != nil {
			return nil, err
		}
	} else if err := p.selectList(plan, s.SelectExprs); err != nil {
		return nil, err
	}
	if plan.window != nil {
		if err := checkWindowKeys(plan, len(cols.Columns)-3); err != nil {
			return nil, err
		}
	}
	if s.Where != nil && s.Where.Expr != nil {
		w, err := p.Expr(s.Where.Expr)
		if err != nil {
			return nil, err
		}
		if w.Type() == nil {
			w = expr.TypedNull(w, types.BooleanType())
		}
		if w.Type().Kind != types.Boolean {
			return nil, expr.Errorf(ErrType, "WHERE needs a BOOLEAN predicate, got %s (%s)", expr.TypeName(w.Type()), w.Text())
		}
		plan.where = w
	}
	p.narrow(plan)
	fs := make([]arrow.Field, len(plan.cols))
	for i, c := range plan.cols {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable()}
	}
	plan.schema = arrow.NewSchema(fs, nil)
	return plan, nil
}

// unknownTable adds the known tables to the catalog's error, keeping its
// kind.
func unknownTable(cat Catalog, err error) error {
	if !errors.Is(err, table.ErrNoTable) {
		return err
	}
	var names []string
	for _, t := range cat.List() {
		names = append(names, t.Name())
	}
	if len(names) == 0 {
		return fmt.Errorf("%w; no table is defined yet: CREATE TABLE first", err)
	}
	return fmt.Errorf("%w; known tables: %s", err, strings.Join(names, ", "))
}

func (p *planner) selectList(plan *Plan, items sqlparser.SelectExprs) error {
	cols := p.scope.cols.Columns
	for i, it := range items {
		switch it := it.(type) {
		case *sqlparser.StarExpr:
			q := it.TableName.Name.String()
			if q != "" && !p.isQualifier(q) {
				return p.unknownQualifier(q, q+".*")
			}
			if sd := p.sideNamed(q); sd != nil {
				for i, k := range sd.at {
					c := cols[k]
					plan.exprs = append(plan.exprs, p.ref(k, c, q+"."+sd.names[i]))
					plan.cols = append(plan.cols, types.Column{Name: sd.names[i], Type: c.Type, Comment: c.Comment})
				}
				continue
			}
			for k, c := range cols {
				plan.exprs = append(plan.exprs, p.ref(k, c, c.Name))
				plan.cols = append(plan.cols, types.Column{Name: c.Name, Type: c.Type, Comment: c.Comment})
			}
		case *sqlparser.AliasedExpr:
			n, err := p.Expr(it.Expr)
			if err != nil {
				return err
			}
			if n.Type() == nil {
				return expr.Errorf(ErrType, "NULL needs a type here; write CAST(NULL AS <type>)")
			}
			name := it.As.String()
			if name == "" {
				name = fmt.Sprintf("EXPR$%d", i)
				if c, ok := n.(*expr.ColRef); ok && c.Column.Name != "" {
					name = c.Column.Name
				}
			}
			plan.exprs = append(plan.exprs, n)
			plan.cols = append(plan.cols, types.Column{Name: name, Type: n.Type()})
		default:
			return expr.UnsupportedExpr(p.TextOf(it))
		}
	}
	// Names are made unique as Flink does (quantity, quantity0, ...), so
	// that the result can be written where names are keys (JSON, Parquet).
	seen := map[string]bool{}
	for i := range plan.cols {
		base := plan.cols[i].Name
		n := base
		for k := 0; seen[strings.ToLower(n)]; k++ {
			n = fmt.Sprintf("%s%d", base, k)
		}
		seen[strings.ToLower(n)] = true
		plan.cols[i].Name = n
	}
	return nil
}

func (p *planner) isQualifier(q string) bool {
	for _, s := range p.scope.qualifiers {
		if strings.EqualFold(s, q) {
			return true
		}
	}
	return false
}

func (p *planner) unknownQualifier(q, in string) error {
	return expr.Errorf(ErrUnknownColumn, "unknown table '%s' in %s; the query reads '%s'", options.Cut(q), in, options.Cut(p.scope.qualifiers[0]))
}

// column resolves a column name.
func (p *planner) column(c *sqlparser.ColName) (expr.Node, error) {
	name := c.Name.String()
	if p.scope.tbl == noTable {
		return nil, expr.Errorf(ErrUnknownColumn, "unknown column '%s': a SELECT without FROM reads no table", options.Cut(p.TextOf(c)))
	}
	if q := c.Qualifier.Name.String(); q != "" {
		if !c.Qualifier.Qualifier.IsEmpty() || !p.isQualifier(q) {
			return nil, p.unknownQualifier(sqlparser.String(c.Qualifier), p.TextOf(c))
		}
	}
	if k, col, ok, err := p.sideColumn(c); ok || err != nil {
		if err != nil {
			return nil, err
		}
		return p.ref(k, col, p.TextOf(c)), nil
	}
	s := p.scope.cols
	if k := s.Index(name); k >= 0 {
		return p.ref(k, s.Columns[k], p.TextOf(c)), nil
	}
	names := make([]string, len(s.Columns))
	for k, col := range s.Columns {
		names[k] = col.Name
	}
	msg := fmt.Sprintf("unknown column '%s' in table '%s'", options.Cut(name), options.Cut(p.scope.tbl.Name()))
	if best := expr.Suggest(name, names); best != "" {
		msg += fmt.Sprintf(" (did you mean '%s'?)", best)
	} else {
		msg += fmt.Sprintf(" (columns: %s)", strings.Join(names, ", "))
	}
	return nil, &Error{Kind: ErrUnknownColumn, Msg: msg}
}

// rowField plans r.field and r.a.b when r names a ROW column (and not the
// table); ok is false when the name is not one.
func (p *planner) rowField(c *sqlparser.ColName, src string) (expr.Node, bool, error) {
	if p.scope.tbl == noTable || c.Qualifier.Name.IsEmpty() {
		return nil, false, nil
	}
	col, fields := c.Qualifier.Name.String(), []string{c.Name.String()}
	if !c.Qualifier.Qualifier.IsEmpty() {
		col, fields = c.Qualifier.Qualifier.String(), []string{c.Qualifier.Name.String(), c.Name.String()}
	} else if p.isQualifier(col) {
		return nil, false, nil
	}
	s := p.scope.cols
	k := s.Index(col)
	if k < 0 || s.Columns[k].Type.Kind != types.Row {
		return nil, false, nil
	}
	n, err := expr.FieldOf(p.ref(k, s.Columns[k], col), fields, src)
	return n, true, err
}
