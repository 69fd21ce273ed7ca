package parse_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kshare/kshare/parse"
)

// tokens renders every token of src as kind:value, or the error.
func tokens(src string, comments bool) string {
	lx := parse.NewLexer(src)
	lx.Comments = comments
	var out []string
	for {
		t, err := lx.Next()
		if err != nil {
			return strings.Join(append(out, "error "+err.Error()), " ")
		}
		if t.Kind == parse.EOF {
			return strings.Join(out, " ")
		}
		if src[t.Start:t.End] == "" {
			return fmt.Sprintf("empty token %+v", t)
		}
		out = append(out, fmt.Sprintf("%d:%s", t.Kind, t.Val))
	}
}

// The lexer follows Flink's rules: a doubled ' is a quote and a backslash
// is text in a string, a doubled backtick is a backtick in a name, and a
// number is read whole.
func TestLexer(t *testing.T) {
	k := func(kind parse.Kind) string { return fmt.Sprint(int(kind)) }
	for _, tc := range []struct {
		src      string
		comments bool
		want     string
	}{
		{src: `'it''s' 'a\b'`, want: k(parse.String) + ":it's " + k(parse.String) + `:a\b`},
		{src: "`a``b` \"x\"", want: k(parse.QuotedIdent) + ":a`b " + k(parse.DQString) + ":x"},
		{src: "1 1.5 .5 1e3 2.5E-3 1e", want: k(parse.Number) + ":1 " + k(parse.Number) + ":1.5 " + k(parse.Number) + ":.5 " +
			k(parse.Number) + ":1e3 " + k(parse.Number) + ":2.5E-3 " + k(parse.Number) + ":1 " + k(parse.Ident) + ":e"},
		{src: "a<>b", want: k(parse.Ident) + ":a " + k(parse.Symbol) + ":< " + k(parse.Symbol) + ":> " + k(parse.Ident) + ":b"},
		{src: "a -- c\n/* d */ b", want: k(parse.Ident) + ":a " + k(parse.Ident) + ":b"},
		{src: "a -- c\n/* d */ b", comments: true, want: k(parse.Ident) + ":a " + k(parse.Comment) + ":-- c " + k(parse.Comment) + ":/* d */ " + k(parse.Ident) + ":b"},
		{src: "x 'ab", want: k(parse.Ident) + ":x error line 1, column 3: unterminated string literal: ' without a closing '"},
		{src: "x ``", want: k(parse.Ident) + ":x error line 1, column 3: empty identifier ``"},
		{src: "\n  \\d", want: "error line 2, column 3: " + parse.NoBackslashCommands},
		{src: "'\u00e9\xff'", want: "error line 1, column 3: invalid UTF-8 (byte 0xff); a statement must be UTF-8 text"},
	} {
		if got := tokens(tc.src, tc.comments); got != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, got, tc.want)
		}
	}
}

// After an error the lexer has passed the text it could not read, and it
// says whether the script ended inside a quote or a comment.
func TestLexerGoesOn(t *testing.T) {
	lx := parse.NewLexer("\\ a /* b")
	var kinds []parse.Kind
	for {
		tok, err := lx.Next()
		kinds = append(kinds, tok.Kind)
		var se *parse.SyntaxError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("not a SyntaxError: %v", err)
		}
		if err == nil && tok.Kind == parse.EOF {
			break
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint([]parse.Kind{parse.Invalid, parse.Ident, parse.Invalid, parse.EOF}) || !lx.Open() {
		t.Fatalf("kinds %v, open %v", kinds, lx.Open())
	}
}
