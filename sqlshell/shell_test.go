package sqlshell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// memSchema is the schema of table t of newMemShell, for files a test
// writes as an export would.
var memSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

// memTable is table t of newMemShell: its source hands out the batches of
// ids the test gave, then ends, and records every row's fate.
type memTable struct {
	*tabletest.Source
	ids [][]int64
}

// verdict says, per id, "accept", "release" or "reject", as the shell
// settled it (a stream's Close giving back what the shell never settled
// does not count).
func (m memTable) verdict() map[int64]string {
	out := map[int64]string{}
	for _, v := range m.Verdicts() {
		if !v.ByClose {
			out[m.ids[v.Batch][v.Row]] = v.Disposition.String()
		}
	}
	return out
}

// testEngine adapts kshare.Engine to Engine.
type testEngine struct{ *kshare.Engine }

func (e testEngine) Query(ctx context.Context, sql string) (*query.Rows, error) {
	return e.Engine.Query(ctx, sql)
}

func newMemShell(t *testing.T, batches [][]int64, stdout io.Writer) (*Shell, memTable, *bytes.Buffer) {
	t.Helper()
	mem := tabletest.CheckedAlloc(t)
	c := &tabletest.Connector{Kind: "mem"}
	eng := testEngine{kshare.New(kshare.WithRegistry(tabletest.Registry(c, "mem")), kshare.WithAllocator(mem))}
	if _, err := eng.Exec(t.Context(), "CREATE TABLE t (id BIGINT) WITH ('connector' = 'mem', 'format' = 'mem')"); err != nil {
		t.Fatal(err)
	}
	src := c.Sources()[0]
	src.Batches = tabletest.IDBatches(t, mem, src.Schema, batches...)
	t.Cleanup(src.Release)
	var stderr bytes.Buffer
	return New(eng, Config{Stdout: stdout, Stderr: &stderr}), memTable{src, batches}, &stderr
}

func TestQueryAcceptsPrintedRows(t *testing.T) {
	var out bytes.Buffer
	sh, src, _ := newMemShell(t, [][]int64{{1, 2}, {3}}, &out)
	if err := sh.RunScript(t.Context(), "-e", "SELECT id FROM t WHERE id <> 2"); err != nil {
		t.Fatal(err)
	}
	want := "+----+\n| id |\n+----+\n|  1 |\n|  3 |\n+----+\n2 rows\n"
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out.String(), want)
	}
	// 2 was filtered out: processed, so accepted too.
	if got := fmt.Sprint(src.verdict()); got != "map[1:accept 2:accept 3:accept]" {
		t.Errorf("verdicts %s", got)
	}
}

// failWriter accepts n bytes, then fails.
type failWriter struct{ n int }

func (w *failWriter) Write(b []byte) (int, error) {
	if len(b) > w.n {
		k := w.n
		w.n = 0
		return k, errors.New("disk full")
	}
	w.n -= len(b)
	return len(b), nil
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("writer broke") }

// When writing fails, the batch being written goes back: it cannot be known
// which of its rows arrived. Batches before it were flushed and stay
// accepted. A panic while a batch is printed is an error like any other.
func TestQueryWriteFailureReleasesBatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		w        io.Writer
		batches  [][]int64
		err      string
		verdicts string
	}{
		// The header and the first row fit.
		{"error", &failWriter{n: 30}, [][]int64{{1}, {2, 3}}, "disk full", "map[1:accept 2:release 3:release]"},
		{"panic", panicWriter{}, [][]int64{{1, 2}}, "internal error: writer broke", "map[1:release 2:release]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh, src, _ := newMemShell(t, tc.batches, tc.w)
			err := sh.RunScript(t.Context(), "-e", "SELECT id FROM t")
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %s", err, tc.err)
			}
			if got := fmt.Sprint(src.verdict()); got != tc.verdicts {
				t.Errorf("verdicts %s, want %s", got, tc.verdicts)
			}
		})
	}
}

// A query stopped before a batch is printed releases all of it, keeps what
// was printed, and says it was interrupted.
func TestQueryInterruptReleasesUnprinted(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	sh, src, _ := newMemShell(t, [][]int64{{1, 2}, {3, 4}, {5}}, &out)
	src.Handing = func(i int) {
		if i == 1 {
			cancel(errors.New("test stop"))
		}
	}
	err := sh.RunScript(ctx, "-e", "SELECT id FROM t")
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "test stop") {
		t.Fatalf("error %v, want one wrapping ErrInterrupted and the cause", err)
	}
	if !strings.Contains(out.String(), "2 rows (query stopped; rows not shown were released)") {
		t.Errorf("output does not say the query stopped:\n%s", out.String())
	}
	v := src.verdict()
	if v[1] != "accept" || v[2] != "accept" || v[3] != "release" || v[4] != "release" {
		t.Errorf("verdicts %v", v)
	}
	if _, ok := v[5]; ok {
		t.Errorf("batch 3 was read after the stop: %v", v)
	}
}

