package parse_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kshare/kshare/parse"
)

func TestParseErrorKinds(t *testing.T) {
	for src, kind := range map[string]error{
		"CREATE TABLE t (a FOO)":                       parse.ErrSyntax,
		"CREATE TABLE t (a INT, b AS a + 1)":           parse.ErrUnsupported,
		"CREATE TABLE t (a INT, WATERMARK FOR a AS a)": parse.ErrUnsupported,
		"CREATE TABLE t (a INT) PARTITIONED BY (a)":    parse.ErrUnsupported,
		"CREATE TABLE t (a DECIMAL(40))":               parse.ErrInvalidDefinition,
		"CREATE TABLE t (a INT, A INT)":                parse.ErrInvalidDefinition,
		"SELECT 'x":                                    parse.ErrSyntax,
	} {
		_, err := parse.Parse(src)
		if !errors.Is(err, kind) {
			t.Errorf("%s: got %v, want %v", src, err, kind)
		}
		var se *parse.SyntaxError
		if !errors.As(err, &se) || se.Line != 1 || se.Column < 1 {
			t.Errorf("%s: no position in %#v", src, err)
		}
	}
	// Several refused clauses come back together.
	_, err := parse.Parse("CREATE TABLE t (a AS 1, PRIMARY KEY (a) NOT ENFORCED)")
	var ses parse.SyntaxErrors
	if !errors.As(err, &ses) || len(ses) != 2 {
		t.Errorf("got %#v", err)
	}
}

func TestPositionCountsCharacters(t *testing.T) {
	_, err := parse.Parse("CREATE TABLE t (\n  `caf\u00e9 \u00fc` INT, b FOO)")
	var se *parse.SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 19 {
		t.Fatalf("got %v", err)
	}
}

// A byte that is not UTF-8 is called that, wherever it is in the script.
func TestParseInvalidUTF8(t *testing.T) {
	for src, at := range map[string]string{
		"CREATE TABLE \xff (a INT)": "line 1, column 14",
		"SET 'a' = 'b\xfe'":         "line 1, column 13",
		"SELECT 1;\nSELECT `\xc3`":  "line 2, column 9",
	} {
		_, err := parse.Parse(src)
		if !errors.Is(err, parse.ErrSyntax) || !strings.Contains(err.Error(), at+": invalid UTF-8") {
			t.Errorf("%q: got %v, want invalid UTF-8 at %s", src, err, at)
		}
	}
}
