package query

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
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
	sql    string
	tbl    *table.Table
	cols   []table.Column
	exprs  []node
	where  node
	limit  int64 // -1: none
	schema *arrow.Schema
	// inputs are the table columns the expressions read, in table order;
	// the batch they evaluate on has these columns only (inSchema).
	inputs    []int
	inSchema  *arrow.Schema
	allInputs bool
}

// Table is the table the query reads.
func (p *Plan) Table() *table.Table { return p.tbl }

// Columns are the result's columns: their names (aliases, table column
// names, or EXPR$<position> as Flink names an unnamed expression) and Flink
// types.
func (p *Plan) Columns() []table.Column { return p.cols }

// Schema is the Arrow schema of every result batch.
func (p *Plan) Schema() *arrow.Schema { return p.schema }

// Limit is the LIMIT clause's row count, if there is one.
func (p *Plan) Limit() (int64, bool) { return p.limit, p.limit >= 0 }

// Filters reports whether the query has a WHERE clause, whose filtered-out
// records are accepted (see Rows).
func (p *Plan) Filters() bool { return p.where != nil && p.tbl != noTable }

// SQL is the statement as given.
func (p *Plan) SQL() string { return p.sql }

// Prepare parses and checks one SELECT statement against the catalog. It
// performs no I/O. The error, if any, is an *Error whose Kind says what went
// wrong, or the catalog's error for an unknown table.
//
// The statement has the shape
//
//	SELECT * | <expr> [AS <alias>], ... FROM <table> [WHERE <predicate>] [LIMIT <n>]
//
// Names are matched ignoring case; quote them with backticks (`offset`). See
// the package documentation for the expressions and types.
func Prepare(sql string, cat Catalog) (*Plan, error) {
	rw, err := rewrite(sql)
	if err != nil {
		return nil, err
	}
	if err := checkStatement(rw); err != nil {
		return nil, err
	}
	if err := checkNesting(rw); err != nil {
		return nil, err
	}
	stmt, err := sqlparser.Parse(rw.sql)
	if err != nil {
		return nil, parseError(rw, err)
	}
	switch s := stmt.(type) {
	case *sqlparser.Select:
		return planSelect(rw, s, cat)
	case *sqlparser.Union:
		return nil, unsupportedClause(strings.ToUpper(s.Type))
	case *sqlparser.ParenSelect:
		return nil, unsupportedClause("a parenthesized SELECT")
	}
	return nil, notSelect(rw)
}

// MaxNesting is how deep parentheses may nest in a SELECT: the parser
// kshare uses stops at 200 levels, which keeps a hostile statement from
// exhausting the stack.
const MaxNesting = 199

// statementWords are first words of statements that belong to Exec.
var statementWords = map[string]bool{
	"CREATE": true, "DROP": true, "ALTER": true, "SHOW": true, "DESCRIBE": true, "DESC": true,
	"SET": true, "RESET": true, "INSERT": true, "UPDATE": true, "DELETE": true, "EXPLAIN": true,
	"USE": true, "TRUNCATE": true, "REPLACE": true,
}

func notSelect(rw *rewritten) error {
	w := "this statement"
	if len(rw.toks) > 0 {
		w = strings.ToUpper(rw.text(rw.toks[0]))
	}
	return errorf(ErrNotSelect, "a query is one SELECT statement, got %s; run DDL, SHOW, DESCRIBE and SET with Exec", w)
}

// checkStatement refuses, with a precise message, what the MySQL grammar
// would misread or reject with a bare syntax error.
func checkStatement(rw *rewritten) error {
	toks := rw.toks
	if len(toks) == 0 {
		return errorf(ErrSyntax, "empty statement; %s", shape)
	}
	first := strings.ToUpper(toks[0].Val)
	switch {
	case toks[0].Kind == parse.Ident && first == "WITH":
		return unsupportedClause("WITH", "common table expressions")
	case toks[0].Kind == parse.Ident && statementWords[first]:
		return notSelect(rw)
	}
	for i, t := range toks {
		if t.IsSymbol(";") {
			if i != len(toks)-1 {
				return errorf(ErrSyntax, "a query is one statement; run the statement after ';' at line %d separately", line(rw.src, toks[i+1].Start))
			}
		}
	}
	return nil
}

// sqlparserPosition is the one fact read from a sqlparser error's text:
// the byte offset where it stopped. Its Tokenizer keeps the offset in an
// exported field, but moves it on to the next statement before Parse
// returns; the rest (the token it stopped at, whether it was the end) comes
// from parse's tokens.
var sqlparserPosition = regexp.MustCompile(` at position (\d+)(?: near '|$)`)

