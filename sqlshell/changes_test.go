package sqlshell

import (
	"bytes"
	"strings"
	"testing"
)

// An aggregate's changes carry their op in every output; the records of a
// batch are accepted once its changes were printed.
func TestUpdatingOutputs(t *testing.T) {
	const q = "SELECT id % 2 AS odd, COUNT(*) AS n FROM t GROUP BY id % 2"
	for _, c := range []struct{ output, want string }{
		{"table", "+----+-----+---+\n| op | odd | n |\n+----+-----+---+\n| +I |   1 | 1 |\n| +I |   0 | 1 |\n" +
			"| -U |   1 | 1 |\n| +U |   1 | 2 |\n+----+-----+---+\n4 changes\n"},
		{"tableau", "+----+-----+---+\n| op | odd | n |\n+----+-----+---+\n| +I |   1 | 1 |\n| +I |   0 | 1 |\n" +
			"| -U |   1 | 1 |\n| +U |   1 | 2 |\n+----+-----+---+\n4 changes\n"},
		{"changelog", "+I[1, 1]\n+I[0, 1]\n-U[1, 1]\n+U[1, 2]\n"},
		{"csv", "op,odd,n\n+I,1,1\n+I,0,1\n-U,1,1\n+U,1,2\n"},
		{"json", `{"op":"+I","odd":1,"n":1}` + "\n" + `{"op":"+I","odd":0,"n":1}` + "\n" +
			`{"op":"-U","odd":1,"n":1}` + "\n" + `{"op":"+U","odd":1,"n":2}` + "\n"},
	} {
		var out bytes.Buffer
		sh, src, _ := newMemShell(t, [][]int64{{1, 2}, {3}}, &out)
		if err := sh.RunScript(t.Context(), "-e", "SET 'output' = '"+c.output+"'"); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if err := sh.RunScript(t.Context(), "-e", q); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != c.want {
			t.Errorf("output %s:\n got %q\nwant %q", c.output, got, c.want)
		}
		v := src.verdict()
		for id := int64(1); id <= 3; id++ {
			if v[id] != "accept" {
				t.Errorf("output %s: record %d: %q, want accept", c.output, id, v[id])
			}
		}
	}
}

// A query without aggregation prints in changelog output as inserts, and
// in tableau output as in table output.
func TestInsertOnlyModes(t *testing.T) {
	for _, c := range []struct{ output, want string }{
		{"changelog", "+I[1]\n+I[2]\n"},
		{"tableau", "+----+\n| id |\n+----+\n|  1 |\n|  2 |\n+----+\n2 rows\n"},
	} {
		var out bytes.Buffer
		sh, _, _ := newMemShell(t, [][]int64{{1, 2}}, &out)
		if err := sh.RunScript(t.Context(), "-e", "SET 'output' = '"+c.output+"'; SELECT id FROM t"); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); !strings.HasSuffix(got, c.want) {
			t.Errorf("output %s:\n got %q\nwant suffix %q", c.output, got, c.want)
		}
	}
}

// On a terminal, table output keeps the current result in place: each
// batch draws the table again over the one before.
func TestLiveTable(t *testing.T) {
	var out bytes.Buffer
	sh, _, _ := newMemShell(t, [][]int64{{1, 2}, {3}, {5}}, &out)
	sh.cfg.Height = func() int { return 24 }
	if err := sh.RunScript(t.Context(), "-e", "SELECT COUNT(*) AS n FROM t"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// Three drawings; the second and third go up over the 5 lines of the
	// one before (border, header, border, row, border).
	if n := strings.Count(got, "\x1b[5A\r\x1b[J"); n != 2 {
		t.Errorf("drawn over %d times, want 2:\n%q", n, got)
	}
	last := got[strings.LastIndex(got, "\x1b[J")+len("\x1b[J"):]
	last = last[:strings.Index(last, "\r")] // the status line follows
	if want := "+---+\n| n |\n+---+\n| 4 |\n+---+\n"; last != want {
		t.Errorf("last drawing %q, want %q", last, want)
	}
	for _, n := range []string{"| 2 |", "| 3 |"} {
		if !strings.Contains(got, n) {
			t.Errorf("no drawing with %s", n)
		}
	}
}

// The live table removes a row HAVING stops keeping (-D), and counts the
// rows that do not fit on the screen below the table.
func TestLiveTableDeleteAndOverflow(t *testing.T) {
	var out bytes.Buffer
	sh, _, _ := newMemShell(t, [][]int64{{1, 2, 3}, {1}}, &out)
	sh.cfg.Height = func() int { return 8 } // room for 2 rows
	if err := sh.RunScript(t.Context(), "-e", "SELECT id, COUNT(*) AS n FROM t GROUP BY id HAVING COUNT(*) < 2"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	first := "+----+---+\n| id | n |\n+----+---+\n|  1 | 1 |\n|  2 | 1 |\n+----+---+\n(1 more row not shown)\n"
	if !strings.Contains(got, first) {
		t.Errorf("first drawing missing:\n%q\nin\n%q", first, got)
	}
	last := got[strings.LastIndex(got, "\x1b[J")+len("\x1b[J"):]
	last = last[:strings.Index(last, "\r")]
	if want := "+----+---+\n| id | n |\n+----+---+\n|  2 | 1 |\n|  3 | 1 |\n+----+---+\n"; last != want {
		t.Errorf("after the -D: %q, want %q", last, want)
	}
}
