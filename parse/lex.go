package parse

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kshare/kshare/types"
)

// Kind is the kind of a token of a SQL script.
type Kind int

const (
	EOF         Kind = iota
	Ident            // plain identifier or keyword
	QuotedIdent      // `quoted identifier`
	String           // 'string literal'
	DQString         // "double quoted": no Flink literal; SELECT refuses it
	Number           // 12, 1.5, .5, 1e3, 2.5E-3
	Symbol           // any other single character
	Comment          // -- to the end of the line, or /* ... */
	Invalid          // text the lexer could not read, returned with its error
)

// Token is one lexeme of a script. Val is the identifier or the literal
// with its quotes removed and doubled quotes undone; for other kinds it is
// the text. Start and End are byte offsets into the script, so that
// src[Start:End] is the token as written.
type Token struct {
	Kind       Kind
	Val        string
	Start, End int
}

// IsWord reports whether t is the unquoted word w, ignoring case.
func (t Token) IsWord(w string) bool { return t.Kind == Ident && strings.EqualFold(t.Val, w) }

// IsSymbol reports whether t is the symbol s.
func (t Token) IsSymbol(s string) bool { return t.Kind == Symbol && t.Val == s }

// Lexer turns a script into tokens following Flink SQL's rules: a string
// literal is quoted by ' with a doubled ' for a quote and no backslash
// escapes, an identifier may be quoted by backticks with a doubled backtick
// for a backtick, comments
// run from -- to the end of the line or between /* and */. Because one
// lexer knows every quote and comment, a ';' inside one never ends a
// statement, wherever statements are cut.
//
// After an error the lexer has passed the text it could not read, so a
// caller that only needs boundaries (the shell's Split) can go on.
type Lexer struct {
	src string
	pos int
	// Comments makes Next return comments as tokens; by default it skips
	// them.
	Comments bool
	open     bool
}

// NewLexer returns a lexer at the start of src.
func NewLexer(src string) *Lexer { return &Lexer{src: src} }

// Open reports whether the lexer stopped inside a quote or a block comment
// that the script does not close.
func (l *Lexer) Open() bool { return l.open }

// Next returns the next token; at the end of the script a token of kind
// EOF. An error is a *SyntaxError at the place of the problem, returned
// with a token of kind Invalid that spans the text passed.
func (l *Lexer) Next() (Token, error) {
	t, err := l.next()
	if err != nil {
		return Token{Kind: Invalid, Start: t.Start, End: l.pos}, err
	}
	return t, nil
}

// next returns a token, or an error with a token whose Start is where the
// text that could not be read starts.
func (l *Lexer) next() (Token, error) {
	for {
		l.skipSpace()
		start := l.pos
		if !strings.HasPrefix(l.src[l.pos:], "--") && !strings.HasPrefix(l.src[l.pos:], "/*") {
			break
		}
		if l.src[l.pos] == '-' {
			if i := strings.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
				l.pos += i
			} else {
				l.pos = len(l.src)
			}
		} else {
			i := strings.Index(l.src[l.pos+2:], "*/")
			if i < 0 {
				l.pos, l.open = len(l.src), true
				return Token{Start: start}, l.errAt(start, ErrSyntax, "unterminated comment: /* without */")
			}
			l.pos += 2 + i + 2
		}
		if l.Comments {
			return Token{Kind: Comment, Val: l.src[start:l.pos], Start: start, End: l.pos}, nil
		}
	}
	start := l.pos
	if l.pos >= len(l.src) {
		return Token{Kind: EOF, Start: start, End: start}, nil
	}
	r, w := utf8.DecodeRuneInString(l.src[l.pos:])
	switch {
	case r == utf8.RuneError && w == 1:
		l.pos++
		return Token{Start: start}, l.invalidUTF8(start)
	case r == '\\':
		// psql's habit (\d, \dt); an error at once, where the shell would
		// otherwise wait for a ';' that a backslash command never has.
		l.pos++
		return Token{Start: start}, l.errAt(start, ErrSyntax, NoBackslashCommands)
	case r == '\'' || r == '"' || r == '`':
		val, err := l.quoted(byte(r))
		if err != nil {
			return Token{Start: start}, err
		}
		kind := map[rune]Kind{'\'': String, '"': DQString, '`': QuotedIdent}[r]
		if kind == QuotedIdent && val == "" {
			return Token{Start: start}, l.errAt(start, ErrSyntax, "empty identifier ``")
		}
		return Token{Kind: kind, Val: val, Start: start, End: l.pos}, nil
	case isIdentStart(r):
		l.pos += w
		for l.pos < len(l.src) {
			r, w := utf8.DecodeRuneInString(l.src[l.pos:])
			if !isIdentPart(r) {
				break
			}
			l.pos += w
		}
		return Token{Kind: Ident, Val: l.src[start:l.pos], Start: start, End: l.pos}, nil
	case isDigit(r) || (r == '.' && l.pos+1 < len(l.src) && isDigit(rune(l.src[l.pos+1]))):
		l.number()
		return Token{Kind: Number, Val: l.src[start:l.pos], Start: start, End: l.pos}, nil
	}
	l.pos += w
	return Token{Kind: Symbol, Val: l.src[start:l.pos], Start: start, End: l.pos}, nil
}