// structural words are keywords whose misuse is a misplaced clause, not a
// name that needs quoting.
var structural = map[string]bool{
	"select": true, "from": true, "where": true, "group": true, "order": true, "by": true, "having": true,
	"limit": true, "as": true, "and": true, "or": true, "not": true, "is": true, "null": true, "in": true,
	"between": true, "like": true, "on": true, "join": true, "union": true, "distinct": true, "case": true,
	"when": true, "then": true, "else": true, "end": true, "escape": true, "true": true, "false": true,
	"cast": true, "convert": true, "exists": true, "all": true, "left": true, "right": true, "inner": true,
	"outer": true, "cross": true, "natural": true, "using": true, "into": true, "values": true, "for": true,
	"interval": true, "asc": true, "desc": true, "with": true, "offset": true, "div": true, "mod": true,
	"regexp": true, "rlike": true, "binary": true, "default": true, "straight_join": true,
}

// parseError explains a sqlparser error in the user's terms: where in their
// text, and the likeliest cause.
func parseError(rw *rewritten, err error) error {
	for i, t := range rw.toks {
		switch {
		case t.IsWord("over") && i > 0 && rw.toks[i-1].IsSymbol(")") && i+1 < len(rw.toks):
			return unsupportedClause("OVER", "window functions")
		case t.IsWord("table") && i+1 < len(rw.toks) && rw.toks[i+1].IsSymbol("("):
			return unsupportedClause("FROM TABLE(...)", "window table functions such as TUMBLE")
		case t.IsWord("match_recognize"):
			return unsupportedClause("MATCH_RECOGNIZE")
		case t.IsWord("fetch") && i > 0:
			return unsupportedClause("FETCH FIRST", "write LIMIT <n>")
		}
	}
	m := sqlparserPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Kind: ErrSyntax, Msg: err.Error() + "; " + shape}
	}
	pos, _ := strconv.Atoi(m[1])
	// sqlparser's position is one past the end of the token it stopped at.
	end := rw.origin(max(pos-1, 0))
	var at *parse.Token
	for i, t := range rw.toks {
		if t.End == end {
			at = &rw.toks[i]
			break
		}
	}
	start := end
	if at != nil {
		start = at.Start
	}
	l, c := parse.Position(rw.src, start)
	// At the end of the text sqlparser has read one past the last token.
	switch {
	case pos > len(strings.TrimRightFunc(rw.sql, unicode.IsSpace)):
		return errorf(ErrSyntax, "syntax error at line %d, column %d: unexpected end of statement; %s", l, c, shape)
	case at == nil: // inside text the rewrite put there
		return errorf(ErrSyntax, "syntax error at line %d, column %d; %s", l, c, shape)
	}
	near := at.Val
	if at.Kind == parse.Ident && isKeyword(near) && !structural[strings.ToLower(near)] {
		return errorf(ErrSyntax, "syntax error at line %d, column %d near '%s': %s is a reserved word; quote it with backticks (`%s`) to use it as a name",
			l, c, near, near, near)
	}
	return errorf(ErrSyntax, "syntax error at line %d, column %d near '%s'; %s", l, c, near, shape)
}

// checkNesting refuses parentheses nested deeper than MaxNesting, where
// sqlparser would stop.
func checkNesting(rw *rewritten) error {
	depth := 0
	for _, t := range rw.toks {
		switch {
		case t.IsSymbol("("):
			depth++
			if depth > MaxNesting {
				l, c := parse.Position(rw.src, t.Start)
				return errorf(ErrSyntax, "syntax error at line %d, column %d: nesting too deep (limit %d levels of parentheses)", l, c, MaxNesting)
			}
		case t.IsSymbol(")"):
			depth--
		}
	}
	return nil
}

// isKeyword reports whether sqlparser reads w as a keyword rather than a
// name.
func isKeyword(w string) bool {
	typ, _ := sqlparser.NewStringTokenizer(w).Scan()
	return typ != sqlparser.ID
}

// scope resolves names against the one table of the query.
type scope struct {
	tbl        *table.Table
	qualifiers []string // the table's name and its alias
}

type planner struct {
	rw    *rewritten
	scope scope
	refs  []*colRef // every column reference made, for narrowing
}

func (p *planner) ref(k int, c table.Column, name string) *colRef {
	r := &colRef{exprBase: exprBase{t: c.Type, src: name}, idx: k, col: c}
	p.refs = append(p.refs, r)
	return r
}

// narrow makes the plan read only the columns its expressions use: the
// batch it evaluates on holds those, in table order, and each reference is
// renumbered into it. Filtering then copies no column nobody reads.
func (p *planner) narrow(plan *Plan) {
	used := map[int]bool{}
	for _, r := range p.refs {
		used[r.idx] = true
	}
	cols := p.scope.tbl.Schema().Columns
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
		r.idx = at[r.idx]
	}
	plan.inSchema = arrow.NewSchema(fs, nil)
	plan.allInputs = len(plan.inputs) == len(cols)
}

