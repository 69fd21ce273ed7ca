package expr

import (
	"errors"
	"fmt"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/types"
)

// The kinds of error planning and evaluating an expression return. Each
// error wraps one of them, so callers tell them apart with errors.Is; the
// message itself says what was wrong and what would work. Package query
// returns the same kinds (query.ErrType is ErrType).
var (
	// ErrSyntax is returned for a statement that does not parse: the
	// parser's kind (parse.ErrSyntax), so that one errors.Is serves
	// whichever of the two found it.
	ErrSyntax = parse.ErrSyntax
	// ErrUnsupported is returned for SQL kshare does not run: a clause (GROUP
	// BY, JOIN, ORDER BY, ...), an operator, a function or a CAST target. The
	// message names what is supported. It is the parser's kind
	// (parse.ErrUnsupported): SQL kshare does not run is one kind of error
	// whether the parser or the planner finds it.
	ErrUnsupported = parse.ErrUnsupported
	// ErrUnknownColumn is returned for a name that is no column of the table.
	ErrUnknownColumn = errors.New("unknown column")
	// ErrType is returned when operands do not fit their operator (comparing
	// STRING with INT, adding BOOLEANs, a WHERE that is not BOOLEAN).
	ErrType = errors.New("type mismatch")
	// ErrEval is returned when evaluating an expression fails on a value:
	// integer or decimal overflow, division by zero, a CAST of a value that
	// does not fit its target. A running query ends with it.
	ErrEval = errors.New("evaluation failed")
)

// Error is a problem with a query. Its text is the message alone (so that it
// reads as a sentence a user can act on); Kind is one of the Err* sentinels.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Errorf is an Error of kind with a message made as fmt.Sprintf makes it.
func Errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// SelectShape is what every refusal of a clause points to.
const SelectShape = "kshare runs SELECT <columns or expressions> FROM <table> [WHERE <predicate>] [GROUP BY <expressions> [HAVING <predicate>]] [LIMIT <n>]"

// exprForms is what every refusal of an expression points to.
const exprForms = "expressions may use columns, literals, + - * / % ||, = <> != < <= > >=, AND OR NOT, " +
	"IS [NOT] NULL, IS [NOT] TRUE/FALSE, IN (...), BETWEEN, LIKE, CAST, TRY_CAST, CASE and the functions SHOW FUNCTIONS lists"

// UnsupportedClause refuses a clause; why, if given, is a parenthesis
// after "is not supported".
func UnsupportedClause(what string, why ...string) *Error {
	return Errorf(ErrUnsupported, "%s is not supported%s; %s", what, because(why), SelectShape)
}

// UnsupportedExpr refuses an expression, as UnsupportedClause a clause.
func UnsupportedExpr(what string, why ...string) *Error {
	return Errorf(ErrUnsupported, "%s is not supported%s; %s", what, because(why), exprForms)
}

func because(why []string) string {
	if len(why) == 0 {
		return ""
	}
	return " (" + why[0] + ")"
}

// TypeName is a type as messages show it: nullability is rarely the point, and
// "INT NOT NULL" for a literal 1 only confuses.
func TypeName(t interface{ WithNotNull(bool) *types.DataType }) string {
	return t.WithNotNull(false).String()
}
