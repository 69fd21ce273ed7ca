package expr

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The registry is what SHOW FUNCTIONS will list: sorted, one entry a name,
// each with a signature that names it and a description.
func TestFunctionsListed(t *testing.T) {
	fs := Functions()
	if len(fs) == 0 {
		t.Fatal("no functions registered")
	}
	if !slices.IsSortedFunc(fs, func(a, b FunctionInfo) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("Functions is not sorted by name")
	}
	for k, f := range fs {
		if k > 0 && fs[k-1].Name == f.Name {
			t.Errorf("%s listed twice", f.Name)
		}
		if f.Name != strings.ToUpper(f.Name) || !strings.HasPrefix(f.Signature, f.Name) {
			t.Errorf("%s: signature %q does not start with the name", f.Name, f.Signature)
		}
		if f.Description == "" || strings.Contains(f.Description, "\n") {
			t.Errorf("%s: description %q is not one line", f.Name, f.Description)
		}
	}
}

func TestSignature(t *testing.T) {
	for _, c := range []struct {
		d    funcDef
		want string
	}{
		{funcDef{name: "F", args: []argKind{strArg}}, "F(STRING)"},
		{funcDef{name: "F", args: []argKind{strArg, intArg, strArg}, min: 2}, "F(STRING, INTEGER[, STRING])"},
		{funcDef{name: "F", args: []argKind{numArg, intArg}, min: 1}, "F(numeric[, INTEGER])"},
		{funcDef{name: "F", args: []argKind{anyArg}, variadic: true}, "F(any type, ...)"},
	} {
		if got := c.d.signature(); got != c.want {
			t.Errorf("signature = %q, want %q", got, c.want)
		}
	}
}

// TestDocsListFunctions fails when docs/sql.md, the SQL reference, misses
// a function or aggregate the registry has.
func TestDocsListFunctions(t *testing.T) {
	data, err := os.ReadFile("../docs/sql.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Functions() {
		if !strings.Contains(string(data), "`"+f.Name) {
			t.Errorf("docs/sql.md does not list %s", f.Name)
		}
	}
}