func planSelect(rw *rewritten, s *sqlparser.Select, cat Catalog) (*Plan, error) {
	switch {
	case s.Distinct != "":
		return nil, unsupportedClause("SELECT DISTINCT")
	case s.Hints != "":
		return nil, unsupportedClause(strings.ToUpper(strings.TrimSpace(s.Hints)))
	case len(s.GroupBy) > 0:
		return nil, unsupportedClause("GROUP BY")
	case s.Having != nil:
		return nil, unsupportedClause("HAVING")
	case len(s.OrderBy) > 0:
		return nil, unsupportedClause("ORDER BY", "a share group hands out records in no particular order")
	case s.Lock != "":
		return nil, unsupportedClause(strings.ToUpper(strings.TrimSpace(s.Lock)))
	}
	if len(s.From) != 1 {
		return nil, unsupportedClause("JOIN", "a FROM list of several tables")
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
				return nil, errorf(ErrUnsupported, "qualified table name %s.%s is not supported; name the table alone", e.Qualifier.String(), e.Name.String())
			}
			name = e.Name.String()
		case *sqlparser.Subquery:
			return nil, unsupportedClause("a subquery in FROM")
		default:
			return nil, unsupportedClause("this FROM clause")
		}
		if len(te.Partitions) > 0 {
			return nil, unsupportedClause("PARTITION (...) in FROM")
		}
		if te.Hints != nil {
			return nil, unsupportedClause("USE, FORCE or IGNORE INDEX")
		}
		alias = te.As.String()
	case *sqlparser.JoinTableExpr:
		return nil, unsupportedClause("JOIN")
	default:
		return nil, unsupportedClause("a parenthesized FROM clause")
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
	p := &planner{rw: rw, scope: scope{tbl: tbl, qualifiers: qualifiers}}
	plan := &Plan{sql: rw.src, tbl: tbl, limit: -1}
	if s.Limit != nil {
		if s.Limit.Offset != nil {
			return nil, unsupportedClause("OFFSET")
		}
		v, ok := s.Limit.Rowcount.(*sqlparser.SQLVal)
		if !ok || v.Type != sqlparser.IntVal {
			return nil, errorf(ErrSyntax, "LIMIT needs a whole number of rows, got %s", p.textOf(s.Limit.Rowcount))
		}
		n, err := strconv.ParseInt(string(v.Val), 10, 64)
		if err != nil {
			return nil, errorf(ErrSyntax, "LIMIT %s is out of range", v.Val)
		}
		plan.limit = n
	}
	if err := p.selectList(plan, s.SelectExprs); err != nil {
		return nil, err
	}
	if s.Where != nil && s.Where.Expr != nil {
		w, err := p.expr(s.Where.Expr)
		if err != nil {
			return nil, err
		}
		if w.typ() == nil {
			w = typedNull(w, table.BooleanType())
		}
		if w.typ().Kind != table.Boolean {
			return nil, errorf(ErrType, "WHERE needs a BOOLEAN predicate, got %s (%s)", tn(w.typ()), w.text())
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
	cols := p.scope.tbl.Schema().Columns
	for i, it := range items {
		switch it := it.(type) {
		case *sqlparser.StarExpr:
			if q := it.TableName.Name.String(); q != "" && !p.isQualifier(q) {
				return p.unknownQualifier(q, q+".*")
			}
			for k, c := range cols {
				plan.exprs = append(plan.exprs, p.ref(k, c, c.Name))
				plan.cols = append(plan.cols, table.Column{Name: c.Name, Type: c.Type, Comment: c.Comment})
			}
		case *sqlparser.AliasedExpr:
			n, err := p.expr(it.Expr)
			if err != nil {
				return err
			}
			if n.typ() == nil {
				return errorf(ErrType, "NULL needs a type here; write CAST(NULL AS <type>)")
			}
			name := it.As.String()
			if name == "" {
				name = fmt.Sprintf("EXPR$%d", i)
				if c, ok := n.(*colRef); ok {
					name = c.col.Name
				}
			}
			plan.exprs = append(plan.exprs, n)
			plan.cols = append(plan.cols, table.Column{Name: name, Type: n.typ()})
		default:
			return unsupportedExpr(p.textOf(it))
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
	return errorf(ErrUnknownColumn, "unknown table '%s' in %s; the query reads '%s'", options.Cut(q), in, options.Cut(p.scope.qualifiers[0]))
}

// column resolves a column name.
func (p *planner) column(c *sqlparser.ColName) (node, error) {
	name := c.Name.String()
	if p.scope.tbl == noTable {
		return nil, errorf(ErrUnknownColumn, "unknown column '%s': a SELECT without FROM reads no table", options.Cut(p.textOf(c)))
	}
	if q := c.Qualifier.Name.String(); q != "" {
		if !c.Qualifier.Qualifier.IsEmpty() || !p.isQualifier(q) {
			return nil, p.unknownQualifier(sqlparser.String(c.Qualifier), p.textOf(c))
		}
	}
	s := p.scope.tbl.Schema()
	if k := s.Index(name); k >= 0 {
		return p.ref(k, s.Columns[k], p.textOf(c)), nil
	}
	names := make([]string, len(s.Columns))
	for k, col := range s.Columns {
		names[k] = col.Name
	}
	msg := fmt.Sprintf("unknown column '%s' in table '%s'", options.Cut(name), options.Cut(p.scope.tbl.Name()))
	if best := suggest(name, names); best != "" {
		msg += fmt.Sprintf(" (did you mean '%s'?)", best)
	} else {
		msg += fmt.Sprintf(" (columns: %s)", strings.Join(names, ", "))
	}
	return nil, &Error{Kind: ErrUnknownColumn, Msg: msg}
}

// suggest picks the candidate a mistyped name most likely meant: one within
// a few edits, or one that contains the name's letters in order (qty in
// quantity).
func suggest(name string, candidates []string) string {
	best, bestD := "", math.MaxInt
	ln := strings.ToLower(name)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := options.EditDistance(ln, lc)
		ok := d <= max(1, len(ln)/3) || (len(ln) >= 2 && isSubsequence(ln, lc)) || strings.HasPrefix(lc, ln)
		if ok && d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func isSubsequence(s, of string) bool {
	i := 0
	for k := 0; k < len(of) && i < len(s); k++ {
		if of[k] == s[i] {
			i++
		}
	}
	return i == len(s)
}

// textOf prints an expression as the user wrote it (near enough: keywords
// come out in lower case), with the rewrite's placeholders turned back
// into CASTs and typed literals.
func (p *planner) textOf(n sqlparser.SQLNode) string {
	buf := sqlparser.NewTrackedBuffer(func(buf *sqlparser.TrackedBuffer, n sqlparser.SQLNode) {
		switch n := n.(type) {
		case *sqlparser.FuncExpr:
			if spec, ok := p.castSpec(n); ok {
				arg := sqlparser.SelectExprs(n.Exprs)
				switch {
				case spec.lit:
					buf.Myprintf("%s %v", spec.typ, arg)
				case spec.try:
					buf.Myprintf("TRY_CAST(%v AS %s)", arg, spec.typ)
				default:
					buf.Myprintf("CAST(%v AS %s)", arg, spec.typ)
				}
				return
			}
		case *sqlparser.SQLVal:
			if n.Type == sqlparser.StrVal {
				buf.Myprintf("%s", table.QuoteString(string(n.Val)))
				return
			}
		case *sqlparser.ComparisonExpr:
			if n.Operator == sqlparser.NotEqualStr {
				buf.Myprintf("%v <> %v", n.Left, n.Right)
				return
			}
		}
		n.Format(buf)
	})
	buf.Myprintf("%v", n)
	return buf.String()
}

func (p *planner) castSpec(f *sqlparser.FuncExpr) (castSpec, bool) {
	name := f.Name.String()
	if !strings.HasPrefix(name, castFunc) || !f.Qualifier.IsEmpty() {
		return castSpec{}, false
	}
	k, err := strconv.Atoi(strings.TrimPrefix(name, castFunc))
	if err != nil || k < 0 || k >= len(p.rw.casts) {
		return castSpec{}, false
	}
	return p.rw.casts[k], true
}

// untyped is a NULL literal whose type comes from where it is used (a + NULL
// is NULL of a's type).
type untyped struct{ exprBase }

func (u *untyped) operands() []node { return nil }
func (u *untyped) eval(*evalCtx, arrow.RecordBatch) (arrow.Array, error) {
	return nil, fmt.Errorf("query: untyped NULL evaluated")
}

// typedNull gives an untyped NULL the type t; other nodes pass through.
func typedNull(n node, t *table.DataType) node {
	if _, ok := n.(*untyped); !ok {
		return n
	}
	t = t.WithNotNull(false)
	return newLiteral(t, scalar.MakeNullScalar(t.ArrowType()), n.text())
}

func boolType(notNull bool) *table.DataType {
	return &table.DataType{Kind: table.Boolean, NotNull: notNull}
}

func notNull(ns ...node) bool {
	for _, n := range ns {
		if n.typ() == nil || !n.typ().NotNull {
			return false
		}
	}
	return true
}

// expr plans an expression and folds it when it reads no column, so that
// CAST('2024-01-01' AS DATE) is parsed once and a bad constant fails before
// the query starts.
func (p *planner) expr(e sqlparser.Expr) (node, error) {
	n, err := p.expr1(e)
	if err != nil {
		return nil, err
	}
	switch n.(type) {
	case *literal, *untyped:
		return n, nil
	}
	if !isConstant(n) {
		return n, nil
	}
	return fold(n)
}

// foldMem allocates constants; they live as long as their plan, outside any
// query's allocator.
var foldMem = memory.DefaultAllocator

func fold(n node) (node, error) {
	ec := newEvalCtx(foldMem)
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	a, err := n.eval(ec, one)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	sc, err := scalar.GetScalar(a, 0)
	if err != nil {
		return nil, fmt.Errorf("query: folding %s: %w", n.text(), err)
	}
	return newLiteral(n.typ(), sc, n.text()), nil
}

func (p *planner) expr1(e sqlparser.Expr) (node, error) {
	src := p.textOf(e)
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return p.expr1(e.Expr)
	case *sqlparser.ColName:
		return p.column(e)
	case *sqlparser.SQLVal:
		return p.value(e, src)
	case *sqlparser.NullVal:
		return &untyped{exprBase{src: "NULL"}}, nil
	case sqlparser.BoolVal:
		return newLiteral(boolType(true), scalar.NewBooleanScalar(bool(e)), src), nil
	case *sqlparser.AndExpr:
		return p.logic(false, e.Left, e.Right, src)
	case *sqlparser.OrExpr:
		return p.logic(true, e.Left, e.Right, src)
	case *sqlparser.NotExpr:
		x, err := p.boolOperand(e.Expr, "NOT")
		if err != nil {
			return nil, err
		}
		return &not{exprBase: exprBase{t: boolType(notNull(x)), src: src}, e: x}, nil
	case *sqlparser.ComparisonExpr:
		return p.comparison(e, src)
	case *sqlparser.RangeCond:
		return p.between(e, src)
	case *sqlparser.IsExpr:
		x, err := p.expr(e.Expr)
		if err != nil {
			return nil, err
		}
		op := strings.TrimPrefix(e.Operator, "is ")
		neg := strings.HasPrefix(op, "not ")
		what := strings.TrimPrefix(op, "not ")
		if what != "null" {
			x = typedNull(x, table.BooleanType())
			if x.typ().Kind != table.Boolean {
				return nil, errorf(ErrType, "IS %s needs a BOOLEAN operand, got %s (%s)", strings.ToUpper(op), tn(x.typ()), x.text())
			}
		}
		return &isTest{exprBase: exprBase{t: boolType(true), src: src}, what: what, neg: neg, e: x}, nil
	case *sqlparser.BinaryExpr:
		switch e.Operator {
		case "+", "-", "*", "/", "%":
			return p.arith(e.Operator, e.Left, e.Right, src)
		case "div":
			return nil, unsupportedExpr("DIV", "write / on integers")
		}
		return nil, unsupportedExpr("operator " + e.Operator)
	case *sqlparser.UnaryExpr:
		switch e.Operator {
		case "-", "+":
			x, err := p.expr(e.Expr)
			if err != nil {
				return nil, err
			}
			if x.typ() == nil {
				return x, nil
			}
			if !isNumeric(x.typ()) {
				return nil, errorf(ErrType, "unary %s needs a numeric operand, got %s (%s)", e.Operator, tn(x.typ()), x.text())
			}
			if e.Operator == "+" {
				return x, nil
			}
			return &neg{exprBase: exprBase{t: x.typ(), src: src}, e: x}, nil
		}
		return nil, unsupportedExpr("operator " + strings.TrimSpace(e.Operator))
	case *sqlparser.FuncExpr:
		return p.function(e, src)
	case *sqlparser.ConvertExpr:
		return nil, unsupportedExpr("CONVERT", "write CAST(x AS type)")
	case *sqlparser.CaseExpr:
		return nil, unsupportedExpr("CASE")
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return nil, unsupportedClause("a subquery")
	case *sqlparser.GroupConcatExpr:
		return nil, unsupportedExpr("aggregate function GROUP_CONCAT")
	case *sqlparser.IntervalExpr:
		return nil, unsupportedExpr("INTERVAL")
	case *sqlparser.SubstrExpr:
		return nil, unsupportedExpr("function SUBSTRING")
	case sqlparser.ValTuple:
		return nil, unsupportedExpr("a row value " + src)
	}
	return nil, unsupportedExpr(src)
}

func (p *planner) value(v *sqlparser.SQLVal, src string) (node, error) {
	s := string(v.Val)
	switch v.Type {
	case sqlparser.StrVal:
		t := &table.DataType{Kind: table.Char, Length: utf8.RuneCountInString(s), NotNull: true}
		return newLiteral(t, scalar.NewStringScalar(s), src), nil
	case sqlparser.IntVal:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return newLiteral(&table.DataType{Kind: table.Int, NotNull: true}, scalar.NewInt32Scalar(int32(n)), src), nil
			}
			return newLiteral(&table.DataType{Kind: table.BigInt, NotNull: true}, scalar.NewInt64Scalar(n), src), nil
		}
		return decimalLiteral(s, src)
	case sqlparser.FloatVal:
		if strings.ContainsAny(s, "eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, errorf(ErrSyntax, "bad number %s", s)
			}
			return newLiteral(&table.DataType{Kind: table.Double, NotNull: true}, scalar.NewFloat64Scalar(f), src), nil
		}
		return decimalLiteral(s, src)
	case sqlparser.HexVal:
		b, err := v.HexDecode()
		if err != nil {
			return nil, errorf(ErrSyntax, "bad binary literal %s: %v", src, err)
		}
		t := &table.DataType{Kind: table.Binary, Length: max(len(b), 1), NotNull: true}
		if len(b) == 0 {
			t = &table.DataType{Kind: table.Varbinary, Length: table.MaxLength, NotNull: true}
			return newLiteral(t, scalar.NewBinaryScalar(memory.NewBufferBytes(b), arrow.BinaryTypes.Binary), src), nil
		}
		return newLiteral(t, scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(b), t.ArrowType()), src), nil
	case sqlparser.ValArg:
		return nil, unsupportedExpr("a parameter (?)")
	}
	return nil, unsupportedExpr("literal " + src)
}

