package table

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a token of a SQL script.
type tokKind int

const (
	tokEOF      tokKind = iota
	tokIdent            // plain identifier or keyword
	tokQIdent           // `quoted identifier`
	tokString           // 'string literal'
	tokDQString         // "double quoted", only ever passed through (SELECT)
	tokNumber           // digits
	tokSymbol           // any other single character
)

// token is one lexeme. val is the identifier or the literal with its quotes
// removed and escapes undone; for other kinds it is the text.
type token struct {
	kind       tokKind
	val        string
	start, end int          // byte offsets into the script
	err        *SyntaxError // of a tokError: what the lexer could not read
}

// lexer turns a script into tokens, skipping white space and comments. It
// knows quotes, backticks and comments, so a ';' inside one never ends a
// statement.
type lexer struct {
	src string
	pos int
}

func (l *lexer) next() (token, error) {
	for {
		l.skipSpace()
		if strings.HasPrefix(l.src[l.pos:], "--") {
			if i := strings.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(l.src)
			}
			continue
		}
		if strings.HasPrefix(l.src[l.pos:], "/*") {
			i := strings.Index(l.src[l.pos+2:], "*/")
			if i < 0 {
				return token{}, l.errAt(l.pos, ErrSyntax, "unterminated comment: /* without */")
			}
			l.pos += 2 + i + 2
			continue
		}
		break
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, start: start, end: start}, nil
	}
	r, w := utf8.DecodeRuneInString(l.src[l.pos:])
	switch {
	case r == utf8.RuneError && w == 1:
		return token{}, l.invalidUTF8(l.pos)
	case r == '\\':
		// psql's habit (\d, \dt); an error at once, where the shell would
		// otherwise wait for a ';' that a backslash command never has.
		return token{}, l.errAt(start, ErrSyntax, NoBackslashCommands)
	case r == '\'' || r == '"' || r == '`':
		val, err := l.quoted(byte(r))
		if err != nil {
			return token{}, err
		}
		kind := map[rune]tokKind{'\'': tokString, '"': tokDQString, '`': tokQIdent}[r]
		if kind == tokQIdent && val == "" {
			return token{}, l.errAt(start, ErrSyntax, "empty identifier ``")
		}
		return token{kind: kind, val: val, start: start, end: l.pos}, nil
	case isIdentStart(r):
		l.pos += w
		for l.pos < len(l.src) {
			r, w := utf8.DecodeRuneInString(l.src[l.pos:])
			if !isIdentPart(r) {
				break
			}
			l.pos += w
		}
		return token{kind: tokIdent, val: l.src[start:l.pos], start: start, end: l.pos}, nil
	case r >= '0' && r <= '9':
		for l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '9' {
			l.pos++
		}
		return token{kind: tokNumber, val: l.src[start:l.pos], start: start, end: l.pos}, nil
	}
	l.pos += w
	return token{kind: tokSymbol, val: l.src[start:l.pos], start: start, end: l.pos}, nil
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		r, w := utf8.DecodeRuneInString(l.src[l.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		l.pos += w
	}
}

// quoted reads a literal quoted by q, where a doubled q stands for itself.
func (l *lexer) quoted(q byte) (string, error) {
	start := l.pos
	l.pos++
	var b strings.Builder
	for {
		i := strings.IndexByte(l.src[l.pos:], q)
		if i < 0 {
			what := map[byte]string{'\'': "string literal", '"': "quoted text", '`': "quoted identifier"}[q]
			return "", l.errAt(start, ErrSyntax, fmt.Sprintf("unterminated %s: %c without a closing %c", what, q, q))
		}
		if part := l.src[l.pos : l.pos+i]; !utf8.ValidString(part) {
			return "", l.invalidUTF8(l.pos)
		}
		b.WriteString(l.src[l.pos : l.pos+i])
		l.pos += i + 1
		if l.pos < len(l.src) && l.src[l.pos] == q {
			b.WriteByte(q)
			l.pos++
			continue
		}
		return b.String(), nil
	}
}

// invalidUTF8 is the error for the first byte at or after off that is not
// UTF-8.
func (l *lexer) invalidUTF8(off int) *SyntaxError {
	for off < len(l.src) {
		r, w := utf8.DecodeRuneInString(l.src[off:])
		if r == utf8.RuneError && w == 1 {
			break
		}
		off += w
	}
	return l.errAt(off, ErrSyntax, fmt.Sprintf("invalid UTF-8 (byte 0x%02x); a statement must be UTF-8 text", l.src[min(off, len(l.src)-1)]))
}

// NoBackslashCommands is the answer to a psql backslash command (\\d).
const NoBackslashCommands = "kshare has no backslash commands; try DESCRIBE t, SHOW TABLES or help"

func isIdentStart(r rune) bool {
	return r == '_' || (r != utf8.RuneError && unicode.IsLetter(r))
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || r == '$' || (r >= '0' && r <= '9') || (r > 127 && unicode.IsDigit(r))
}

// Error kinds of Parse. Every *SyntaxError wraps one, for errors.Is.
var (
	// ErrSyntax is returned for text that is not a statement kshare knows.
	ErrSyntax = errors.New("syntax error")
	// ErrUnsupported is returned for SQL that Flink accepts and kshare does
	// not (computed columns, WATERMARK, PRIMARY KEY, PARTITIONED BY, ...).
	ErrUnsupported = errors.New("unsupported SQL")
	// ErrInvalidDefinition is returned for a table definition that reads
	// well but cannot be (two columns of one name, DECIMAL(40, 2), ...).
	ErrInvalidDefinition = errors.New("invalid table definition")
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

func (es SyntaxErrors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.Is and errors.As see each problem.
func (es SyntaxErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

func (l *lexer) errAt(off int, kind error, msg string) *SyntaxError {
	line, col := position(l.src, off)
	return &SyntaxError{Line: line, Column: col, Msg: msg, Kind: kind}
}

// position turns a byte offset into a line and a column, both from 1.
func position(src string, off int) (line, col int) {
	off = min(off, len(src))
	line = 1 + strings.Count(src[:off], "\n")
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[lineStart:off])
}

// describe writes a token for "expected X, got Y".
func describe(t token) string {
	const max = 40
	text := ""
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return "string " + QuoteString(cut(t.val, max))
	case tokQIdent:
		text = QuoteIdent(t.val)
	default:
		text = t.val
	}
	return "'" + cut(text, max) + "'"
}
