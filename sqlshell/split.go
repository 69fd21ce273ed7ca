package sqlshell

import (
	"strings"
	"unicode"
	"unicode/utf8"
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
// "...", `...`) and comments (-- to the end of the line, /* ... */), the same
// rules parse.Parse follows, so that a ';' inside a string never ends a
// statement early. Statements holding only white space and comments are
// dropped.
//
// rest is the text after the last ';' when it holds more than white space and
// comments, else "". open reports whether src ends inside a quote or a block
// comment: the interactive shell then keeps reading lines even if the user
// typed a ';', because the statement cannot be complete yet.
func Split(src string) (stmts []Statement, rest Statement, open bool) {
	start, line, startLine := 0, 1, 1
	i := 0
	statement := func(end int) Statement {
		text := src[start:end]
		trimmed, skipped := trimLeading(text)
		off := start + len(text) - len(trimmed)
		col := 1 + utf8.RuneCountInString(src[strings.LastIndexByte(src[:off], '\n')+1:off])
		return Statement{Text: strings.TrimRightFunc(trimmed, unicode.IsSpace), Line: startLine + skipped, Col: col}
	}
	emit := func(end int) {
		if !blank(src[start:end]) {
			stmts = append(stmts, statement(end))
		}
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			j := strings.IndexByte(src[i:], '\n')
			if j < 0 {
				i = len(src)
			} else {
				i += j // the newline is counted by the case above
			}
		case c == '/' && strings.HasPrefix(src[i:], "/*"):
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				line += strings.Count(src[i:], "\n")
				i = len(src)
				open = true
				continue
			}
			line += strings.Count(src[i:i+2+j+2], "\n")
			i += 2 + j + 2
		case c == '\'' || c == '"' || c == '`':
			end, closed := skipQuoted(src, i)
			line += strings.Count(src[i:end], "\n")
			i = end
			if !closed {
				open = true
			}
		case c == ';':
			emit(i)
			i++
			start, startLine = i, line
		default:
			i++
		}
	}
	if !blank(src[start:]) || open {
		rest = statement(len(src))
	}
	return stmts, rest, open
}

// skipQuoted returns the offset after the quoted text that starts at src[i],
// where a doubled quote stands for itself, and whether the quote was closed.
func skipQuoted(src string, i int) (int, bool) {
	q := src[i]
	j := i + 1
	for {
		k := strings.IndexByte(src[j:], q)
		if k < 0 {
			return len(src), false
		}
		j += k + 1
		if j < len(src) && src[j] == q {
			j++
			continue
		}
		return j, true
	}
}

// blank reports whether s holds only white space and complete comments.
func blank(s string) bool {
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return true
			}
			i += j + 1
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return false
			}
			i += 2 + j + 2
		default:
			// Unicode white space beyond ASCII is rare enough in a
			// script that treating it as text only costs an error
			// message from the parser, which then names it.
			return false
		}
	}
	return true
}

// trimLeading removes the white space and comments before the statement's
// first word and returns how many lines it removed, so that the
// statement's line is the line of its first word.
func trimLeading(s string) (string, int) {
	i := 0
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v':
			i++
			continue
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j + 1
			}
			continue
		case strings.HasPrefix(s[i:], "/*"):
			if j := strings.Index(s[i+2:], "*/"); j >= 0 {
				i += 2 + j + 2
				continue
			}
		}
		break
	}
	return s[i:], strings.Count(s[:i], "\n")
}
