package query

import (
	"errors"
	"strings"
	"testing"
)

// A byte that is not UTF-8 is called that, not a reserved word.
func TestInvalidUTF8(t *testing.T) {
	_, err := Prepare("SELECT id\xff FROM orders", nil)
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "line 1, column 10: invalid UTF-8 (byte 0xff)") {
		t.Fatalf("got %v, want a syntax error that says invalid UTF-8 at line 1, column 10", err)
	}
}

// Columns count characters, as the DDL's errors do, so accents before a
// syntax error do not move it; the token is quoted as written.
func TestErrorColumnCountsCharacters(t *testing.T) {
	_, err := Prepare("SELECT 'caf\u00e9 cr\u00e8me' AS dessert,\n  \u00e9t\u00e9, FROM orders", nil)
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "line 2, column 8 near 'FROM'") {
		t.Fatalf("got %v, want a syntax error at line 2, column 8 near 'FROM'", err)
	}
}

// A name in letters beyond ASCII is a name, as in Flink, though sqlparser
// reads only ASCII letters in a bare one.
func TestNonASCIIName(t *testing.T) {
	plan, err := Prepare("SELECT 1 AS \u00e9t\u00e9", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Columns()[0].Name; got != "\u00e9t\u00e9" {
		t.Fatalf("column %q, want %q", got, "\u00e9t\u00e9")
	}
}
