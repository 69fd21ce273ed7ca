package layout_test

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kshare/kshare"

// allowed reads testdata/imports.txt: each package's allowed imports.
func allowed(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open("testdata/imports.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pkg, imports, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("testdata/imports.txt:%d: %q is not 'package: imports'", n, line)
		}
		if _, dup := out[pkg]; dup {
			t.Fatalf("testdata/imports.txt:%d: package %s has a line already", n, pkg)
		}
		out[pkg] = strings.Fields(imports)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImports checks every package's imports of the project's packages
// (not its tests') against testdata/imports.txt.
func TestImports(t *testing.T) {
	rules := allowed(t)
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) string {
		if p == module {
			return "."
		}
		return strings.TrimPrefix(p, module+"/")
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := rel(f[0])
		seen[pkg] = true
		allow, ok := rules[pkg]
		if !ok {
			t.Errorf("package %s has no line in testdata/imports.txt: give it one, in its layer", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if r := rel(imp); !slices.Contains(allow, r) {
				t.Errorf("package %s imports %s, which testdata/imports.txt does not allow it: move what it needs to a lower layer, or say there why the import is meant", pkg, r)
			}
		}
	}
	for pkg := range rules {
		if !seen[pkg] {
			t.Errorf("testdata/imports.txt has a line for %s, which is not a package (any more)", pkg)
		}
	}
}

// TestDocGo checks that every package of the module has a doc.go that
// holds its package comment (what it owns and what it may import), and
// that no other file of the package has one, so that godoc shows the one
// in doc.go.
func TestDocGo(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}} {{.Dir}}`, module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, dir, _ := strings.Cut(line, " ")
		doc, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "doc.go"), nil, parser.PackageClauseOnly|parser.ParseComments)
		if os.IsNotExist(err) {
			t.Errorf("package %s has no doc.go: give it one whose package comment says what the package owns and what it may import", pkg)
			continue
		}
		if err != nil {
			t.Errorf("package %s: %v", pkg, err)
			continue
		}
		if doc.Doc == nil || strings.TrimSpace(doc.Doc.Text()) == "" {
			t.Errorf("package %s: its doc.go has no package comment (a comment right above the package clause)", pkg)
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if filepath.Base(name) == "doc.go" {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("package %s: %v", pkg, err)
				continue
			}
			if f.Name.Name == doc.Name.Name && f.Doc != nil {
				t.Errorf("package %s: %s has a package comment too: the package's one comment belongs in doc.go", pkg, filepath.Base(name))
			}
		}
	}
}
