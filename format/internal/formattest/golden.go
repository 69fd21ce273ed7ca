package formattest

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata/ with the current output")

// A golden file holds cases separated by blank lines. A case is:
//
//	# comments
//	schema: order_id BIGINT, customer_id STRING
//	options: json.ignore-parse-errors=true json.timestamp-format.standard=ISO-8601
//	batch: 2
//	<one value per line>
//	----
//	<output>
//
// options and batch are optional. A value line is taken as it is, except
// "!nil" (a nil value, a Kafka tombstone), "!empty" (zero bytes), "!hex 0a0b"
// and "!q "Go-quoted"" for bytes a text file cannot hold. The output lists
// each failed value as the connector would log it, "t[0]@N: error" where N
// is the value's index, then the batches of decoded rows.

// Case is one scenario of a golden file.
type Case struct {
	raw     []string // the lines before "----", kept for rewriting
	line    int
	Schema  string
	Options []options.KV
	Batch   int
	Values  [][]byte
	Output  string
}

// Line is the line of the file the case starts at, for messages.
func (c *Case) Line() int { return c.line }

// Rewriting reports the -rewrite flag: a test that compares text of its own
// with a file rewrites the file instead.
func Rewriting() bool { return *rewrite }

// RunGolden runs every testdata/*.txt file against format f, each case with
// a checked allocator that must be empty at the end.
func RunGolden(t *testing.T, f table.Format) {
	RunFiles(t, "", func(t *testing.T, c *Case) string { return RunCase(t, f, c) })
}

// RunFiles runs every case of the golden files testdata/dir/*.txt through
// run, which returns the case's output, in a subtest per file, and compares
// the output with the file's (with -rewrite, rewrites the file). A format
// whose output shows more than RunCase's (a changelog's kinds) runs its
// files with a run of its own.
func RunFiles(t *testing.T, dir string, run func(t *testing.T, c *Case) string) {
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files under %s: %v", filepath.Join("testdata", dir), err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runFile(t, file, run)
		})
	}
}

// runFile runs every case of a golden file through run and compares or
// (with -rewrite) rewrites.
func runFile(t *testing.T, file string, run func(*testing.T, *Case) string) {
	cases, err := readGolden(file)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, c := range cases {
		got := run(t, c)
		if got != c.Output {
			if *rewrite {
				c.Output = got
				changed = true
				continue
			}
			t.Errorf("%s:%d: output differs\n--- got\n%s--- want\n%s", file, c.line, got, c.Output)
		}
	}
	if changed {
		if err := writeGolden(file, cases); err != nil {
			t.Fatal(err)
		}
	}
}

// RunCase decodes the case's values and returns the output text. It fails
// t when the decoder breaks its contract: a failed Decode that appended
// something, builders out of line, an error of the wrong kind, a leak.
func RunCase(t *testing.T, f table.Format, c *Case) string {
	t.Helper()
	var out strings.Builder
	cols, err := ParseColumns(c.Schema)
	if err != nil {
		t.Fatalf("line %d: schema: %v", c.line, err)
	}
	vals, err := options.Parse(c.Options, nil, f.Options())
	if err != nil {
		fmt.Fprintf(&out, "options error: %v\n", err)
		return out.String()
	}
	dec, err := f.NewDecoder(cols, vals)
	if err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
		return out.String()
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := (&types.Schema{Columns: cols}).Arrow()
	bb := batch.NewBuilder(mem, schema, nil, dec, c.Batch)
	defer bb.Release()
	builders := make([]array.Builder, len(cols))
	for i := range cols {
		builders[i] = bb.Field(i)
	}
	nb, total := 0, 0
	flush := func() {
		rec := bb.NewBatch()
		defer rec.Release()
		word := "rows"
		if rec.NumRows() == 1 {
			word = "row"
		}
		fmt.Fprintf(&out, "batch %d (%d %s)\n", nb, rec.NumRows(), word)
		PrintBatch(&out, rec)
		nb++
	}
	for k, v := range c.Values {
		before := Lengths(builders)
		rows := bb.Len()
		n, err := bb.Append(v)
		if err != nil {
			var de *table.DecodeError
			if !errors.Is(err, table.ErrSkipped) && !errors.As(err, &de) {
				t.Errorf("line %d: value %d: error %T is neither ErrSkipped nor a *table.DecodeError: %v", c.line, k, err, err)
			}
			if n != 0 {
				t.Errorf("line %d: value %d: Decode returned %d rows with an error", c.line, k, n)
			}
			if after := Lengths(builders); !slices.Equal(before, after) {
				t.Errorf("line %d: value %d: a failed Decode changed the builders: %v -> %v", c.line, k, before, after)
			}
			fmt.Fprintf(&out, "t[0]@%d: %v\n", k, err)
		}
		if err := Aligned(builders, rows+n); err != nil {
			t.Errorf("line %d: value %d: %v", c.line, k, err)
		}
		total += n
		if bb.Full() {
			flush()
		}
	}
	if bb.Len() > 0 {
		flush()
	}
	if total == 0 {
		out.WriteString("(no rows)\n")
	}
	return out.String()
}

func readGolden(file string) ([]*Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	var cases []*Case
	for i := 0; i < len(lines); {
		if strings.TrimSpace(lines[i]) == "" {
			i++
			continue
		}
		c := &Case{line: i + 1}
		inValues := false
		for ; i < len(lines) && lines[i] != "----"; i++ {
			l := lines[i]
			c.raw = append(c.raw, l)
			switch {
			case !inValues && strings.HasPrefix(l, "#"):
			case !inValues && strings.HasPrefix(l, "schema:"):
				c.Schema = strings.TrimSpace(strings.TrimPrefix(l, "schema:"))
			case !inValues && strings.HasPrefix(l, "options:"):
				for _, kv := range strings.Fields(strings.TrimPrefix(l, "options:")) {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return nil, fmt.Errorf("%s:%d: option %q is not key=value", file, i+1, kv)
					}
					c.Options = append(c.Options, options.KV{Key: k, Value: v})
				}
			case !inValues && strings.HasPrefix(l, "batch:"):
				n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(l, "batch:")))
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
				}
				c.Batch = n
			case l == "":
				return nil, fmt.Errorf("%s:%d: blank line before ----", file, i+1)
			default:
				inValues = true
				v, err := parseValue(l)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", file, i+1, err)
				}
				c.Values = append(c.Values, v)
			}
		}
		if i >= len(lines) {
			return nil, fmt.Errorf("%s:%d: case without ----", file, c.line)
		}
		i++ // "----"
		var out strings.Builder
		for ; i < len(lines) && lines[i] != ""; i++ {
			out.WriteString(lines[i])
			out.WriteByte('\n')
		}
		c.Output = out.String()
		cases = append(cases, c)
	}
	return cases, nil
}

func parseValue(l string) ([]byte, error) {
	switch {
	case l == "!nil":
		return nil, nil
	case l == "!empty":
		return []byte{}, nil
	case strings.HasPrefix(l, "!hex "):
		return hex.DecodeString(strings.ReplaceAll(strings.TrimPrefix(l, "!hex "), " ", ""))
	case strings.HasPrefix(l, "!q "):
		s, err := strconv.Unquote(strings.TrimPrefix(l, "!q "))
		return []byte(s), err
	}
	return []byte(l), nil
}

func writeGolden(file string, cases []*Case) error {
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteByte('\n')
		}
		for _, l := range c.raw {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		b.WriteString("----\n")
		b.WriteString(c.Output)
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}
