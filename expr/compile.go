package expr

import "github.com/xwb1989/sqlparser"

// Source is what the compiler needs of a statement's text: the text as
// written, and what the rewrite before the grammar took out of it (see
// rewritten.go).
type Source struct {
	// Src is the statement as the user wrote it, which messages quote and
	// a CAST's target type is read from.
	Src string
	// Casts are the CASTs, TRY_CASTs and typed literals the rewrite made
	// calls of CastFunc, by the index the call's name ends with.
	Casts []CastSpec
	// Unknowns are the IS [NOT] UNKNOWN tests the rewrite made IS [NOT]
	// NULL, for the grammar has no UNKNOWN.
	Unknowns map[*sqlparser.IsExpr]bool
}

// A Scope is what an expression's names mean where it stands: the
// columns of the statement's tables, and its aggregates.
type Scope interface {
	// Column plans a column reference: a name, a name qualified by its
	// table, or a ROW column's field (r.f).
	Column(c *sqlparser.ColName, src string) (Node, error)
	// Aggregate plans e when it is an aggregate call or an expression the
	// statement groups by, whose value is the group's; ok is false when e
	// is neither, and the compiler plans it as an expression of its own.
	Aggregate(e sqlparser.Expr, src string) (n Node, ok bool, err error)
}

// A Compiler makes typed nodes of the grammar's expressions, checking and
// coercing their operands as Flink does (analyze.go).
type Compiler struct {
	src   *Source
	scope Scope
}

// NewCompiler is a compiler of the expressions of the statement src whose
// names scope resolves.
func NewCompiler(src *Source, scope Scope) *Compiler {
	return &Compiler{src: src, scope: scope}
}
