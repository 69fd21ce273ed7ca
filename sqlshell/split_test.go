package sqlshell

import (
	"reflect"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		stmts []Statement
		rest  Statement
		open  bool
	}{
		{name: "empty", src: ""},
		{name: "blank and comments", src: "  \n-- note\n/* more */ ;;\n"},
		{name: "one without semicolon", src: "SHOW TABLES", rest: Statement{"SHOW TABLES", 1, 1}},
		{name: "two", src: "SHOW TABLES; DESCRIBE t;",
			stmts: []Statement{{"SHOW TABLES", 1, 1}, {"DESCRIBE t", 1, 14}}},
		{name: "lines", src: "SET 'a' = 'b';\n\n  SELECT *\n  FROM t;\nRESET",
			stmts: []Statement{{"SET 'a' = 'b'", 1, 1}, {"SELECT *\n  FROM t", 3, 3}},
			rest:  Statement{"RESET", 5, 1}},
		{name: "semicolon in quotes", src: "SELECT ';', \"a;b\", `c;d` FROM t; x",
			stmts: []Statement{{"SELECT ';', \"a;b\", `c;d` FROM t", 1, 1}}, rest: Statement{"x", 1, 34}},
		{name: "doubled quote", src: "SELECT 'it''s; fine' FROM t;",
			stmts: []Statement{{"SELECT 'it''s; fine' FROM t", 1, 1}}},
		{name: "semicolon in comments", src: "SELECT a -- b; c\nFROM t /* ; */;",
			stmts: []Statement{{"SELECT a -- b; c\nFROM t /* ; */", 1, 1}}},
		{name: "comments before a statement are not its start", src: "\n\n-- about t\n/* x */ DROP TABLE t;",
			stmts: []Statement{{"DROP TABLE t", 4, 9}}},
		{name: "columns count characters", src: "SHOW TABLES; /* \u00e9\u00e9 */ x;",
			stmts: []Statement{{"SHOW TABLES", 1, 1}, {"x", 1, 23}}},
		{name: "open quote", src: "SELECT 'abc;\n", rest: Statement{"SELECT 'abc;", 1, 1}, open: true},
		{name: "open comment", src: "SELECT /* ; \n", rest: Statement{"SELECT /* ;", 1, 1}, open: true},
		{name: "open backtick", src: "SELECT `a;", rest: Statement{"SELECT `a;", 1, 1}, open: true},
		{name: "quote closed on a later line", src: "SELECT 'a\nb'; SHOW TABLES;",
			stmts: []Statement{{"SELECT 'a\nb'", 1, 1}, {"SHOW TABLES", 2, 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmts, rest, open := Split(tc.src)
			if !reflect.DeepEqual(stmts, tc.stmts) {
				t.Errorf("statements\n got %+v\nwant %+v", stmts, tc.stmts)
			}
			if rest != tc.rest {
				t.Errorf("rest %+v, want %+v", rest, tc.rest)
			}
			if open != tc.open {
				t.Errorf("open %v, want %v", open, tc.open)
			}
		})
	}
}

// scripts seed every fuzz target that reads a script (FuzzSplit,
// FuzzSplitAgreesWithParse, FuzzRun): a ';' where it does not end a
// statement (in quotes, backticks and comments), unterminated text, and
// statements of each kind the shell runs, on the table t of newMemShell.
var scripts = []string{
	"", "a;b", "'x;'y;", "/* ; */ a -- ;\n b;", "`a``b`;c", "'",
	"SHOW TABLES; DESCRIBE t",
	"SELECT ';' FROM t; -- ; \n SET 'a' = 'b;c'",
	"/* ; */ SELECT `a;b` FROM t;;",
	"SELECT 'it''s;' FROM t /* x; */; RESET",
	"SELECT id FROM t WHERE id > 1 LIMIT 1",
	"SELECT id + 1, CAST(id AS STRING) FROM t",
	"SHOW TABLES; DESCRIBE t; SHOW CREATE TABLE t",
	"SET 'output' = 'json'; SELECT * FROM t",
	"SET 'max-rows' = '1'; RESET; SET",
	"CREATE TABLE u (a ARRAY<MAP<STRING, ROW<x INT>>>) WITH ('connector' = 'mem', 'format' = 'mem')",
	"DROP TABLE IF EXISTS t; SELECT * FROM t",
	"SELECT 'a;b' FROM t; -- c\n/* d */",
}

func addScripts(f *testing.F) {
	for _, s := range scripts {
		f.Add(s)
	}
}

// FuzzSplit checks that splitting never panics and never loses text: the
// statements and the rest, joined, hold every non-blank character of the
// input.
func FuzzSplit(f *testing.F) {
	addScripts(f)
	f.Fuzz(func(t *testing.T, src string) {
		stmts, rest, _ := Split(src)
		n := 0
		for _, st := range stmts {
			if st.Line < 1 || st.Col < 1 || blank(st.Text) {
				t.Fatalf("bad statement %+v", st)
			}
			n += len(st.Text)
		}
		n += len(rest.Text)
		if n > len(src) {
			t.Fatalf("statements hold %d bytes of a %d-byte input", n, len(src))
		}
	})
}
