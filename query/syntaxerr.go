package query

// This file holds what the SELECT's text is refused for before planning,
// and sqlparser's errors put in the user's terms: where in their text
// (line and column, from parse's tokens) and the likeliest cause.

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/parse"
)

// MaxNesting is how deep parentheses may nest in a SELECT: the parser
// kshare uses stops at 200 levels, which keeps a hostile statement from
// exhausting the stack.
const MaxNesting = 199

func notSelect(rw *rewritten) error {
	w := "this statement"
	if len(rw.toks) > 0 {
		w = strings.ToUpper(rw.text(rw.toks[0]))
	}
	return expr.Errorf(ErrNotSelect, "a query is one SELECT statement, got %s; run DDL, SHOW, DESCRIBE and SET with Exec", w)
}

// checkStatement refuses, with a precise message, what the MySQL grammar
// would misread or reject with a bare syntax error.
func checkStatement(rw *rewritten) error {
	toks := rw.toks
	if len(toks) == 0 {
		return expr.Errorf(ErrSyntax, "empty statement; %s", expr.SelectShape)
	}
	first := strings.ToUpper(toks[0].Val)
	switch {
	case toks[0].Kind == parse.Ident && first == "WITH":
		return expr.UnsupportedClause("WITH", "common table expressions")
	case toks[0].Kind == parse.Ident && parse.IsCommand(first):
		return notSelect(rw)
	}
	for i, t := range toks {
		if t.IsSymbol(";") {
			if i != len(toks)-1 {
				return expr.Errorf(ErrSyntax, "a query is one statement; run the statement after ';' at line %d separately", line(rw.Src, toks[i+1].Start))
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
			return expr.UnsupportedClause("OVER", "window functions")
		case t.IsWord("table") && i+1 < len(rw.toks) && rw.toks[i+1].IsSymbol("("):
			return expr.UnsupportedClause("FROM TABLE(...) of this function", "the table functions kshare runs are TUMBLE, HOP and CUMULATE")
		case t.IsWord("match_recognize"):
			return expr.UnsupportedClause("MATCH_RECOGNIZE")
		case t.IsWord("fetch") && i > 0:
			return expr.UnsupportedClause("FETCH FIRST", "write LIMIT <n>")
		}
	}
	m := sqlparserPosition.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Kind: ErrSyntax, Msg: err.Error() + "; " + expr.SelectShape}
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
	if at == nil { // sqlparser stopped inside a token of ours
		for i, t := range rw.toks {
			if t.Start < end && end < t.End {
				at = &rw.toks[i]
				break
			}
		}
	}
	start := end
	if at != nil {
		start = at.Start
	}
	l, c := parse.Position(rw.Src, start)
	// At the end of the text sqlparser has read one past the last token.
	switch {
	case pos > len(strings.TrimRightFunc(rw.sql, unicode.IsSpace)):
		return expr.Errorf(ErrSyntax, "syntax error at line %d, column %d: unexpected end of statement; %s", l, c, expr.SelectShape)
	case at == nil: // inside text the rewrite put there
		return expr.Errorf(ErrSyntax, "syntax error at line %d, column %d; %s", l, c, expr.SelectShape)
	}
	near := at.Val
	if at.Kind == parse.Ident && isKeyword(near) && !structural[strings.ToLower(near)] {
		return expr.Errorf(ErrSyntax, "syntax error at line %d, column %d near '%s': %s is a reserved word; quote it with backticks (`%s`) to use it as a name",
			l, c, near, near, near)
	}
	return expr.Errorf(ErrSyntax, "syntax error at line %d, column %d near '%s'; %s", l, c, near, expr.SelectShape)
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
				l, c := parse.Position(rw.Src, t.Start)
				return expr.Errorf(ErrSyntax, "syntax error at line %d, column %d: nesting too deep (limit %d levels of parentheses)", l, c, MaxNesting)
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
