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
