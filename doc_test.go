package kshare_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesAttach: the documentation tools (pkg.go.dev, go doc -http)
// show an example only under the identifier its name points at, and drop
// one whose name points at nothing in the package (ExampleRows_ReleaseRow
// did: Rows lives in package query). Every example in this directory must
// be shown.
func TestExamplesAttach(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	written := map[string]bool{}
	for _, p := range paths {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if !strings.HasSuffix(p, "_test.go") {
			continue
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				written[fn.Name.Name] = true
			}
		}
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/kshare/kshare")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	add := func(exs []*doc.Example) {
		for _, e := range exs {
			name := "Example"
			if e.Name != "" {
				name = "Example" + e.Name
			}
			shown[name] = true
		}
	}
	add(pkg.Examples)
	for _, f := range pkg.Funcs {
		add(f.Examples)
	}
	for _, ty := range pkg.Types {
		add(ty.Examples)
		for _, f := range ty.Funcs {
			add(f.Examples)
		}
		for _, m := range ty.Methods {
			add(m.Examples)
		}
	}
	if len(written) == 0 {
		t.Fatal("found no examples")
	}
	for name := range written {
		if !shown[name] {
			t.Errorf("%s is not shown by the documentation tools: name it after an identifier of this package (Example, ExampleEngine_Query_suffix)", name)
		}
	}
}
