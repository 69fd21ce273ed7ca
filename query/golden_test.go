package query

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/lookup"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/table"
)

var rewriteGolden = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt from the actual output")

// Scenario files under testdata/ are cases separated by blank lines. A case
// is a directive line, its input, a line "----" and the expected output
// (which has no blank line). Lines starting with '#' between cases are
// comments. Directives:
//
//	table              input: CREATE TABLE statements (connector and format 'test')
//	rows <t> [batch=n] input: JSON lines, the rows <t>'s source hands out, n per batch
//	query [max-rows=n] [max-held=n] [allowed-lateness=d] [acks]
//	                   input: a SELECT; output: the result (header with Flink
//	                   types, then rows) or the error, and with acks what the
//	                   source was told
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runScenarios(t, f) })
	}
}

type scenario struct {
	pre       []string // comments and blank lines before the directive
	directive string
	input     []string
	want      []string
	line      int
}

func parseScenarios(t *testing.T, path string) ([]*scenario, []string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []*scenario
	var pre []string
	for i := 0; i < len(lines); {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			pre = append(pre, l)
			i++
			continue
		}
		sc := &scenario{pre: pre, directive: l, line: i + 1}
		pre = nil
		i++
		for i < len(lines) && lines[i] != "----" {
			sc.input = append(sc.input, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("%s:%d: case without ----", path, sc.line)
		}
		i++
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			sc.want = append(sc.want, lines[i])
			i++
		}
		out = append(out, sc)
	}
	return out, pre
}

