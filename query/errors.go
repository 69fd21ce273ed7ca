package query

import (
	"errors"

	"github.com/kshare/kshare/expr"
)

// The kinds of error Prepare and a running query return. Each error wraps one
// of them, so callers tell them apart with errors.Is; the message itself says
// what was wrong and what would work. Those of expressions are package
// expr's, named here too so that a caller of Prepare needs one package.
var (
	// ErrSyntax is returned for a statement that does not parse (expr.ErrSyntax).
	ErrSyntax = expr.ErrSyntax
	// ErrNotSelect is returned by Prepare for a statement that is not a
	// SELECT (DDL, SHOW, SET and the like belong to Exec).
	ErrNotSelect = errors.New("not a query")
	// ErrUnsupported is returned for SQL kshare does not run (expr.ErrUnsupported).
	ErrUnsupported = expr.ErrUnsupported
	// ErrUnknownColumn is returned for a name that is no column of the
	// table (expr.ErrUnknownColumn).
	ErrUnknownColumn = expr.ErrUnknownColumn
	// ErrType is returned when operands do not fit their operator (expr.ErrType).
	ErrType = expr.ErrType
	// ErrEval is returned when evaluating an expression fails on a value
	// (expr.ErrEval). A running query ends with it.
	ErrEval = expr.ErrEval
	// ErrLate is the reason a record that came too late for its event
	// time goes by its table's 'scan.on-eval-error' policy (a dead
	// letter's kshare.error says it): later than every window it falls
	// in, whose rows are out already, so it updates nothing; or later than
	// its side's watermark in an interval join, whose rows it could meet
	// may have left.
	ErrLate = errors.New("late")
)

// Error is a problem with a query: expr.Error, whose Kind is one of the Err*
// sentinels.
type Error = expr.Error
