package expr

// This file holds the registry of scalar functions: every function kshare
// runs is one funcDef, declared as data in the funcs_*.go file of its group
// (conditional, string, ...). The planner finds a call's definition here,
// checks its arguments against the declaration and builds a call node; the
// declaration is also what Functions lists and what errors quote.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/types"
)

// FunctionInfo describes one function, for SHOW FUNCTIONS.
type FunctionInfo struct {
	Name        string // upper case, as Flink names it
	Kind        string // "scalar" or "aggregate"
	Signature   string // the accepted arguments, as in MOD(numeric, numeric)
	Description string // one line
}

// Functions lists the functions kshare runs, scalar and aggregate, sorted
// by name.
func Functions() []FunctionInfo {
	out := make([]FunctionInfo, 0, len(funcs)+len(aggregates))
	for _, d := range funcs {
		if !d.hidden {
			out = append(out, FunctionInfo{Name: d.name, Kind: "scalar", Signature: d.signature(), Description: d.desc})
		}
	}
	out = append(out, aggregates...)
	slices.SortFunc(out, func(a, b FunctionInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// aggregates are the aggregate functions kshare runs, as SHOW FUNCTIONS
// lists them (package query plans them); IsAggregate and AggregateNames
// are read from it.
var aggregates = []FunctionInfo{
	{Name: "COUNT", Kind: "aggregate", Signature: "COUNT(*), COUNT([DISTINCT] x)", Description: "the rows, or the rows where x is not NULL (BIGINT NOT NULL)"},
	{Name: "SUM", Kind: "aggregate", Signature: "SUM([DISTINCT] numeric)", Description: "the sum of the values that are not NULL; of DECIMAL(p, s) a DECIMAL(38, s)"},
	{Name: "AVG", Kind: "aggregate", Signature: "AVG([DISTINCT] numeric)", Description: "the average of the values that are not NULL; of integers an integer (truncated), as in Flink"},
	{Name: "MIN", Kind: "aggregate", Signature: "MIN([DISTINCT] x)", Description: "the smallest value that is not NULL"},
	{Name: "MAX", Kind: "aggregate", Signature: "MAX([DISTINCT] x)", Description: "the largest value that is not NULL"},
	{Name: "LISTAGG", Kind: "aggregate", Signature: "LISTAGG([DISTINCT] x[, separator])", Description: "the values that are not NULL joined by separator (',' unless given)"},
}

// aggFuncs are the names of aggregates, lower case.
var aggFuncs = func() map[string]bool {
	m := make(map[string]bool, len(aggregates))
	for _, a := range aggregates {
		m[strings.ToLower(a.Name)] = true
	}
	return m
}()

// AggregateNames names the aggregates for messages.
var AggregateNames = func() string {
	names := make([]string, len(aggregates))
	for i, a := range aggregates {
		names[i] = a.Name
	}
	return strings.Join(names, ", ")
}()

// IsFunction reports whether name (in any case) is a scalar function
// kshare runs.
func IsFunction(name string) bool {
	_, ok := funcs[strings.ToLower(name)]
	return ok
}

// IsAggregate reports whether name (in any case) is an aggregate function
// kshare runs.
func IsAggregate(name string) bool { return aggFuncs[strings.ToLower(name)] }

// argKind is what one argument of a function accepts.
type argKind struct {
	name string // as signatures and errors show it
	ok   func(*types.DataType) bool
	// null is the type an untyped NULL takes in this place (UPPER(NULL) is
	// a NULL STRING); nil leaves it to the function's type rule.
	null *types.DataType
}

var (
	anyArg = argKind{name: "any type", ok: func(*types.DataType) bool { return true }}
	strArg = argKind{name: "STRING", ok: IsChar, null: types.StringType()}
	intArg = argKind{name: "INTEGER", ok: isInt, null: types.IntType()}
	numArg = argKind{name: "numeric", ok: IsNumeric, null: types.DoubleType()}
	// exactArg takes integers and decimals.
	exactArg = argKind{name: "exact numeric", ok: isExact, null: types.IntType()}
	boolArg  = argKind{name: "BOOLEAN", ok: func(t *types.DataType) bool { return t.Kind == types.Boolean }, null: types.BooleanType()}
)

// funcDef declares one function. A function either has a kernel (ret and
// eval, with prep for plan-time work) or builds a node of its own (build:
// conditional functions, which evaluate their arguments lazily).
type funcDef struct {
	name string
	args []argKind
	// min is the number of arguments that must be given; 0 means all of
	// args, -1 none. Arguments after min may be left out.
	min int
	// variadic: the last kind of args repeats, any number of times.
	variadic bool
	desc     string
	// sig, if set, is the signature shown, for a syntax of keywords
	// (EXTRACT(unit FROM t)) that the argument kinds do not tell.
	sig string
	// volatile: the value changes with each evaluation (the current time),
	// so that a call is never folded into a constant.
	volatile bool
	// hidden: reached by syntax (x[k] is ITEM), not listed or suggested.
	hidden bool

	// ret derives the result type from the checked arguments; it may
	// replace arguments (casts to a common type).
	ret func(c *call) (*types.DataType, error)
	// eval computes the result from the evaluated arguments, one array per
	// argument, each b.NumRows() long.
	eval func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error)
	// prep, if set, does plan-time work once the type is known: compiling
	// a constant pattern, say. Its errors are the statement's.
	prep func(c *call) error

	build func(p *Compiler, args []Node, src string) (Node, error)
}

func (d *funcDef) minArgs() int {
	switch {
	case d.min < 0:
		return 0
	case d.min > 0:
		return d.min
	}
	return len(d.args)
}

// signature is the declaration as text: LPAD(STRING, INTEGER, STRING),
// CONCAT(STRING, ...), ROUND(numeric[, INTEGER]).
func (d *funcDef) signature() string {
	switch {
	case d == concatDef:
		return "STRING || STRING"
	case d.sig != "":
		return d.sig
	}
	var b strings.Builder
	b.WriteString(d.name + "(")
	for i, a := range d.args {
		switch {
		case i == d.minArgs() && i > 0:
			b.WriteString("[, ")
		case i == d.minArgs():
			b.WriteString("[")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(a.name)
	}
	if d.minArgs() < len(d.args) {
		b.WriteString("]")
	}
	if d.variadic {
		b.WriteString(", ...")
	}
	b.WriteString(")")
	return b.String()
}

// kind is what argument i (from 0) accepts.
func (d *funcDef) kind(i int) argKind {
	if i >= len(d.args) {
		return d.args[len(d.args)-1]
	}
	return d.args[i]
}

// funcs is the registry, by lower-case name; every group of functions adds
// its declarations in init.
var funcs = map[string]*funcDef{}

func register(defs ...*funcDef) {
	for _, d := range defs {
		key := strings.ToLower(d.name)
		if _, dup := funcs[key]; dup || d.name == "" {
			panic("query: function registered twice or without a name: " + d.name)
		}
		if (d.build == nil) == (d.eval == nil || d.ret == nil) {
			panic("query: function " + d.name + " needs a kernel (ret and eval) or build")
		}
		funcs[key] = d
	}
}

// call is a function call evaluated by its kernel on whole arrays.
type call struct {
	exprBase
	fn   *funcDef
	args []Node
	// state is what prep computed at plan time (a compiled pattern).
	state any
}

func (c *call) Operands() []Node { return c.args }
func (c *call) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	if len(c.args) == 0 {
		// A function of no arguments (CURRENT_TIMESTAMP) computes one
		// value, the batch's.
		one, err := c.fn.eval(ec, c, nil)
		if err != nil {
			return nil, err
		}
		defer one.Release()
		v, err := scalar.GetScalar(one, 0)
		if err != nil {
			return nil, err
		}
		return scalar.MakeArrayFromScalar(v, int(b.NumRows()), ec.mem)
	}
	as, err := EvalArgs(ec, b, c.args...)
	if err != nil {
		return nil, err
	}
	defer ReleaseAll(as)
	return c.fn.eval(ec, c, as)
}

// evalError is an error of a function on a value, naming the call.
func (c *call) evalError(format string, args ...any) error {
	return Errorf(ErrEval, "%s: %s", c.src, fmt.Sprintf(format, args...))
}

// funcArgs takes the plain arguments out of a call: no *, no alias.
func funcArgs(f *sqlparser.FuncExpr, name, src string) ([]sqlparser.Expr, error) {
	args := make([]sqlparser.Expr, len(f.Exprs))
	for k, se := range f.Exprs {
		ae, ok := se.(*sqlparser.AliasedExpr)
		if !ok || !ae.As.IsEmpty() {
			return nil, Errorf(ErrSyntax, "bad argument %d of %s (%s)", k+1, name, src)
		}
		args[k] = ae.Expr
	}
	return args, nil
}

// callFunction plans a call of a registered function, or says which one was
// meant.
func (p *Compiler) callFunction(f *sqlparser.FuncExpr, src string) (Node, error) {
	lower, trimMode := funcName(f)
	name := strings.ToUpper(lower)
	d, ok := funcs[lower]
	if ok && d.hidden && lower == strings.ToLower(f.Name.String()) {
		ok = false // ITEM is x[k], not a name to call
	}
	if !ok || !f.Qualifier.IsEmpty() {
		if !f.Qualifier.IsEmpty() {
			name = strings.ToUpper(f.Qualifier.String()) + "." + name
		}
		msg := fmt.Sprintf("unknown function %s", name)
		if best := Suggest(name, functionNames()); best != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", best)
		}
		return nil, &Error{Kind: ErrUnsupported, Msg: msg + "; the functions kshare runs are listed by SHOW FUNCTIONS"}
	}
	if f.Distinct {
		return nil, Errorf(ErrSyntax, "DISTINCT is only for aggregate functions, not %s (%s)", name, src)
	}
	exprs, err := funcArgs(f, name, src)
	if err != nil {
		return nil, err
	}
	if trimMode != "" && len(exprs) == 2 {
		exprs[0], exprs[1] = exprs[1], exprs[0] // TRIM(c FROM s) is TRIM(s, c)
	}
	if n := len(exprs); n < d.minArgs() || n > len(d.args) && !d.variadic {
		return nil, Errorf(ErrType, "%s takes %s, got %d: %s (%s)", d.name, d.arity(), n, d.signature(), src)
	}
	args, err := p.Exprs(exprs...)
	if err != nil {
		return nil, err
	}
	return newCall(p, d, args, src)
}

// newCall checks args against d and builds the call.
func newCall(p *Compiler, d *funcDef, args []Node, src string) (Node, error) {
	for i, a := range args {
		k := d.kind(i)
		if a.Type() == nil {
			if k.null != nil {
				args[i] = TypedNull(a, k.null)
			}
			continue
		}
		if !k.ok(a.Type()) {
			return nil, Errorf(ErrType, "argument %d of %s must be %s, got %s (%s); %s", i+1, d.name, k.name, TypeName(a.Type()), a.Text(), d.signature())
		}
	}
	if d.build != nil {
		return d.build(p, args, src)
	}
	for _, a := range args {
		if a.Type() == nil {
			return nil, Errorf(ErrType, "NULL needs a type in %s; write CAST(NULL AS <type>)", src)
		}
	}
	c := &call{exprBase: exprBase{src: src}, fn: d, args: args}
	t, err := d.ret(c)
	if err != nil {
		return nil, err
	}
	c.t = t
	if d.prep != nil {
		if err := d.prep(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (d *funcDef) arity() string {
	n, m := d.minArgs(), len(d.args)
	plural := func(k int) string {
		if k == 1 {
			return "1 argument"
		}
		return fmt.Sprintf("%d arguments", k)
	}
	switch {
	case d.variadic:
		return "at least " + plural(n)
	case n == m:
		return plural(n)
	}
	return fmt.Sprintf("%d to %s", n, plural(m))
}

func functionNames() []string {
	names := make([]string, 0, len(funcs))
	for _, d := range funcs {
		if !d.hidden {
			names = append(names, d.name)
		}
	}
	slices.Sort(names)
	return names
}

// Type rules shared by the kernels' declarations.

// sameAsArg is the type of argument k, NULL if any argument is.
func sameAsArg(k int) func(c *call) (*types.DataType, error) {
	return func(c *call) (*types.DataType, error) {
		return c.args[k].Type().WithNotNull(notNull(c.args...)), nil
	}
}

// fixedType is t, NULL if any argument is.
func fixedType(t *types.DataType) func(c *call) (*types.DataType, error) {
	return func(c *call) (*types.DataType, error) {
		return t.WithNotNull(notNull(c.args...)), nil
	}
}

// varyingArg is argument k's type as a VARCHAR of its length (TRIM of a
// CHAR(5) is a VARCHAR(5)), NULL if any argument is.
func varyingArg(k int) func(c *call) (*types.DataType, error) {
	return func(c *call) (*types.DataType, error) {
		t := c.args[k].Type()
		return &types.DataType{Kind: types.Varchar, Length: t.Length, NotNull: notNull(c.args...)}, nil
	}
}

// concatDef is the || operator: CONCAT of two, CHAR if both are CHAR.
var concatDef = &funcDef{name: "||", args: []argKind{strArg, strArg}, ret: concatType(true), eval: concat}

// funcName is the registry name of a call as sqlparser read it: the
// rewrite's placeholders (FuncPrefix, TrimPrefix) mapped back. trimMode is
// the mode of a TRIM(... FROM s), whose arguments come as written:
// [characters,] string.
func funcName(f *sqlparser.FuncExpr) (name, trimMode string) {
	name = strings.ToLower(f.Name.String())
	switch {
	case strings.HasPrefix(name, FuncPrefix):
		return strings.TrimPrefix(name, FuncPrefix), ""
	case strings.HasPrefix(name, TrimPrefix):
		mode := strings.TrimPrefix(name, TrimPrefix)
		return map[string]string{"both": "trim", "leading": "ltrim", "trailing": "rtrim"}[mode], mode
	}
	return name, ""
}

// syntaxText prints a call the rewrite changed as the user wrote it (near
// enough: keywords in upper case, SUBSTRING's FROM and FOR as commas).
func (p *Compiler) syntaxText(f *sqlparser.FuncExpr) (string, bool) {
	name, mode := funcName(f)
	if name == strings.ToLower(f.Name.String()) {
		return "", false
	}
	args := make([]string, len(f.Exprs))
	for k, e := range f.Exprs {
		args[k] = p.TextOf(e)
	}
	unquote := func(s string) string { return strings.Trim(s, "'") }
	switch {
	case name == ItemFunc && len(args) == 2:
		return args[0] + "[" + args[1] + "]", true
	case name == "extract" && len(args) == 2:
		return "EXTRACT(" + unquote(args[0]) + " FROM " + args[1] + ")", true
	case (name == "floor" || strings.HasPrefix(name, "ceil")) && len(args) == 2:
		return strings.ToUpper(name) + "(" + args[0] + " TO " + unquote(args[1]) + ")", true
	case name == "json_value" && len(args) > 2:
		return jsonValueText(args, ""), true
	case mode == "":
		return strings.ToUpper(name) + "(" + strings.Join(args, ", ") + ")", true
	case len(args) == 2:
		return "TRIM(" + strings.ToUpper(mode) + " " + args[0] + " FROM " + args[1] + ")", true
	}
	return "TRIM(" + strings.ToUpper(mode) + " FROM " + strings.Join(args, ", ") + ")", true
}

// jsonValueText is JSON_VALUE as written, from its arguments' texts (the
// clauses the rewrite made arguments: 'ON EMPTY DEFAULT', x) and the
// RETURNING type, if any.
func jsonValueText(args []string, returning string) string {
	text := "JSON_VALUE(" + strings.Join(args[:min(2, len(args))], ", ")
	if returning != "" {
		text += " RETURNING " + returning
	}
	for k := 2; k+1 < len(args); k += 2 {
		on, what, _ := strings.Cut(strings.TrimPrefix(strings.Trim(args[k], "'"), "ON "), " ")
		if what == "DEFAULT" {
			what += " " + args[k+1]
		}
		text += " " + what + " ON " + on
	}
	return text + ")"
}