func runScenarios(t *testing.T, path string) {
	scs, trailer := parseScenarios(t, path)
	mem := tabletest.CheckedAlloc(t)
	cat := table.NewCatalogWith(testRegistry())
	t.Cleanup(func() {
		for _, tb := range cat.List() {
			tb.Source.(*tabletest.Source).Release()
		}
	})
	var b strings.Builder
	changed := false
	for _, sc := range scs {
		got := runScenario(t, mem, cat, sc)
		if strings.Join(got, "\n") != strings.Join(sc.want, "\n") {
			changed = true
			if !*rewriteGolden {
				t.Errorf("%s:%d: %s\n%s\n---- got:\n%s\n---- want:\n%s", path, sc.line, sc.directive,
					strings.Join(sc.input, "\n"), strings.Join(got, "\n"), strings.Join(sc.want, "\n"))
			}
		}
		for _, l := range sc.pre {
			b.WriteString(l + "\n")
		}
		b.WriteString(sc.directive + "\n")
		for _, l := range sc.input {
			b.WriteString(l + "\n")
		}
		b.WriteString("----\n")
		for _, l := range got {
			b.WriteString(l + "\n")
		}
	}
	for _, l := range trailer {
		b.WriteString(l + "\n")
	}
	if *rewriteGolden && changed {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runScenario(t *testing.T, mem memory.Allocator, cat *table.Catalog, sc *scenario) []string {
	fields := strings.Fields(sc.directive)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	switch fields[0] {
	case "table":
		sts, err := parse.Parse(strings.Join(sc.input, "\n"))
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		var out []string
		for _, st := range sts {
			res, err := cat.Exec(st)
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			out = append(out, res.Message)
		}
		return out
	case "rows":
		if len(fields) < 2 {
			t.Fatalf("line %d: rows needs a table name", sc.line)
		}
		tb, err := cat.Lookup(fields[1])
		if err != nil {
			t.Fatalf("line %d: %v", sc.line, err)
		}
		src := tb.Source.(*tabletest.Source)
		src.Release()
		size, _ := strconv.Atoi(args["batch"])
		src.Batches = tabletest.FromJSON(t, mem, src.Schema, size, sc.input...)
		// topic=T: the rows' records are of topic T (flow.RowOrigins), of
		// partition p for the batches parts=p,p,... name.
		src.Topic, src.BatchPartition = args["topic"], nil
		if v, ok := args["parts"]; ok {
			for _, f := range strings.Split(v, ",") {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("line %d: parts: %v", sc.line, err)
				}
				src.BatchPartition = append(src.BatchPartition, int32(n))
			}
		}
		return []string{fmt.Sprintf("%d rows in %d batches", len(sc.input), len(src.Batches))}
	case "query":
		return runQuery(t, mem, cat, sc, args)
	}
	t.Fatalf("line %d: unknown directive %q", sc.line, fields[0])
	return nil
}

func runQuery(t *testing.T, mem memory.Allocator, cat *table.Catalog, sc *scenario, args map[string]string) []string {
	p, err := Prepare(strings.Join(sc.input, "\n"), cat)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	// Rows come from the data alone, never from how fast the test runs.
	o := Options{Alloc: mem, HoldLinger: -1}
	if v, ok := args["max-rows"]; ok {
		o.MaxRows, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, ok := args["max-held"]; ok {
		o.MaxHeld, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, ok := args["allowed-lateness"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("line %d: allowed-lateness: %v", sc.line, err)
		}
		// As the setting: 0 is no lateness, where Options' zero is the
		// default.
		o.AllowedLateness = d
		if d == 0 {
			o.AllowedLateness = -1
		}
	}
	// A SELECT without FROM has a source of its own, with no log.
	src, _ := p.Table().Source.(*tabletest.Source)
	// A lookup join: the stream's settling, then the lookups the
	// looked-up table's source logged.
	var looked *tabletest.Source
	if j, ok := p.Table().Source.(lookup.Joined); ok {
		src, _ = j.Join().Input.(*tabletest.Source)
		looked, _ = j.Join().Right.(*tabletest.Source)
	}
	// A join of two streams: both sides' settling, left then right, in a
	// state of its own (state=none: without one).
	if j, ok := p.Table().Source.(*intervalJoin); ok {
		src, _ = j.in[0].(*tabletest.Source)
		looked, _ = j.in[1].(*tabletest.Source)
		if args["state"] != "none" {
			o.State = newMemState()
		}
	}
	if v, ok := args["on-eval-error"]; ok && src != nil {
		// The table's policy for rows a query cannot use, for this query.
		src.OnEvalError = v
		defer func() { src.OnEvalError = "" }()
	}
	logFrom, lookedFrom := 0, 0
	if src != nil {
		logFrom = len(src.Log())
	}
	if looked != nil {
		lookedFrom = len(looked.Log())
	}
	rows, err := Run(context.Background(), p, o)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var head []string
	if p.Updating() {
		head = append(head, "op")
	}
	for _, c := range rows.Columns() {
		head = append(head, c.Name+" "+c.Type.String())
	}
	out := []string{strings.Join(head, " | ")}
	n := 0
	for rows.Next() {
		rec := rows.RecordBatch()
		fs := make([]func(int) (string, bool), rec.NumCols())
		for k := range fs {
			fs[k] = render.Formatter(rec.Column(k), rows.Columns()[k].Type)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, len(fs), len(fs)+1)
			if rows.Plan().Updating() {
				vals = append(vals[:0], rows.Op(i).String())
				vals = append(vals, make([]string, len(fs))...)
			}
			for k, f := range fs {
				vals[len(vals)-len(fs)+k] = render.OrNull(f(i))
			}
			out = append(out, strings.Join(vals, " | "))
			n++
		}
	}
	if _, ok := args["sorted"]; ok {
		// Rows in no set order (a join of two streams reads both at
		// once), in the order of their text.
		slices.Sort(out[1:])
	}
	if err := rows.Err(); err != nil {
		out = append(out, "error: "+err.Error())
	}
	rows.Close()
	out = append(out, fmt.Sprintf("-- %d rows, end: %s", n, rows.EndReason()))
	if late := rows.Stats().Late; late > 0 {
		out = append(out, fmt.Sprintf("-- late records: %d", late))
	}
	if n := rows.Stats().BeyondLateness; n > 0 {
		out = append(out, fmt.Sprintf("-- late beyond allowed lateness: %d", n))
	}
	if _, ok := args["acks"]; ok {
		out = append(out, src.Log()[logFrom:]...)
		if looked != nil {
			out = append(out, looked.Log()[lookedFrom:]...)
		}
	}
	return out
}
