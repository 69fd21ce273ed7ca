package parse_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/format/raw"
	"github.com/kshare/kshare/internal/ddltest"
	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	_ "github.com/kshare/kshare/query" // types computed columns (table.SetExprTyper)
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/ddl/*.txt")

// A scenario file is a sequence of cases. A case is optional '#' comment
// lines, a SQL script, a line "----", and the expected output, which ends
// at a blank line. Output that holds blank lines is written between
// "----\n----" and "----\n----". The cases of one file share a catalog.
type goldenCase struct {
	comments []string
	input    string
	output   string
	line     int
}

func readCases(t *testing.T, path string) []goldenCase {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var cases []goldenCase
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		c := goldenCase{line: i + 1}
		for i < len(lines) && strings.HasPrefix(lines[i], "#") {
			c.comments = append(c.comments, lines[i])
			i++
		}
		var in []string
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("%s:%d: case without a ---- line", path, c.line)
		}
		i++ // ----
		var out []string
		if i < len(lines) && lines[i] == "----" {
			i++
			for i < len(lines) && !(lines[i] == "----" && i+1 < len(lines) && lines[i+1] == "----") {
				out = append(out, lines[i])
				i++
			}
			i += 2
		} else {
			for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
				out = append(out, lines[i])
				i++
			}
		}
		c.input = strings.Join(in, "\n")
		c.output = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases
}

func writeCases(t *testing.T, path string, cases []goldenCase) {
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, l := range c.comments {
			b.WriteString(l + "\n")
		}
		b.WriteString(c.input + "\n----\n")
		if strings.Contains(c.output, "\n\n") || strings.HasSuffix(c.output, "\n") {
			b.WriteString("----\n" + c.output + "\n----\n----\n")
		} else if c.output != "" {
			b.WriteString(c.output + "\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/ddl/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cases := readCases(t, path)
			cat := table.NewCatalogWith(ddltest.Registry())
			cat.SetModelBinder(model.Default)
			changed := false
			for i := range cases {
				c := &cases[i]
				got := run(t, cat, c.input)
				for _, v := range secretValues(c.input) {
					if strings.Contains(got, v) {
						t.Errorf("%s:%d: secret value %q shown:\n%s", path, c.line, v, got)
					}
				}
				if got != c.output {
					if *rewrite {
						c.output, changed = got, true
						continue
					}
					t.Errorf("%s:%d:\n%s\n--- got:\n%s\n--- want:\n%s", path, c.line, c.input, got, c.output)
				}
			}
			if changed {
				writeCases(t, path, cases)
			}
		})
	}
}

// run executes a script on cat and renders what each statement returned;
// the script stops at its first error, as a script in the shell does.
func run(t *testing.T, cat *table.Catalog, script string) string {
	sts, err := parse.Parse(script)
	if err != nil {
		checkKinds(t, err, parse.ErrSyntax, parse.ErrUnsupported, table.ErrInvalidDefinition)
		return "error: " + err.Error()
	}
	var out []string
	for _, st := range sts {
		checkRoundTrip(t, st)
		res, err := cat.Exec(st)
		if errors.Is(err, table.ErrNotCatalogStatement) {
			out = append(out, fmt.Sprintf("parsed %T: %s", st, st))
			continue
		}
		if err != nil {
			out = append(out, "error: "+err.Error())
			break
		}
		out = append(out, render(res))
		if ct, ok := st.(*table.CreateTable); ok && res.Message == fmt.Sprintf("table '%s' created", ct.Def.Name) {
			checkShowCreate(t, cat, ct.Def)
		}
		if cm, ok := st.(*table.CreateModel); ok && res.Message == fmt.Sprintf("model '%s' created", cm.Def.Name) {
			checkShowCreateModel(t, cat, cm.Def)
		}
	}
	return strings.Join(out, "\n")
}

// secretValues are the values of secret keys in a script's WITH clauses.
func secretValues(script string) []string {
	sts, err := parse.Parse(script)
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range sts {
		var kvs []options.KV
		switch st := st.(type) {
		case *table.CreateTable:
			kvs = st.Def.Options
		case *table.CreateModel:
			kvs = st.Def.Options
		}
		for _, kv := range kvs {
			secret := options.LooksSecret(kv.Key) || sharegroup.Options.Secret(kv.Key) ||
				json.Options.Secret(kv.Key) || raw.Options.Secret(kv.Key)
			for _, p := range model.Default.Providers() {
				secret = secret || p.Options().Secret(kv.Key)
			}
			if secret && len(kv.Value) >= 4 {
				out = append(out, kv.Value)
			}
		}
	}
	return out
}

func checkKinds(t *testing.T, err error, kinds ...error) {
	t.Helper()
	for _, k := range kinds {
		if errors.Is(err, k) {
			return
		}
	}
	t.Errorf("error of no known kind: %v", err)
}

// checkRoundTrip: a statement's canonical text parses back to it.
func checkRoundTrip(t *testing.T, st table.Statement) {
	t.Helper()
	text := st.String()
	if ct, ok := st.(*table.CreateTable); ok {
		text = ct.Def.DDL(nil)
		if ct.Def.IfNotExists {
			text = strings.Replace(text, "CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1)
		}
	}
	if cm, ok := st.(*table.CreateModel); ok {
		text = cm.Def.DDL(nil)
		if cm.Def.IfNotExists {
			text = strings.Replace(text, "CREATE MODEL ", "CREATE MODEL IF NOT EXISTS ", 1)
		}
	}
	back, err := parse.Parse(text)
	if err != nil || len(back) != 1 {
		t.Errorf("canonical text does not parse back: %v\n%s", err, text)
		return
	}
	if ct, ok := st.(*table.CreateTable); ok {
		if bt, ok := back[0].(*table.CreateTable); !ok || !bt.Def.Equal(ct.Def) {
			t.Errorf("canonical text parses to another definition:\n%s\n%v", text, back[0])
		}
		return
	}
	if cm, ok := st.(*table.CreateModel); ok {
		if bm, ok := back[0].(*table.CreateModel); !ok || !bm.Def.Equal(cm.Def) {
			t.Errorf("canonical text parses to another model:\n%s\n%v", text, back[0])
		}
		return
	}
	if back[0].String() != st.String() || fmt.Sprintf("%T", back[0]) != fmt.Sprintf("%T", st) {
		t.Errorf("canonical text parses to another statement: %q -> %q", st, back[0])
	}
}

// checkShowCreate: SHOW CREATE TABLE's text parses back to the definition
// created, secrets aside.
func checkShowCreate(t *testing.T, cat *table.Catalog, def *table.Definition) {
	t.Helper()
	tbl, err := cat.Lookup(def.Name)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := parse.Parse(tbl.DDL())
	if err != nil {
		t.Fatalf("SHOW CREATE TABLE output does not parse: %v\n%s", err, tbl.DDL())
	}
	got := sts[0].(*table.CreateTable).Def
	want := def.Clone()
	want.IfNotExists = false
	for i, kv := range want.Options {
		if tbl.Bound.Secret(kv.Key) {
			want.Options[i].Value = table.Masked
		}
	}
	if !got.Equal(want) {
		t.Errorf("SHOW CREATE TABLE parses to another definition:\n%s", tbl.DDL())
	}
}

// checkShowCreateModel: SHOW CREATE MODEL's text parses back to the
// definition created, secrets aside.
func checkShowCreateModel(t *testing.T, cat *table.Catalog, def *table.ModelDefinition) {
	t.Helper()
	m, err := cat.LookupModel(def.Name)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := parse.Parse(m.DDL())
	if err != nil {
		t.Fatalf("SHOW CREATE MODEL output does not parse: %v\n%s", err, m.DDL())
	}
	want := def.Clone()
	want.IfNotExists = false
	for i, kv := range want.Options {
		if m.Bound.Secret(kv.Key) {
			want.Options[i].Value = table.Masked
		}
	}
	if got := sts[0].(*table.CreateModel).Def; !got.Equal(want) {
		t.Errorf("SHOW CREATE MODEL parses to another definition:\n%s", m.DDL())
	}
}

// render writes a result as a plain text table, or its message; a single
// cell of several lines (SHOW CREATE TABLE) is written as it is.
func render(r *table.Result) string {
	if r.Columns == nil {
		return r.Message
	}
	if len(r.Columns) == 1 && len(r.Rows) == 1 && strings.Contains(r.Rows[0][0], "\n") {
		return r.Rows[0][0]
	}
	widths := make([]int, len(r.Columns))
	for i, c := range r.Columns {
		widths[i] = len(c)
	}
	for _, row := range r.Rows {
		for i, v := range row {
			widths[i] = max(widths[i], len(v))
		}
	}
	var lines []string
	line := func(cells []string) {
		var b strings.Builder
		for i, v := range cells {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(v + strings.Repeat(" ", widths[i]-len(v)))
		}
		lines = append(lines, strings.TrimRight(b.String(), " "))
	}
	line(r.Columns)
	rule := make([]string, len(widths))
	for i, w := range widths {
		rule[i] = strings.Repeat("-", w)
	}
	lines = append(lines, strings.Join(rule, "-+-"))
	for _, row := range r.Rows {
		line(row)
	}
	if len(r.Rows) == 0 {
		lines = append(lines, "(no rows)")
	}
	return strings.Join(lines, "\n")
}
