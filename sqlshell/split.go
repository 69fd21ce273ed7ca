package sqlshell

import (
	"strings"
	"unicode"

	"github.com/kshare/kshare/parse"
)

// Statement is one statement of a script: its text without the ';' that
// ends it, and the line of the script it starts on (from 1), so that an error
// can say where.
type Statement struct {
	Text string
	Line int
	// Col is the column (in characters, from 1) of the statement's first
	// character on its line.
	Col int
}

// Split cuts src into statements at each ';' that is outside quotes ('...',
// "...", `...`) and comments (-- to the end of the line, /* ... */). It reads
// the script with parse's lexer, the one every statement is parsed with, so
// that a ';' inside a string never ends a statement early. Statements
// holding only white space and comments are dropped.
//
// rest is the text after the last ';' when it holds more than white space and
// comments, else "". open reports whether src ends inside a quote or a block
// comment: the interactive shell then keeps reading lines even if the user
// typed a ';', because the statement cannot be complete yet.
//
// Split only cuts: text the lexer cannot read (a backslash, a byte that is
// not UTF-8) stays in its statement for the parser to report with its place.
func Split(src string) (stmts []Statement, rest Statement, open bool) {
	statement := func(start, end int) Statement {
		line, col := parse.Position(src, start)
		return Statement{Text: strings.TrimRightFunc(src[start:end], unicode.IsSpace), Line: line, Col: col}
	}
	lx := parse.NewLexer(src)
	first := -1 // where the statement being read starts; -1 before its first token
	for {
		t, err := lx.Next()
		if err == nil && t.Kind == parse.EOF {
			break
		}
		if err == nil && t.IsSymbol(";") {
			if first >= 0 {
				stmts = append(stmts, statement(first, t.Start))
			}
			first = -1
			continue
		}
		if first < 0 {
			first = t.Start
		}
	}
	if first >= 0 {
		rest = statement(first, len(src))
	}
	return stmts, rest, lx.Open()
}

// blank reports whether s holds only white space and complete comments.
func blank(s string) bool {
	t, err := parse.NewLexer(s).Next()
	return err == nil && t.Kind == parse.EOF
}