// decimalLiteral types 1.50 as DECIMAL(3, 2), as Flink does: the precision
// counts the significant digits, the scale the digits after the point.
func decimalLiteral(s, src string) (node, error) {
	v, scale, ok := parseDecimal(s)
	if !ok {
		return nil, errorf(ErrSyntax, "bad number %s", s)
	}
	prec := len(new(big.Int).Abs(v).String())
	if v.Sign() == 0 {
		prec = 1
	}
	prec = max(prec, scale)
	if prec > table.MaxDecimalPrecision {
		return nil, errorf(ErrType, "number %s has more than %d digits", s, table.MaxDecimalPrecision)
	}
	t := &table.DataType{Kind: table.Decimal, Precision: prec, Scale: scale, NotNull: true}
	return newLiteral(t, scalar.NewDecimal128Scalar(decimal128.FromBigInt(v), t.ArrowType()), src), nil
}

func (p *planner) boolOperand(e sqlparser.Expr, op string) (node, error) {
	x, err := p.expr(e)
	if err != nil {
		return nil, err
	}
	x = typedNull(x, table.BooleanType())
	if x.typ().Kind != table.Boolean {
		what := "BOOLEAN operands"
		if op == "NOT" {
			what = "a BOOLEAN operand"
		}
		return nil, errorf(ErrType, "%s needs %s, got %s (%s)", op, what, tn(x.typ()), x.text())
	}
	return x, nil
}