// number passes a numeric literal: digits, a fraction, an exponent.
func (l *Lexer) number() {
	digits := func() {
		for l.pos < len(l.src) && isDigit(rune(l.src[l.pos])) {
			l.pos++
		}
	}
	digits()
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		digits()
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		j := l.pos + 1
		if j < len(l.src) && (l.src[j] == '+' || l.src[j] == '-') {
			j++
		}
		if j < len(l.src) && isDigit(rune(l.src[j])) {
			l.pos = j
			digits()
		}
	}
}

func (l *Lexer) skipSpace() {
	for l.pos < len(l.src) {
		r, w := utf8.DecodeRuneInString(l.src[l.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		l.pos += w
	}
}

// quoted reads a literal quoted by q, where a doubled q stands for itself.
// It passes the whole literal before it reports text that is not UTF-8.
func (l *Lexer) quoted(q byte) (string, error) {
	start := l.pos
	l.pos++
	var b strings.Builder
	for {
		i := strings.IndexByte(l.src[l.pos:], q)
		if i < 0 {
			l.pos, l.open = len(l.src), true
			what := map[byte]string{'\'': "string literal", '"': "quoted text", '`': "quoted identifier"}[q]
			return "", l.errAt(start, ErrSyntax, fmt.Sprintf("unterminated %s: %c without a closing %c", what, q, q))
		}
		b.WriteString(l.src[l.pos : l.pos+i])
		l.pos += i + 1
		if l.pos < len(l.src) && l.src[l.pos] == q {
			b.WriteByte(q)
			l.pos++
			continue
		}
		break
	}
	if !utf8.ValidString(l.src[start:l.pos]) {
		return "", l.invalidUTF8(start)
	}
	return b.String(), nil
}

// invalidUTF8 is the error for the first byte at or after off that is not
// UTF-8.
func (l *Lexer) invalidUTF8(off int) *SyntaxError {
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

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

func isIdentStart(r rune) bool {
	return r == '_' || (r != utf8.RuneError && unicode.IsLetter(r))
}

func isIdentPart(r rune) bool {
	return isIdentStart(r) || r == '$' || isDigit(r) || (r > 127 && unicode.IsDigit(r))
}

func (l *Lexer) errAt(off int, kind error, msg string) *SyntaxError {
	line, col := Position(l.src, off)
	return &SyntaxError{Line: line, Column: col, Msg: msg, Kind: kind}
}

// Position turns a byte offset of src into a line and a column, both from
// 1; the column counts characters, not bytes.
func Position(src string, off int) (line, col int) {
	off = min(off, len(src))
	line = 1 + strings.Count(src[:off], "\n")
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[lineStart:off])
}

// describe writes a token for "expected X, got Y".
func describe(t Token) string {
	const max = 40
	text := ""
	switch t.Kind {
	case EOF:
		return "end of input"
	case String:
		return "string " + types.QuoteString(cut(t.Val, max))
	case QuotedIdent:
		text = types.QuoteIdent(t.Val)
	default:
		text = t.Val
	}
	return "'" + cut(text, max) + "'"
}
