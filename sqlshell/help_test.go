package sqlshell

import (
	"strings"
	"testing"

	"github.com/kshare/kshare/parse"
)

// TestHelpListsStatements: help shows every statement the parser reads, so
// a new statement cannot be left out of it.
func TestHelpListsStatements(t *testing.T) {
	for _, form := range parse.Statements() {
		if !strings.Contains(helpText, form) {
			t.Errorf("help does not list %s", form)
		}
	}
}