func (p *planner) logic(or bool, le, re sqlparser.Expr, src string) (node, error) {
	op := "AND"
	if or {
		op = "OR"
	}
	l, err := p.boolOperand(le, op)
	if err != nil {
		return nil, err
	}
	r, err := p.boolOperand(re, op)
	if err != nil {
		return nil, err
	}
	return &logic{exprBase: exprBase{t: boolType(notNull(l, r)), src: src}, or: or, l: l, r: r}, nil
}

func (p *planner) arith(op string, le, re sqlparser.Expr, src string) (node, error) {
	l, err := p.expr(le)
	if err != nil {
		return nil, err
	}
	r, err := p.expr(re)
	if err != nil {
		return nil, err
	}
	switch {
	case l.typ() == nil && r.typ() == nil:
		return nil, errorf(ErrType, "NULL %s NULL needs a type; write CAST(NULL AS <type>)", op)
	case l.typ() == nil:
		l = typedNull(l, r.typ())
	case r.typ() == nil:
		r = typedNull(r, l.typ())
	}
	t, err := arithType(op, l.typ(), r.typ())
	if err != nil {
		return nil, &Error{Kind: ErrType, Msg: err.Error() + " (" + src + ")"}
	}
	return &arith{exprBase: exprBase{t: t, src: src}, op: op, l: l, r: r}, nil
}