// In csv and json output only data goes to stdout; messages go to stderr.
func TestOutputFormatsKeepStdoutData(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"csv", "id\n1\n2\n"},
		{"json", "{\"id\":1}\n{\"id\":2}\n"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			sh, _, stderr := newMemShell(t, [][]int64{{1, 2}}, &out)
			if err := sh.RunScript(t.Context(), "-e", "SET 'output' = '"+tc.format+"'; SELECT id FROM t"); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("stdout %q, want %q", out.String(), tc.want)
			}
			if !strings.Contains(stderr.String(), "'output' set to '"+tc.format+"'") {
				t.Errorf("stderr %q lacks the SET message", stderr.String())
			}
		})
	}
}

func TestScriptStopsAtFirstError(t *testing.T) {
	var out bytes.Buffer
	sh, _, _ := newMemShell(t, nil, &out)
	err := sh.RunScript(t.Context(), "x.sql", "SHOW TABLES;\n\nDESCRIBE nope;\nSHOW TABLES;")
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 3 || se.Name != "x.sql" {
		t.Fatalf("error %#v, want a ScriptError at x.sql line 3", err)
	}
	if !errors.Is(err, table.ErrNoTable) {
		t.Errorf("error %v does not wrap table.ErrNoTable", err)
	}
	if n := strings.Count(out.String(), "| table name |"); n != 1 {
		t.Errorf("SHOW TABLES printed %d times, want once (before the error):\n%s", n, out.String())
	}
}

// A panic below a statement is an error, not a crash.
func TestRunRecoversPanic(t *testing.T) {
	sh := New(panicEngine{}, Config{})
	err := sh.Run(t.Context(), "SHOW TABLES")
	if err == nil || !strings.Contains(err.Error(), "internal error: boom") {
		t.Fatalf("error %v, want an internal error", err)
	}
}

type panicEngine struct{}

func (panicEngine) Exec(context.Context, string) (*table.Result, error) { panic("boom") }
func (panicEngine) Query(context.Context, string) (*query.Rows, error)  { panic("boom") }
func (panicEngine) Settings() query.Settings                            { return query.DefaultSettings() }

// FuzzRun types arbitrary text at the shell: whatever it is, the shell
// answers with a result or an error, never an internal error (a panic it
// caught).
func FuzzRun(f *testing.F) {
	addScripts(f)
	f.Fuzz(func(t *testing.T, src string) {
		sh, _, _ := newMemShell(t, [][]int64{{1, 2}, {3}}, io.Discard)
		stmts, rest, _ := Split(src)
		if rest.Text != "" {
			stmts = append(stmts, rest)
		}
		for _, st := range stmts {
			if err := sh.Run(t.Context(), st.Text); err != nil && strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%q: %v", st.Text, err)
			}
		}
	})
}

// psql's backslash commands end without ';', so the interactive shell
// answers them at once instead of showing a continuation prompt; a script
// gets the same answer as a syntax error.
func TestBackslashCommands(t *testing.T) {
	for _, line := range []string{`\d`, `\d orders`, ` \dt `, `\l;`} {
		if cmd, ok := isShellCommand(line); !ok || cmd != "backslash" {
			t.Errorf("%q: got %q, %v; want backslash", line, cmd, ok)
		}
	}
	for line, want := range map[string]string{`\q`: "quit", `\h`: "help"} {
		if cmd, _ := isShellCommand(line); cmd != want {
			t.Errorf("%q: got %q, want %q", line, cmd, want)
		}
	}
	sh, _, _ := newMemShell(t, nil, io.Discard)
	err := sh.RunScript(context.Background(), "-e", `\d orders`)
	if err == nil || !strings.Contains(err.Error(), parse.NoBackslashCommands) {
		t.Fatalf("got %v, want %q", err, parse.NoBackslashCommands)
	}
}

// The first SELECT with WHERE of a session says that WHERE consumes what
// it filters out, once; --stats counts those rows apart from the rows shown.
func TestWhereNoteAndFilteredStats(t *testing.T) {
	sh, _, stderr := newMemShell(t, [][]int64{{1, 2}, {3}}, io.Discard)
	sh.cfg.Stats = true
	if err := sh.RunScript(t.Context(), "-e", "SELECT id FROM t LIMIT 0"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), WhereNote) {
		t.Fatalf("a query without WHERE printed the note:\n%s", stderr)
	}
	if err := sh.RunScript(t.Context(), "-e", "SELECT id FROM t WHERE id <> 2; SELECT id FROM t WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr.String(), WhereNote); n != 1 {
		t.Errorf("the note was printed %d times, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stderr.String(), "rows: 2\n") || !strings.Contains(stderr.String(), "filtered (accepted): 1\n") {
		t.Errorf("stats do not count the filtered row apart:\n%s", stderr)
	}
}
