package parse

import (
	"errors"
	"fmt"

	"github.com/kshare/kshare/internal/errlist"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Error kinds of Parse and Type. Every *SyntaxError wraps one, for
// errors.Is.
var (
	// ErrSyntax is returned for text that is not a statement kshare knows.
	ErrSyntax = errors.New("syntax error")
	// ErrUnsupported is returned for SQL that Flink accepts and kshare does
	// not (computed columns, WATERMARK, PRIMARY KEY, PARTITIONED BY, ...).
	ErrUnsupported = errors.New("unsupported SQL")
	// ErrInvalidDefinition is table.ErrInvalidDefinition: a table
	// definition that reads well but cannot be (two columns of one name,
	// DECIMAL(40, 2), ...). It lives in table because a definition built
	// in Go fails Validate with it too.
	ErrInvalidDefinition = table.ErrInvalidDefinition
)

// SyntaxError is one problem of a script, at a place in it. Line and Column
// count from 1; Column counts characters, not bytes.
type SyntaxError struct {
	Line, Column int
	Msg          string
	Kind         error // ErrSyntax, ErrUnsupported or ErrInvalidDefinition
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

func (e *SyntaxError) Unwrap() error { return e.Kind }

// SyntaxErrors is several problems of one script, in the order found: Parse
// reports every unsupported clause it passes before it stops.
type SyntaxErrors []*SyntaxError

func (es SyntaxErrors) Error() string { return errlist.Error(es) }

// Unwrap lets errors.Is and errors.As see each problem.
func (es SyntaxErrors) Unwrap() []error { return errlist.Unwrap(es) }

// cut shortens s to at most n bytes for messages (options.CutTo).
func cut(s string, n int) string { return options.CutTo(s, n) }