// operands plans both sides of a comparison and finds the type they are
// compared as. A string literal compared with a number, a time or a
// BOOLEAN is read as that type (ts > '2024-01-01 00:00:00'), as Flink's
// implicit coercion of literals does; anything else must match.
func (p *planner) operands(l, r node, src string) (node, node, *table.DataType, error) {
	switch {
	case l.typ() == nil && r.typ() == nil:
		return nil, nil, nil, errorf(ErrType, "comparing NULL with NULL needs a type; write CAST(NULL AS <type>) (%s)", src)
	case l.typ() == nil:
		l = typedNull(l, r.typ())
	case r.typ() == nil:
		r = typedNull(r, l.typ())
	}
	var err error
	if l, err = coerceLiteral(l, r.typ()); err != nil {
		return nil, nil, nil, err
	}
	if r, err = coerceLiteral(r, l.typ()); err != nil {
		return nil, nil, nil, err
	}
	if !comparableKind(l.typ()) || !comparableKind(r.typ()) {
		return nil, nil, nil, errorf(ErrType, "cannot compare %s with %s: values of nested types are not comparable (%s)", tn(l.typ()), tn(r.typ()), src)
	}
	ct, ok := compareType(l.typ(), r.typ())
	if !ok {
		return nil, nil, nil, errorf(ErrType, "cannot compare %s with %s; CAST one side to the other's type (%s)", tn(l.typ()), tn(r.typ()), src)
	}
	return l, r, ct, nil
}

