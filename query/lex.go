package query

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// The statement is read twice: once by a small scanner of our own, which
// turns Flink's spellings into ones xwb1989/sqlparser (a MySQL grammar)
// accepts, and then by sqlparser itself. The scanner knows only tokens; the
// grammar stays sqlparser's.
//
// What the rewrite does, and why:
//   - CAST(x AS <Flink type>) and TRY_CAST(...): MySQL's CAST knows neither
//     STRING, BIGINT, TIMESTAMP(3) nor most of Flink's types. The cast
//     becomes a call of a placeholder function whose number indexes the
//     parsed target type.
//   - DATE '...', TIME '...', TIMESTAMP '...': MySQL reads these as a column
//     with a string alias, which would silently select the wrong thing. They
//     become casts of the string.
//   - Backslashes in string literals: Flink has no backslash escapes; MySQL
//     has. Doubling them makes sqlparser hand back the text as written.
//   - || and &&: MySQL reads them as OR and AND; in Flink || concatenates
//     strings. Rather than give a different answer, they are refused.

type tokKind int

const (
	tWord    tokKind = iota + 1 // an unquoted identifier or keyword
	tIdent                      // a `quoted` identifier
	tString                     // a '...' literal
	tDString                    // a "..." literal (a string to sqlparser)
	tComment                    // -- ... or /* ... */
	tNumber
	tPunct
)

type token struct {
	kind       tokKind
	start, end int    // byte offsets in the source
	text       string // the source text of the token
}

// word reports whether t is the unquoted word w, ignoring case.
func (t token) word(w string) bool { return t.kind == tWord && strings.EqualFold(t.text, w) }

func (t token) punct(p string) bool { return t.kind == tPunct && t.text == p }

// scan splits src into tokens, dropping white space. It fails only on an
// unterminated literal or comment.
func scan(src string) ([]token, error) {
	if !utf8.ValidString(src) {
		return nil, invalidUTF8(src)
	}
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case c == '-' && i+1 < len(src) && src[i+1] == '-':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			toks = append(toks, token{kind: tComment, start: start, end: i, text: src[start:i]})
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, syntaxAt(src, start, "unterminated comment")
			}
			i += end + 4
			toks = append(toks, token{kind: tComment, start: start, end: i, text: src[start:i]})
			continue
		case c == '\'' || c == '"' || c == '`':
			i++
			for {
				if i >= len(src) {
					what := "string literal"
					if c == '`' {
						what = "quoted identifier"
					}
					return nil, syntaxAt(src, start, "unterminated "+what)
				}
				if src[i] == c {
					if i+1 < len(src) && src[i+1] == c { // doubled: the quote itself
						i += 2
						continue
					}
					i++
					break
				}
				i++
			}
			k := tString
			switch c {
			case '"':
				k = tDString
			case '`':
				k = tIdent
			}
			toks = append(toks, token{kind: k, start: start, end: i, text: src[start:i]})
			continue
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			for i < len(src) && (isDigit(src[i]) || src[i] == '.') {
				i++
			}
			if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
				j := i + 1
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				if j < len(src) && isDigit(src[j]) {
					i = j
					for i < len(src) && isDigit(src[i]) {
						i++
					}
				}
			}
			toks = append(toks, token{kind: tNumber, start: start, end: i, text: src[start:i]})
			continue
		case isWordStart(c):
			for i < len(src) && isWordPart(src[i]) {
				i++
			}
			toks = append(toks, token{kind: tWord, start: start, end: i, text: src[start:i]})
			continue
		}
		n := 1
		for _, op := range []string{"<=>", "<=", ">=", "<>", "!=", "||", "&&", "<<", ">>", ":="} {
			if strings.HasPrefix(src[i:], op) {
				n = len(op)
				break
			}
		}
		i += n
		toks = append(toks, token{kind: tPunct, start: start, end: i, text: src[start:i]})
	}
	return toks, nil
}

