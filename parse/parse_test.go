package parse_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

func TestParseErrorKinds(t *testing.T) {
	for src, kind := range map[string]error{
		"CREATE TABLE t (a FOO)":                       parse.ErrSyntax,
		"CREATE TABLE t (a INT, b AS )":                parse.ErrSyntax,
		"CREATE TABLE t (a INT, WATERMARK FOR a AS 1)": parse.ErrInvalidDefinition,
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
	_, err := parse.Parse("CREATE TABLE t (a INT, CONSTRAINT u UNIQUE (a)) PARTITIONED BY (a)")
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

// Type reads what a column declares, and TypeAt says where in the whole
// statement a problem is.
func TestType(t *testing.T) {
	for src, want := range map[string]string{
		"INT":                                    "INT",
		"character varying(5) not null":          "VARCHAR(5) NOT NULL",
		"TIMESTAMP(3) WITH LOCAL TIME ZONE":      "TIMESTAMP_LTZ(3)",
		"ARRAY<ROW<a INT, `b c` STRING 'desc'>>": "ARRAY<ROW<`a` INT, `b c` STRING 'desc'>>",
		"DOUBLE PRECISION /* a comment */":       "DOUBLE",
	} {
		got, err := parse.Type(src)
		if err != nil || got.String() != want {
			t.Errorf("%q: got %v, %v, want %s", src, got, err, want)
		}
	}
	for src, want := range map[string]error{
		"INT INT":        parse.ErrSyntax,
		"DECIMAL(1.5)":   parse.ErrSyntax,
		"VARCHAR(0)":     parse.ErrInvalidDefinition,
		"INTERVAL":       parse.ErrUnsupported,
		"":               parse.ErrSyntax,
		"ARRAY<INT":      parse.ErrSyntax,
		"TIME WITH TIME": parse.ErrUnsupported,
	} {
		if _, err := parse.Type(src); !errors.Is(err, want) {
			t.Errorf("%q: got %v, want %v", src, err, want)
		}
	}
	const stmt = "SELECT CAST(x AS\n  DECIMAL(40, 2)) FROM t"
	start := strings.Index(stmt, "DECIMAL")
	_, err := parse.TypeAt(stmt, start, strings.Index(stmt, ")) FROM")+1)
	var se *parse.SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 3 {
		t.Fatalf("got %v, want an error at line 2, column 3", err)
	}
}

// FuzzType checks that Type never panics, and that a type it accepts
// prints as text that reads back to the same type.
func FuzzType(f *testing.F) {
	for _, s := range []string{"INT", "ROW<a ARRAY<MAP<STRING, BYTES>>>", "TIMESTAMP(3) WITH LOCAL TIME ZONE NOT NULL", "DECIMAL(10, 2)", "CHAR VARYING(3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		dt, err := parse.Type(src)
		if err != nil {
			var se *parse.SyntaxError
			if !errors.As(err, &se) || se.Line < 1 || se.Column < 1 {
				t.Fatalf("%q: error without a place: %v", src, err)
			}
			return
		}
		if err := dt.Validate(); err != nil {
			t.Fatalf("%q: accepted an invalid type: %v", src, err)
		}
		back, err := parse.Type(dt.String())
		if err != nil || !back.Equal(dt) {
			t.Fatalf("%q prints as %q, which reads back as %v, %v", src, dt, back, err)
		}
	})
}

// IsCommand knows every statement Parse reads or refuses by name, and no
// query.
func TestIsCommand(t *testing.T) {
	for w, want := range map[string]bool{
		"create": true, "DESC": true, "show": true, "Set": true, "RESET": true, "alter": true,
		"insert": true, "use": true, "select": false, "WITH": false, "values": false, "orders": false,
	} {
		if got := parse.IsCommand(w); got != want {
			t.Errorf("IsCommand(%q) = %v, want %v", w, got, want)
		}
	}
}

func TestParseInsert(t *testing.T) {
	sts, err := parse.Parse("INSERT INTO `out put` SELECT id, name FROM src WHERE id > 1; SELECT 1")
	if err != nil {
		t.Fatal(err)
	}
	ins, ok := sts[0].(*table.Insert)
	if !ok || ins.Table != "out put" || ins.Select != "SELECT id, name FROM src WHERE id > 1" {
		t.Fatalf("got %#v, want INSERT INTO 'out put' with its SELECT's text", sts[0])
	}
	if len(sts) != 2 {
		t.Errorf("got %d statements, want 2", len(sts))
	}
	if got := ins.String(); got != "INSERT INTO `out put` SELECT id, name FROM src WHERE id > 1" {
		t.Errorf("String() = %q", got)
	}
}