func coerceLiteral(n node, to *table.DataType) (node, error) {
	lit, ok := n.(*literal)
	if !ok || !isChar(lit.t) || isChar(to) || isBin(to) || !comparableKind(to) {
		return n, nil
	}
	t := to.WithNotNull(lit.t.NotNull)
	if isInt(to) || isApprox(to) {
		// A number literal in a string keeps its own type ('1.5' against an
		// INT column must not become 1).
		if v, sc, ok := parseDecimal(lit.val.String()); ok {
			t = &table.DataType{Kind: table.Decimal, Precision: max(len(new(big.Int).Abs(v).String()), sc, 1), Scale: sc, NotNull: lit.t.NotNull}
			if t.Precision > table.MaxDecimalPrecision || isApprox(to) {
				t = &table.DataType{Kind: table.Double, NotNull: lit.t.NotNull}
			}
		}
	}
	if !castable(lit.t, t) {
		return n, nil
	}
	return fold(&cast{exprBase: exprBase{t: t, src: lit.src}, e: lit})
}

func (p *planner) comparison(e *sqlparser.ComparisonExpr, src string) (node, error) {
	switch e.Operator {
	case "in", "not in":
		return p.in(e, src)
	case "like", "not like":
		return p.like(e, src)
	case "=", "!=", "<>", "<", "<=", ">", ">=":
	case "<=>":
		return nil, unsupportedExpr("<=>", "null-safe equality")
	default:
		return nil, unsupportedExpr("operator " + strings.ToUpper(e.Operator))
	}
	l, err := p.expr(e.Left)
	if err != nil {
		return nil, err
	}
	r, err := p.expr(e.Right)
	if err != nil {
		return nil, err
	}
	l, r, ct, err := p.operands(l, r, src)
	if err != nil {
		return nil, err
	}
	op := e.Operator
	if op == "!=" {
		op = "<>"
	}
	return &compare{exprBase: exprBase{t: boolType(notNull(l, r)), src: src}, op: op, l: l, r: r, ct: ct}, nil
}

func (p *planner) in(e *sqlparser.ComparisonExpr, src string) (node, error) {
	tuple, ok := e.Right.(sqlparser.ValTuple)
	if !ok {
		return nil, unsupportedClause("IN with a subquery")
	}
	x, err := p.expr(e.Left)
	if err != nil {
		return nil, err
	}
	n := &inList{exprBase: exprBase{src: src}, neg: e.Operator == "not in"}
	nn := true
	for _, it := range tuple {
		item, err := p.expr(it)
		if err != nil {
			return nil, err
		}
		xx, item, ct, err := p.operands(x, item, src)
		if err != nil {
			return nil, err
		}
		x = xx // x may have been typed by the first item (NULL IN (1, 2))
		n.items = append(n.items, item)
		n.cts = append(n.cts, ct)
		nn = nn && item.typ().NotNull
	}
	n.x = x
	n.t = boolType(nn && notNull(x))
	return n, nil
}

func (p *planner) between(e *sqlparser.RangeCond, src string) (node, error) {
	x, err := p.expr(e.Left)
	if err != nil {
		return nil, err
	}
	lo, err := p.expr(e.From)
	if err != nil {
		return nil, err
	}
	hi, err := p.expr(e.To)
	if err != nil {
		return nil, err
	}
	x1, lo, ctLo, err := p.operands(x, lo, src)
	if err != nil {
		return nil, err
	}
	x2, hi, ctHi, err := p.operands(x1, hi, src)
	if err != nil {
		return nil, err
	}
	return &between{exprBase: exprBase{t: boolType(notNull(x2, lo, hi)), src: src},
		x: x2, lo: lo, hi: hi, ctLo: ctLo, ctHi: ctHi, neg: e.Operator == sqlparser.NotBetweenStr}, nil
}

func (p *planner) like(e *sqlparser.ComparisonExpr, src string) (node, error) {
	x, err := p.expr(e.Left)
	if err != nil {
		return nil, err
	}
	x = typedNull(x, table.StringType())
	if !isChar(x.typ()) {
		return nil, errorf(ErrType, "LIKE needs a string operand, got %s (%s); CAST it to STRING", tn(x.typ()), x.text())
	}
	pat, err := p.expr(e.Right)
	if err != nil {
		return nil, err
	}
	n := &like{exprBase: exprBase{src: src}, x: x, neg: e.Operator == "not like"}
	lit, ok := pat.(*literal)
	if _, isNull := pat.(*untyped); isNull {
		n.t = boolType(false)
		return n, nil
	}
	if !ok || !isChar(lit.t) {
		return nil, unsupportedExpr("LIKE with a pattern that is not a string literal", pat.text())
	}
	var esc rune
	if e.Escape != nil {
		en, err := p.expr(e.Escape)
		if err != nil {
			return nil, err
		}
		el, ok := en.(*literal)
		if !ok || !isChar(el.t) || utf8.RuneCountInString(el.val.String()) != 1 {
			return nil, errorf(ErrType, "ESCAPE needs a string literal of one character, got %s", en.text())
		}
		esc, _ = utf8.DecodeRuneInString(el.val.String())
	}
	n.t = boolType(notNull(x) && lit.val.IsValid())
	if !lit.val.IsValid() {
		return n, nil
	}
	if n.match, err = likeMatcher(lit.val.String(), esc); err != nil {
		return nil, err
	}
	return n, nil
}

func (p *planner) function(f *sqlparser.FuncExpr, src string) (node, error) {
	name := f.Name.String()
	if spec, ok := p.castSpec(f); ok {
		if len(f.Exprs) != 1 {
			return nil, errorf(ErrSyntax, "CAST takes one expression (%s)", src)
		}
		ae, ok := f.Exprs[0].(*sqlparser.AliasedExpr)
		if !ok || !ae.As.IsEmpty() {
			return nil, errorf(ErrSyntax, "bad CAST %s", src)
		}
		x, err := p.expr(ae.Expr)
		if err != nil {
			return nil, err
		}
		var to *table.DataType
		if spec.lit {
			to, err = literalType(spec, x)
		} else {
			to, err = castType(p.rw, spec)
		}
		if err != nil {
			return nil, err
		}
		if x.typ() == nil {
			return typedNull(x, to), nil
		}
		if !castable(x.typ(), to) {
			return nil, errorf(ErrType, "cannot cast %s to %s (%s)", tn(x.typ()), tn(to), src)
		}
		to = to.WithNotNull(x.typ().NotNull && !spec.try)
		return &cast{exprBase: exprBase{t: to, src: src}, e: x, try: spec.try, hint: !spec.lit && !spec.try}, nil
	}
	lower := strings.ToLower(name)
	switch {
	case lower == "mod" && f.Qualifier.IsEmpty():
		if len(f.Exprs) != 2 {
			return nil, errorf(ErrSyntax, "MOD takes two arguments (%s)", src)
		}
		var args [2]sqlparser.Expr
		for k, se := range f.Exprs {
			ae, ok := se.(*sqlparser.AliasedExpr)
			if !ok || !ae.As.IsEmpty() {
				return nil, errorf(ErrSyntax, "bad argument of MOD (%s)", src)
			}
			args[k] = ae.Expr
		}
		return p.arith("%", args[0], args[1], src)
	case f.IsAggregate():
		return nil, errorf(ErrUnsupported, "aggregate function %s is not supported (kshare has no GROUP BY); %s", strings.ToUpper(name), shape)
	}
	return nil, unsupportedExpr("function " + strings.ToUpper(name))
}

// literalType is the type of DATE '...', TIME '...' or TIMESTAMP '...': a
// time's precision is the number of fractional digits written.
func literalType(spec castSpec, x node) (*table.DataType, error) {
	lit, ok := x.(*literal)
	if !ok || !isChar(lit.t) {
		return nil, errorf(ErrSyntax, "%s needs a string literal", spec.typ)
	}
	s := lit.val.String()
	switch spec.kind {
	case litDate:
		return &table.DataType{Kind: table.Date, NotNull: true}, nil
	case litTime:
		return &table.DataType{Kind: table.Time, Precision: fractionDigits(s), NotNull: true}, nil
	}
	return &table.DataType{Kind: table.Timestamp, Precision: fractionDigits(s), NotNull: true}, nil
}
