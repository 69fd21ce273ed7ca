package expr

// This file is what the rewrite of a statement's text (package query's,
// which turns Flink's syntax into what the grammar reads) leaves for the
// compiler: the placeholders it writes, each read back here.

import (
	"errors"
	"math"
	"strings"

	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
)

// CastSpec is one CAST the rewrite took out of the statement.
type CastSpec struct {
	Type       string  // the target type as written, for messages
	Start, End int     // where the target type stands in the source
	Try        bool    // TRY_CAST: NULL instead of an error
	Lit        bool    // a typed literal (TIMESTAMP '...'), printed as such
	Returning  bool    // JSON_VALUE's RETURNING, which the call takes over
	Kind       LitKind // of a typed literal
}

// LitKind is the type of a typed literal (DATE '...').
type LitKind int

const (
	LitDate LitKind = iota + 1
	LitTime
	LitTimestamp
)

// CastFunc, followed by the CAST's index in Source.Casts, names the call
// a CAST, TRY_CAST or typed literal becomes.
const CastFunc = "__kshare_cast_"

// ConcatOp is what || becomes for sqlparser.
const ConcatOp = "div"

// FuncPrefix names a function whose call the rewrite turned into plain
// arguments (__kshare_fn_substring for SUBSTRING); TrimPrefix is TRIM with
// FROM, its mode after it (__kshare_trim_leading) and its arguments in the
// order written: [characters,] string.
const (
	FuncPrefix = "__kshare_fn_"
	TrimPrefix = "__kshare_trim_"
)

// ItemFunc is the function x[k] becomes.
const ItemFunc = "item"

// FilterFunc is what an aggregate call's FILTER (WHERE cond) becomes: its
// last argument, FilterFunc(cond).
const FilterFunc = "__kshare_filter"

// FromParse makes an error of package parse one of this package: its kind
// mapped (a definition parse calls invalid is a type error here), its
// place and message after prefix.
func FromParse(err error, prefix string) error {
	var se *parse.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	kind := ErrSyntax
	switch {
	case errors.Is(se, parse.ErrUnsupported):
		kind = ErrUnsupported
	case errors.Is(se, parse.ErrInvalidDefinition):
		kind = ErrType
	}
	return Errorf(kind, "%sline %d, column %d: %s", prefix, se.Line, se.Column, se.Msg)
}

// FilterOf splits the rewrite's FILTER placeholder (FilterFunc(cond), the
// last argument) off the arguments of f: cond is nil when f has none.
func FilterOf(f *sqlparser.FuncExpr) (cond sqlparser.Expr, args sqlparser.SelectExprs) {
	n := len(f.Exprs)
	if n == 0 {
		return nil, f.Exprs
	}
	ae, ok := f.Exprs[n-1].(*sqlparser.AliasedExpr)
	if !ok {
		return nil, f.Exprs
	}
	m, ok := ae.Expr.(*sqlparser.FuncExpr)
	if !ok || !m.Qualifier.IsEmpty() || !m.Name.EqualString(FilterFunc) || len(m.Exprs) != 1 {
		return nil, f.Exprs
	}
	inner, ok := m.Exprs[0].(*sqlparser.AliasedExpr)
	if !ok || !inner.As.IsEmpty() {
		return nil, f.Exprs
	}
	return inner.Expr, f.Exprs[:n-1]
}

// Suggest picks the candidate a mistyped name most likely meant: one within
// a few edits, or one that contains the name's letters in order (qty in
// quantity).
func Suggest(name string, candidates []string) string {
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
