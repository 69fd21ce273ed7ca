package sqlshell

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/table"
)

func textCols(names ...string) []table.Column {
	cols := make([]table.Column, len(names))
	for k, n := range names {
		cols[k] = table.Column{Name: n}
	}
	return cols
}

// printTable prints rows under a header of the named columns, as a query
// does, and returns the text; a nil row stands for a flush between batches.
// Every call must succeed.
func printTable(t *testing.T, term *terminal, names []string, rows ...[]string) string {
	t.Helper()
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	p := newTablePrinter(w, textCols(names...), term)
	for _, r := range rows {
		var err error
		if r == nil {
			err = p.flush()
		} else {
			err = p.cells(r)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.end(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestTablePrinter: values are escaped, an empty result is a header alone,
// and on a terminal the header comes again every screen, and a wider value
// later widens its column under a new header.
func TestTablePrinter(t *testing.T) {
	for _, tc := range []struct {
		name string
		term *terminal
		cols []string
		rows [][]string
		want string
	}{
		{"static", nil, []string{"name", "type"}, [][]string{{"id", "BIGINT"}, {"a\nb\x1b[31m", "STRING"}}, `+--------------+--------+
| name         | type   |
+--------------+--------+
| id           | BIGINT |
| a\nb\x1b[31m | STRING |
+--------------+--------+
`},
		{"empty", nil, []string{"table name"}, nil, "+------------+\n| table name |\n+------------+\n"},
		{"screens", &terminal{height: func() int { return 7 }}, []string{"n"}, [][]string{{"1"}, {"2"}, {"3"}, {"4"}, nil, {"12345"}}, `+---+
| n |
+---+
| 1 |
| 2 |
| 3 |
+---+
+---+
| n |
+---+
| 4 |
+-------+
+-------+
| n     |
+-------+
| 12345 |
+-------+
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := printTable(t, tc.term, tc.cols, tc.rows...); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// A value wider than maxCellWidth is printed whole without widening its
// column past the bound.
func TestTablePrinterLongValue(t *testing.T) {
	long := strings.Repeat("x", 100)
	got := printTable(t, nil, []string{"v"}, []string{long})
	if !strings.Contains(got, "| "+long+" |") {
		t.Errorf("long value not printed whole:\n%s", got)
	}
	if !strings.HasPrefix(got, "+"+strings.Repeat("-", maxCellWidth+2)+"+\n") {
		t.Errorf("column not bounded to %d:\n%s", maxCellWidth, got)
	}
}

func TestCSVPrinter(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	p := newCSVPrinter(w, textCols("a", "b,c"))
	p.cells([]string{`say "hi"`, "x\ny"})
	p.end()
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "b,c"}, {`say "hi"`, "x\ny"}}
	if len(recs) != 2 || recs[0][1] != want[0][1] || recs[1][0] != want[1][0] || recs[1][1] != want[1][1] {
		t.Errorf("got %q, want %q", recs, want)
	}
}

// typed builds one batch with a column per kind the JSON output renders
// differently, and two rows: values, and NULLs.
func typed(t *testing.T, mem memory.Allocator) ([]table.Column, arrow.RecordBatch) {
	t.Helper()
	rowType := &table.DataType{Kind: table.Row, Fields: []table.Field{{Name: "x", Type: table.IntType()}, {Name: "y", Type: table.StringType()}}}
	cols := []table.Column{
		{Name: "b", Type: table.BooleanType()},
		{Name: "i", Type: table.BigIntType()},
		{Name: "d", Type: table.DoubleType()},
		{Name: "nan", Type: table.DoubleType()},
		{Name: "dec", Type: table.DecimalType(10, 2)},
		{Name: "s", Type: table.StringType()},
		{Name: "bytes", Type: table.BytesType()},
		{Name: "ts", Type: table.TimestampLTZType(3)},
		{Name: "arr", Type: &table.DataType{Kind: table.Array, Elem: table.IntType()}},
		{Name: "m", Type: table.MapType(table.StringType().WithNotNull(true), table.IntType())},
		{Name: "r", Type: rowType},
	}
	fields := make([]arrow.Field, len(cols))
	for k, c := range cols {
		fields[k] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: true}
	}
	rb := array.NewRecordBuilder(mem, arrow.NewSchema(fields, nil))
	defer rb.Release()
	rb.Field(0).(*array.BooleanBuilder).Append(true)
	rb.Field(1).(*array.Int64Builder).Append(-42)
	rb.Field(2).(*array.Float64Builder).Append(1.5e10)
	rb.Field(3).(*array.Float64Builder).Append(math.NaN())
	rb.Field(4).(*array.Decimal128Builder).Append(decimal128.FromI64(-1250))
	rb.Field(5).(*array.StringBuilder).Append("tab\t\"q\"")
	rb.Field(6).(*array.BinaryBuilder).Append([]byte{0, 1, 2})
	rb.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000123))
	lb := rb.Field(8).(*array.ListBuilder)
	lb.Append(true)
	lb.ValueBuilder().(*array.Int32Builder).Append(1)
	lb.ValueBuilder().(*array.Int32Builder).AppendNull()
	mb := rb.Field(9).(*array.MapBuilder)
	mb.Append(true)
	mb.KeyBuilder().(*array.StringBuilder).Append("k")
	mb.ItemBuilder().(*array.Int32Builder).Append(7)
	sb := rb.Field(10).(*array.StructBuilder)
	sb.Append(true)
	sb.FieldBuilder(0).(*array.Int32Builder).Append(3)
	sb.FieldBuilder(1).(*array.StringBuilder).Append("z")
	for k := range cols {
		rb.Field(k).AppendNull()
	}
	return cols, rb.NewRecordBatch()
}

func TestJSONPrinter(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cols, rec := typed(t, mem)
	defer rec.Release()

	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	p := newJSONPrinter(w, cols)
	p.batch(rec)
	for i := 0; i < int(rec.NumRows()); i++ {
		if err := p.row(i); err != nil {
			t.Fatal(err)
		}
	}
	p.end()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{
		`{"b":true,"i":-42,"d":1.5e+10,"nan":"NaN","dec":-12.50,"s":"tab\t\"q\"","bytes":"AAEC","ts":"2023-11-14 22:13:20.123","arr":[1,null],"m":{"k":7},"r":{"x":3,"y":"z"}}`,
		`{"b":null,"i":null,"d":null,"nan":null,"dec":null,"s":null,"bytes":null,"ts":null,"arr":null,"m":null,"r":null}`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d\n got %s\nwant %s", i, lines[i], want[i])
		}
		if !json.Valid([]byte(lines[i])) {
			t.Errorf("line %d is not valid JSON: %s", i, lines[i])
		}
	}
}

func TestCleanCell(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"caf\u00e9":    "caf\u00e9",
		"a\tb":         `a\tb`,
		"\x1b[2J":      `\x1b[2J`,
		"bad\xffutf8":  `bad\xffutf8`,
		"\u0085 nel":   `\u0085 nel`,
		"\u65e5\u672c": "\u65e5\u672c",
	} {
		if got := cleanCell(in); got != want {
			t.Errorf("cleanCell(%q) = %q, want %q", in, got, want)
		}
	}
}
