package sqlshell

import (
	"bufio"
	"encoding/csv"
	"fmt"

	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/mattn/go-runewidth"

	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// Output formats, the values of the 'output' setting. Flink's result
// modes are three of them: 'table' (on a terminal, an aggregate's result is
// a table kept up to date in place), 'tableau' (every change a row of a
// bordered table) and 'changelog' (one line per change: +I[ann, 2]). A
// query without aggregation prints the same in 'table' and 'tableau'.
const (
	OutputTable     = "table"
	OutputTableau   = "tableau"
	OutputChangelog = "changelog"
	OutputCSV       = "csv"
	OutputJSON      = "json"
)

// A printer writes one result in one output format. Rows are buffered until
// flush, which is where they reach the writer: the shell settles a batch as
// delivered only after flush returned.
type printer interface {
	// batch makes rec the batch that row reads.
	batch(rec arrow.RecordBatch)
	// row buffers row i of the current batch.
	row(i int) error
	// cells buffers a row of text cells (a statement's result, not a
	// query's); ok[k] false is a NULL.
	cells(vals []string) error
	// flush writes what was buffered.
	flush() error
	// end closes the result after n rows: the table's bottom border. The
	// "N rows" line is the shell's.
	end() error
}

// newPrinter returns a printer of format for results with cols to w.
func newPrinter(format string, w *bufio.Writer, cols []types.Column, term *terminal) printer {
	switch format {
	case OutputCSV:
		return newCSVPrinter(w, cols)
	case OutputJSON:
		return newJSONPrinter(w, cols)
	}
	return newTablePrinter(w, cols, term)
}

// terminal describes the screen the table output goes to; nil when it goes
// to a file or a pipe.
type terminal struct {
	// height returns the screen's rows, or 0 when unknown.
	height func() int
}

const (
	// defaultHeight is the screen height assumed when the terminal does
	// not say, the classic 24 lines.
	defaultHeight = 24
)

// formatters renders the columns of one batch as text.
func formatters(cols []types.Column, rec arrow.RecordBatch) []func(int) (string, bool) {
	fs := make([]func(int) (string, bool), len(cols))
	for k, c := range cols {
		fs[k] = render.Formatter(rec.Column(k), c.Type)
	}
	return fs
}

// tablePrinter writes aligned columns between borders, as Flink's SQL
// client does:
//
//	+----+-------+
//	| id | name  |
//	+----+-------+
//	|  1 | ann   |
//	+----+-------+
//
// Column widths come from the header and the first screenful of rows; a
// later value that is wider widens its column, and the header is printed
// again so that the columns line up below it. No column is wider than cut
// (the 'max-column-width' setting), which wider values are cut to. On a
// terminal the header is also printed again every screen, so that the names
// stay in sight while rows scroll.
type tablePrinter struct {
	w       *bufio.Writer
	cols    []types.Column
	names   []string
	widths  []int
	right   []bool // numbers align right
	term    *terminal
	fmts    []func(int) (string, bool)
	pending [][]string // rows before the widths are fixed
	sized   bool       // widths fixed from the first screenful
	started bool       // the header has been printed
	lines   int        // lines of rows printed since the last header
	rows    int        // rows printed in all
	rowBuf  []string
	// multiline: a cell's newlines start new lines within the cell, for
	// statement results such as SHOW CREATE TABLE; query values have
	// theirs escaped, since a value is data a table must not let loose.
	multiline bool
	// cut, when above 0, is the 'max-column-width' setting: a value wider
	// than that is cut to it, ending in "...", as Flink's SQL client does,
	// so that no column is wider. 0 shows values whole: a statement's
	// result (SHOW, DESCRIBE) is the shell's own text, never cut.
	cut int
	// op, when not nil, gives each row's kind of change, shown in a first
	// column 'op' (see newQueryPrinter).
	op func(i int) string
}

func newTablePrinter(w *bufio.Writer, cols []types.Column, term *terminal) *tablePrinter {
	p := &tablePrinter{w: w, cols: cols, term: term}
	p.names = make([]string, len(cols))
	p.widths = make([]int, len(cols))
	p.right = make([]bool, len(cols))
	for k, c := range cols {
		p.names[k] = cleanCell(c.Name)
		p.widths[k] = runewidth.StringWidth(p.names[k])
		if c.Type != nil {
			switch c.Type.Kind {
			case types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double, types.Decimal:
				p.right[k] = true
			}
		}
	}
	return p
}

func (p *tablePrinter) screen() int {
	if p.term == nil {
		return 0
	}
	return p.term.rows()
}

// rows is the screen's height, defaultHeight when the terminal does not
// say.
func (t *terminal) rows() int {
	h := 0
	if t.height != nil {
		h = t.height()
	}
	if h <= 0 {
		h = defaultHeight
	}
	return h
}

func (p *tablePrinter) batch(rec arrow.RecordBatch) { p.fmts = formatters(p.cols, rec) }

func (p *tablePrinter) row(i int) error {
	p.rowBuf = textRow(p.rowBuf, p.op, p.fmts, i)
	return p.cells(p.rowBuf)
}

// textRow is row i as table cells, NULL as "NULL", its op first if op is
// not nil; it reuses buf.
func textRow(buf []string, op func(int) string, fmts []func(int) (string, bool), i int) []string {
	buf = buf[:0]
	if op != nil {
		buf = append(buf, op(i))
	}
	for _, f := range fmts {
		s, ok := f(i)
		if !ok {
			s = "NULL"
		}
		buf = append(buf, s)
	}
	return buf
}

func (p *tablePrinter) cells(vals []string) error {
	row := make([]string, len(vals))
	for k, v := range vals {
		if p.multiline {
			lines := strings.Split(v, "\n")
			for i, l := range lines {
				lines[i] = cleanCell(l)
			}
			row[k] = strings.Join(lines, "\n")
		} else {
			row[k] = cleanCell(v)
			if p.cut > 0 && runewidth.StringWidth(row[k]) > p.cut {
				row[k] = runewidth.Truncate(row[k], p.cut, "...")
			}
		}
	}
	if !p.sized {
		// Collect the first screenful to size the columns from.
		p.pending = append(p.pending, row)
		limit := p.screen()
		if limit == 0 {
			limit = defaultHeight
		}
		if len(p.pending) >= limit {
			p.fix()
		}
		return nil
	}
	p.print(row)
	return nil
}

// fix sets the widths from the rows collected so far and prints them.
func (p *tablePrinter) fix() {
	for _, row := range p.pending {
		for k, v := range row {
			if w := cellWidth(v); w > p.widths[k] {
				p.widths[k] = w
			}
		}
	}
	p.sized = true
	pending := p.pending
	p.pending = nil
	if !p.started {
		p.header()
	}
	for _, row := range pending {
		p.print(row)
	}
}

func (p *tablePrinter) print(row []string) {
	grow := false
	height := 1
	for k, v := range row {
		if w := cellWidth(v); w > p.widths[k] {
			p.widths[k] = w
			grow = true
		}
		height = max(height, strings.Count(v, "\n")+1)
	}
	if h := p.screen(); grow || (h > 0 && p.lines > 0 && p.lines+height > h-4) {
		// 4: the header's three lines and the line the live row count
		// takes below the rows.
		p.header()
	}
	if height == 1 {
		p.line(row)
	} else {
		// A multi-line row: line i of each cell, blank where a cell has
		// fewer lines.
		split := make([][]string, len(row))
		for k, v := range row {
			split[k] = strings.Split(v, "\n")
		}
		line := make([]string, len(row))
		for i := range height {
			for k := range row {
				line[k] = ""
				if i < len(split[k]) {
					line[k] = split[k][i]
				}
			}
			p.line(line)
		}
	}
	p.lines += height
	p.rows++
}

// cellWidth is the width of a cell's widest line.
func cellWidth(v string) int {
	w := 0
	for l := range strings.SplitSeq(v, "\n") {
		w = max(w, runewidth.StringWidth(l))
	}
	return w
}

func (p *tablePrinter) header() {
	if p.started {
		// A header in the middle closes the block above it.
		p.border()
	}
	p.border()
	p.line(p.names)
	p.border()
	p.started = true
	p.lines = 0
}

func (p *tablePrinter) border() {
	p.w.WriteByte('+')
	for _, w := range p.widths {
		p.w.WriteString(strings.Repeat("-", w+2))
		p.w.WriteByte('+')
	}
	p.w.WriteByte('\n')
}

func (p *tablePrinter) line(vals []string) {
	p.w.WriteByte('|')
	for k, v := range vals {
		pad := p.widths[k] - runewidth.StringWidth(v)
		p.w.WriteByte(' ')
		if p.right[k] && pad > 0 {
			p.w.WriteString(strings.Repeat(" ", pad))
		}
		p.w.WriteString(v)
		if !p.right[k] && pad > 0 {
			p.w.WriteString(strings.Repeat(" ", pad))
		}
		p.w.WriteString(" |")
	}
	p.w.WriteByte('\n')
}

// flush prints the rows collected for sizing too: a batch is flushed only
// when the shell is about to settle it, and rows still held back would be
// settled without having been shown.
func (p *tablePrinter) flush() error {
	if !p.sized && len(p.pending) > 0 {
		p.fix()
	}
	return p.w.Flush()
}

func (p *tablePrinter) end() error {
	if !p.sized {
		p.fix()
	}
	if !p.started {
		p.header()
	}
	if p.rows > 0 || p.lines > 0 {
		p.border()
	}
	return p.w.Flush()
}

// cleanCell makes a value safe to print in a table cell: control characters
// (a newline would break the row, an escape sequence could take over the
// terminal) are shown escaped, as Go quotes them.
func cleanCell(s string) string {
	clean := true
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == utf8.RuneError {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, w := utf8.DecodeRuneInString(s[i:]); w == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
				continue
			}
			b.WriteRune(r)
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// csvPrinter writes RFC 4180 CSV (encoding/csv): a header row of the
// column names, then one record per row; NULL is an empty field.
type csvPrinter struct {
	w      *bufio.Writer
	cw     *csv.Writer
	cols   []types.Column
	fmts   []func(int) (string, bool)
	rec    []string
	header bool
	op     func(i int) string // see newQueryPrinter
}

func newCSVPrinter(w *bufio.Writer, cols []types.Column) *csvPrinter {
	return &csvPrinter{w: w, cw: csv.NewWriter(w), cols: cols, rec: make([]string, len(cols))}
}

func (p *csvPrinter) writeHeader() error {
	if p.header {
		return nil
	}
	p.header = true
	var names []string
	if p.op != nil {
		names = append(names, "op")
	}
	for _, c := range p.cols {
		names = append(names, c.Name)
	}
	return p.cw.Write(names)
}

func (p *csvPrinter) batch(rec arrow.RecordBatch) { p.fmts = formatters(p.cols, rec) }

func (p *csvPrinter) row(i int) error {
	p.rec = p.rec[:0]
	if p.op != nil {
		p.rec = append(p.rec, p.op(i))
	}
	for _, f := range p.fmts {
		s, _ := f(i)
		p.rec = append(p.rec, s)
	}
	return p.cells(p.rec)
}

func (p *csvPrinter) cells(vals []string) error {
	if err := p.writeHeader(); err != nil {
		return err
	}
	return p.cw.Write(vals)
}

func (p *csvPrinter) flush() error {
	p.cw.Flush()
	if err := p.cw.Error(); err != nil {
		return err
	}
	return p.w.Flush()
}

func (p *csvPrinter) end() error {
	if err := p.writeHeader(); err != nil {
		return err
	}
	return p.flush()
}

// jsonPrinter writes one JSON object per row and line (JSON Lines): the
// row as format 'json' writes it (json.RowEncoder), so that the shell, a
// program fed by kshare work and a json sink give the same text.
type jsonPrinter struct {
	w    *bufio.Writer
	cols []types.Column
	enc  *json.RowEncoder
	err  error // NewRowEncoder's, returned by every row
	rec  arrow.RecordBatch
	buf  []byte
	op   func(i int) string // see newQueryPrinter
	// result holds a statement's rows (cells) until end writes them.
	result [][]string
}

// newJSONPrinter returns the printer of rows with cols. A statement's
// result (cells) needs every column's type, as table.Result.Type gives.
func newJSONPrinter(w *bufio.Writer, cols []types.Column) *jsonPrinter {
	p := &jsonPrinter{w: w, cols: cols}
	p.enc, p.err = json.NewRowEncoder(cols)
	if p.err != nil {
		p.err = fmt.Errorf("output 'json': %w", p.err)
	}
	return p
}

func (p *jsonPrinter) batch(rec arrow.RecordBatch) { p.rec = rec }

func (p *jsonPrinter) row(i int) error {
	if p.err != nil {
		return p.err
	}
	b := p.buf[:0]
	if p.op != nil {
		// {"op":"+U", then the row's members.
		b = append(append(b, `{"op":"`...), p.op(i)...)
		b = append(b, '"')
	}
	at := len(b)
	b, err := p.enc.AppendRow(b, p.rec, i)
	if err != nil {
		return fmt.Errorf("output 'json' cannot write a row: %w", err)
	}
	if p.op != nil {
		if len(b)-at == 2 {
			// The row has no members: {} after the op.
			b = append(b[:at], '}')
		} else {
			b[at] = ','
		}
	}
	p.buf = append(b, '\n')
	_, err = p.w.Write(p.buf)
	return err
}

// cells keeps a statement's row for end, which writes the result as a
// batch of its columns' types: the same encoder, so counts and offsets are
// numbers.
func (p *jsonPrinter) cells(vals []string) error {
	p.result = append(p.result, vals)
	return nil
}

func (p *jsonPrinter) flush() error { return p.w.Flush() }

func (p *jsonPrinter) end() error {
	if len(p.result) > 0 {
		if p.err != nil {
			return p.err
		}
		rec, err := resultBatch(p.cols, p.result)
		p.result = nil
		if err != nil {
			return err
		}
		defer rec.Release()
		p.batch(rec)
		for i := 0; i < int(rec.NumRows()); i++ {
			if err := p.row(i); err != nil {
				return err
			}
		}
	}
	return p.w.Flush()
}

// resultBatch builds the Arrow batch of a statement's rows, whose columns
// are STRING, INT or BIGINT (table.Result.Types); an integer column's ""
// is NULL.
func resultBatch(cols []types.Column, rows [][]string) (arrow.RecordBatch, error) {
	rb := array.NewRecordBuilder(memory.DefaultAllocator, (&types.Schema{Columns: cols}).Arrow())
	defer rb.Release()
	for _, r := range rows {
		for k, c := range cols {
			v := r[k]
			if c.Type.Kind != types.Varchar && v == "" {
				rb.Field(k).AppendNull()
				continue
			}
			var err error
			switch fb := rb.Field(k).(type) {
			case *array.StringBuilder:
				fb.Append(v)
			case *array.Int32Builder:
				var n int64
				if n, err = strconv.ParseInt(v, 10, 32); err == nil {
					fb.Append(int32(n))
				}
			case *array.Int64Builder:
				var n int64
				if n, err = strconv.ParseInt(v, 10, 64); err == nil {
					fb.Append(n)
				}
			default:
				return nil, fmt.Errorf("column %s: a statement's result has STRING, INT or BIGINT columns, not %s", types.QuoteIdent(c.Name), c.Type)
			}
			if err != nil {
				return nil, fmt.Errorf("column %s holds %q, which is not a %s", types.QuoteIdent(c.Name), v, c.Type)
			}
		}
	}
	return rb.NewRecordBatch(), nil
}

// plural says "1 row" or "3 rows".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
