package parse_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// FuzzParse checks that Parse never panics, that every error it returns
// has a place and a kind, and that what it accepts is valid and prints
// (a table's or a model's DDL, each other statement's String) as text that
// parses back to an equal statement. The scenario files seed it.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/ddl/*.txt")
	for _, path := range files {
		for _, c := range readCases(&testing.T{}, path) {
			f.Add(c.input)
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		sts, err := parse.Parse(src)
		if err != nil {
			if sts != nil {
				t.Fatal("statements returned with an error")
			}
			var se *parse.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("not a SyntaxError: %T %v", err, err)
			}
			var all []*parse.SyntaxError
			var ses parse.SyntaxErrors
			if errors.As(err, &ses) {
				all = ses
			} else {
				all = []*parse.SyntaxError{se}
			}
			for _, e := range all {
				if e.Line < 1 || e.Column < 1 || e.Kind == nil || e.Msg == "" {
					t.Fatalf("bad error %#v", e)
				}
				if !errors.Is(err, parse.ErrSyntax) && !errors.Is(err, parse.ErrUnsupported) && !errors.Is(err, table.ErrInvalidDefinition) {
					t.Fatalf("error of no kind: %v", err)
				}
			}
			return
		}
		for _, st := range sts {
			if st == nil {
				t.Fatal("nil statement")
			}
			if ct, ok := st.(*table.CreateTable); ok {
				def := ct.Def
				if err := def.Validate(); err != nil {
					t.Fatalf("accepted an invalid definition: %v\n%q", err, src)
				}
				_ = def.Schema.Arrow()
				text := def.DDL(nil)
				back, err := parse.Parse(text)
				if err != nil || len(back) != 1 {
					t.Fatalf("DDL does not parse back: %v\n%s", err, text)
				}
				bd, ok := back[0].(*table.CreateTable)
				if !ok {
					t.Fatalf("DDL parses to %T", back[0])
				}
				want := def.Clone()
				want.IfNotExists = false
				if !bd.Def.Equal(want) {
					t.Fatalf("DDL parses to another definition:\n%s\n%s", text, bd.Def.DDL(nil))
				}
				continue
			}
			if cm, ok := st.(*table.CreateModel); ok {
				checkModelDDL(t, cm.Def)
				continue
			}
			text := st.String()
			back, err := parse.Parse(text)
			if err != nil || len(back) != 1 {
				t.Fatalf("%T %q does not parse back: %v", st, text, err)
			}
			if back[0].String() != text || !sameType(back[0], st) {
				t.Fatalf("%q parses back to %T %q", text, back[0], back[0].String())
			}
			if sel, ok := st.(*table.Select); ok && !strings.Contains(src, sel.SQL) {
				t.Fatalf("SELECT text %q is not from the script", sel.SQL)
			}
		}
	})
}

// checkModelDDL: a model the parser accepted is valid, and its DDL
// parses back to an equal definition.
func checkModelDDL(t *testing.T, def *table.ModelDefinition) {
	if err := def.Validate(); err != nil {
		t.Fatalf("accepted an invalid model: %v", err)
	}
	text := def.DDL(nil)
	back, err := parse.Parse(text)
	if err != nil || len(back) != 1 {
		t.Fatalf("model DDL does not parse back: %v\n%s", err, text)
	}
	bm, ok := back[0].(*table.CreateModel)
	want := def.Clone()
	want.IfNotExists = false
	if !ok || !bm.Def.Equal(want) {
		t.Fatalf("model DDL parses to another definition:\n%s\n%v", text, back[0])
	}
}

// sameType reports whether a and b are statements of one kind.
func sameType(a, b table.Statement) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }
