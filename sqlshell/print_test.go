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
	"github.com/kshare/kshare/types"
)

func textCols(names ...string) []types.Column {
	cols := make([]types.Column, len(names))
	for k, n := range names {
		cols[k] = types.Column{Name: n}
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

// A value wider than 'max-column-width' (60 unless set) is cut to it with
// '...', so that every line of the table is as wide as the others; '0'
// shows it whole, its column as wide as it is.
func TestTableCutsLongValues(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, c := range []struct {
		name, set, cell string
	}{
		{"default", "", strings.Repeat("x", 57) + "..."},
		{"set", "SET 'max-column-width' = '10';", "xxxxxxx..."},
		{"whole", "SET 'max-column-width' = '0';", long},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			sh, _, _ := newMemShell(t, [][]int64{{1, 2}}, &out)
			if err := sh.RunScript(t.Context(), "-e", c.set+"SELECT id, LPAD('', 100, 'x') AS v FROM t"); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			text = text[strings.Index(text, "+"):] // after the SET's message
			lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			lines = lines[:len(lines)-1] // "2 rows"
			if len(lines) != 6 || lines[3] != "|  1 | "+c.cell+" |" {
				t.Fatalf("got\n%s\nwant the value as %q in every row", out.String(), c.cell)
			}
			for _, l := range lines {
				if len(l) != len(lines[0]) {
					t.Errorf("line %q is not as wide as the border %q", l, lines[0])
				}
			}
		})
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
func typed(t *testing.T, mem memory.Allocator) ([]types.Column, arrow.RecordBatch) {
	t.Helper()
	rowType := &types.DataType{Kind: types.Row, Fields: []types.Field{{Name: "x", Type: types.IntType()}, {Name: "y", Type: types.StringType()}}}
	cols := []types.Column{
		{Name: "b", Type: types.BooleanType()},
		{Name: "i", Type: types.BigIntType()},
		{Name: "d", Type: types.DoubleType()},
		{Name: "nan", Type: types.DoubleType()},
		{Name: "dec", Type: types.DecimalType(10, 2)},
		{Name: "s", Type: types.StringType()},
		{Name: "bytes", Type: types.BytesType()},
		{Name: "ts", Type: types.TimestampLTZType(3)},
		{Name: "arr", Type: &types.DataType{Kind: types.Array, Elem: types.IntType()}},
		{Name: "m", Type: types.MapType(types.StringType().WithNotNull(true), types.IntType())},
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
	// The row as format 'json' writes it, in Flink's json format: a
	// TIMESTAMP_LTZ in UTC ending in Z, a DOUBLE as the shortest number
	// that reads back (in plain digits below 1e21).
	want := []string{
		`{"b":true,"i":-42,"d":15000000000,"nan":"NaN","dec":-12.50,"s":"tab\t\"q\"","bytes":"AAEC","ts":"2023-11-14 22:13:20.123Z","arr":[1,null],"m":{"k":7},"r":{"x":3,"y":"z"}}`,
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

// TestJSONStatementResult: a statement's result in json output has its
// integer columns as numbers ("" is NULL there: a number not known), its
// STRING columns as strings, an empty one included.
func TestJSONStatementResult(t *testing.T) {
	var b bytes.Buffer
	sh, _, _ := newMemShell(t, nil, &b)
	if err := sh.Run(t.Context(), "SET 'output' = 'json'"); err != nil {
		t.Fatal(err)
	}
	res := &table.Result{
		Columns: []string{"topic", "partition", "lag", "members"},
		Types:   []*types.DataType{types.StringType(), types.IntType(), types.BigIntType(), types.StringType()},
		Rows:    [][]string{{"orders", "0", "12", "m1, m2"}, {"say \"hi\"", "1", "", ""}},
	}
	if err := sh.printResult(res); err != nil {
		t.Fatal(err)
	}
	want := `{"topic":"orders","partition":0,"lag":12,"members":"m1, m2"}` + "\n" +
		`{"topic":"say \"hi\"","partition":1,"lag":null,"members":""}` + "\n"
	if b.String() != want {
		t.Errorf("got\n%swant\n%s", b.String(), want)
	}

	// Without Types every column is a STRING.
	b.Reset()
	if err := sh.printResult(&table.Result{Columns: []string{"key", "value"}, Rows: [][]string{{"max-rows", "0"}}}); err != nil {
		t.Fatal(err)
	}
	if want := `{"key":"max-rows","value":"0"}` + "\n"; b.String() != want {
		t.Errorf("got %s, want %s", b.String(), want)
	}

	// A value that is not the number its column says is an error, not a
	// string in a numeric column.
	b.Reset()
	bad := &table.Result{Columns: []string{"n"}, Types: []*types.DataType{types.BigIntType()}, Rows: [][]string{{"many"}}}
	if err := sh.printResult(bad); err == nil || err.Error() != "column `n` holds \"many\", which is not a BIGINT" {
		t.Errorf("error %v, want one naming the column and the value", err)
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
