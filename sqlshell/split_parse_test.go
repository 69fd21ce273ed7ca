package sqlshell

import (
	"testing"

	"github.com/kshare/kshare/parse"
)

// FuzzSplitAgreesWithParse checks that the shell cuts a script where the
// parser does: for a script that parses, Split finds as many statements,
// and each parses alone to one statement of the same text.
func FuzzSplitAgreesWithParse(f *testing.F) {
	addScripts(f)
	f.Fuzz(func(t *testing.T, src string) {
		want, err := parse.Parse(src)
		if err != nil {
			return
		}
		stmts, rest, open := Split(src)
		if rest.Text != "" {
			stmts = append(stmts, rest)
		}
		if open || len(stmts) != len(want) {
			t.Fatalf("%q: Split found %d statements (open %v), Parse %d", src, len(stmts), open, len(want))
		}
		for i, st := range stmts {
			got, err := parse.Parse(st.Text)
			if err != nil || len(got) != 1 || got[0].String() != want[i].String() {
				t.Fatalf("%q: statement %d %q parses to %v, %v; the script gave %q", src, i, st.Text, got, err, want[i])
			}
		}
	})
}