// invalidUTF8 says where a statement stops being UTF-8 text: the byte
// would otherwise reach the parser as a word it cannot read.
func invalidUTF8(src string) *Error {
	off := 0
	for off < len(src) {
		r, w := utf8.DecodeRuneInString(src[off:])
		if r == utf8.RuneError && w == 1 {
			break
		}
		off += w
	}
	return syntaxAt(src, off, fmt.Sprintf("invalid UTF-8 (byte 0x%02x); a statement must be UTF-8 text", src[min(off, len(src)-1)]))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isWordPart(c byte) bool { return isWordStart(c) || isDigit(c) || c == '$' }

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(src string, off int) (line, col int) {
	if off > len(src) {
		off = len(src)
	}
	line = 1 + strings.Count(src[:off], "\n")
	col = off - strings.LastIndex(src[:off], "\n")
	return line, col
}

// errorAt prefixes e's message with where in src it is.
func errorAt(src string, off int, e *Error) *Error {
	l, c := lineCol(src, off)
	e.Msg = fmt.Sprintf("line %d, column %d: %s", l, c, e.Msg)
	return e
}

func syntaxAt(src string, off int, msg string) *Error {
	l, c := lineCol(src, off)
	return errorf(ErrSyntax, "syntax error at line %d, column %d: %s", l, c, msg)
}

// castSpec is one CAST the rewrite took out of the statement.
type castSpec struct {
	typ        string // the target type as written, for messages
	start, end int    // where the target type stands in the source
	try        bool   // TRY_CAST: NULL instead of an error
	lit        bool   // a typed literal (TIMESTAMP '...'), printed as such
	kind       litKind
}

type litKind int

const (
	litDate litKind = iota + 1
	litTime
	litTimestamp
)

const castFunc = "__kshare_cast_"

type edit struct {
	start, end int // replaced source span
	with       string
}

// rewritten is a statement ready for sqlparser, with what is needed to map
// sqlparser's positions back onto the source.
type rewritten struct {
	src   string // as the user wrote it
	sql   string // for sqlparser
	casts []castSpec
	edits []edit // sorted, non-overlapping
	toks  []token
}

func rewrite(src string) (*rewritten, error) {
	all, err := scan(src)
	if err != nil {
		return nil, err
	}
	rw := &rewritten{src: src}
	var toks, comments []token
	for _, t := range all {
		switch {
		case t.kind == tComment && strings.HasPrefix(t.text, "/*+"):
			return nil, errorAt(src, t.start, unsupportedClause("a hint (/*+ ... */)", "set a table's options in its CREATE TABLE"))
		case t.kind == tComment:
			comments = append(comments, t)
		case t.kind == tDString:
			// Flink has no double-quoted literals; MySQL reads them as
			// strings, PostgreSQL as names. Either guess could answer
			// SELECT "name" wrongly, so neither is taken.
			return nil, errorAt(src, t.start, errorf(ErrSyntax,
				"double quotes are not supported: quote names with backticks (`name`) and strings with single quotes ('text')"))
		default:
			toks = append(toks, t)
		}
	}
	rw.toks = toks
	// typeSpans maps the AS of a CAST to the ) that ends its type: the
	// type is the cast's, not text to rewrite (CAST(x AS TIME) has no
	// typed literal in it).
	typeSpans := map[int]int{}
	for i := 0; i < len(toks); i++ {
		if end, ok := typeSpans[i]; ok {
			i = end - 1
			continue
		}
		t := toks[i]
		switch {
		case t.kind == tPunct && (t.text == "||" || t.text == "&&"):
			e := unsupportedExpr("||", "string concatenation")
			if t.text == "&&" {
				e = unsupportedExpr("&&", "write AND")
			}
			return nil, errorAt(src, t.start, e)
		case t.kind == tString:
			if strings.Contains(t.text, `\`) {
				rw.edits = append(rw.edits, edit{t.start, t.end, strings.ReplaceAll(t.text, `\`, `\\`)})
			}
		case (t.word("cast") || t.word("try_cast")) && i+1 < len(toks) && toks[i+1].punct("("):
			closeAt, asAt := -1, -1
			depth := 0
			for j := i + 1; j < len(toks); j++ {
				switch {
				case toks[j].punct("("):
					depth++
				case toks[j].punct(")"):
					depth--
				case depth == 1 && asAt < 0 && toks[j].word("as"):
					asAt = j
				}
				if depth == 0 {
					closeAt = j
					break
				}
			}
			if closeAt < 0 || asAt < 0 {
				continue // let the parser report it
			}
			typeSpans[asAt] = closeAt
			typ := strings.TrimSpace(src[toks[asAt].end:toks[closeAt].start])
			n := len(rw.casts)
			rw.casts = append(rw.casts, castSpec{typ: typ, start: toks[asAt].end, end: toks[closeAt].start, try: t.word("try_cast")})
			rw.edits = append(rw.edits,
				edit{t.start, t.end, fmt.Sprintf("%s%d", castFunc, n)},
				edit{toks[asAt].start, toks[closeAt].start, ""})
		case (t.word("date") || t.word("time") || t.word("timestamp")) && i+1 < len(toks) && toks[i+1].kind == tString:
			s := toks[i+1]
			n := len(rw.casts)
			k := map[string]litKind{"date": litDate, "time": litTime, "timestamp": litTimestamp}[strings.ToLower(t.text)]
			rw.casts = append(rw.casts, castSpec{typ: strings.ToUpper(t.text), lit: true, kind: k})
			body := s.text
			if strings.Contains(body, `\`) {
				body = strings.ReplaceAll(body, `\`, `\\`)
			}
			rw.edits = append(rw.edits, edit{t.start, s.end, fmt.Sprintf("%s%d(%s)", castFunc, n, body)})
			i++
		}
	}
	// Comments go, so that sqlparser neither reads MySQL's executable
	// comments (/*! ... */) nor trips on "--x"; one inside a CAST's type
	// or a typed literal goes with the text replaced around it.
	main := len(rw.edits)
	for _, c := range comments {
		covered := false
		for as, end := range typeSpans {
			covered = covered || c.start >= toks[as].start && c.end <= toks[end].start
		}
		for _, e := range rw.edits[:main] {
			covered = covered || c.start < e.end && e.start < c.end
		}
		if !covered {
			rw.edits = append(rw.edits, edit{c.start, c.end, " "})
		}
	}
	sort.Slice(rw.edits, func(a, b int) bool { return rw.edits[a].start < rw.edits[b].start })
	var b strings.Builder
	at := 0
	for _, e := range rw.edits {
		if e.start < at {
			// Edits come from disjoint tokens; if they ever overlap, refuse
			// the statement rather than hand sqlparser a mangled one.
			return nil, syntaxAt(src, e.start, "cannot read this statement here")
		}
		b.WriteString(src[at:e.start])
		b.WriteString(e.with)
		at = e.end
	}
	b.WriteString(src[at:])
	rw.sql = b.String()
	return rw, nil
}

// origin maps an offset in the rewritten text back onto the source. An
// offset inside a replacement maps to the start of what it replaced.
func (rw *rewritten) origin(off int) int {
	delta := 0 // rewritten minus source, for edits passed so far
	for _, e := range rw.edits {
		newStart := e.start + delta
		newEnd := newStart + len(e.with)
		if off < newStart {
			break
		}
		if off < newEnd {
			return e.start
		}
		delta += len(e.with) - (e.end - e.start)
	}
	return off - delta
}
