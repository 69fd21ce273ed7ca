package sqlshell

// This file prints the rows of an updating query (GROUP BY, aggregates):
// changes of a result table, each with its kind (+I, -U, +U, -D).

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/types"
)

// newQueryPrinter returns the printer of a query's rows in format. A query
// without aggregation prints as it always has, in 'tableau' as in 'table'.
// An updating query's rows carry their op: a first column 'op' in table,
// tableau and csv output, an "op" member in json, the prefix of each line
// in changelog; in table output on a terminal they are applied to a table
// of the current result, drawn again in place after each batch.
func newQueryPrinter(format string, w *bufio.Writer, rows *query.Rows, term *terminal, cut int) printer {
	cols := rows.Columns()
	updating := rows.Plan().Updating()
	op := func(i int) string { return rows.Op(i).String() }
	switch format {
	case OutputChangelog:
		return &changelogPrinter{w: w, cols: cols, op: op}
	case OutputCSV:
		p := newCSVPrinter(w, cols)
		if updating {
			p.op = op
		}
		return p
	case OutputJSON:
		p := newJSONPrinter(w, cols)
		if updating {
			p.op = op
		}
		return p
	}
	if updating && format == OutputTable && term != nil {
		return &livePrinter{w: w, cols: cols, term: term, op: rows.Op, cut: cut, at: map[string][]int{}}
	}
	p := newTablePrinter(w, cols, term)
	p.cut = cut
	if updating {
		p.op = op
		p.names = append([]string{"op"}, p.names...)
		p.widths = append([]int{2}, p.widths...)
		p.right = append([]bool{false}, p.right...)
	}
	return p
}

// changelogPrinter writes one line per change, as Flink prints a changelog:
// +I[ann, 2].
type changelogPrinter struct {
	w    *bufio.Writer
	cols []types.Column
	fmts []func(int) (string, bool)
	op   func(i int) string
	buf  []string
}

func (p *changelogPrinter) batch(rec arrow.RecordBatch) { p.fmts = formatters(p.cols, rec) }

func (p *changelogPrinter) row(i int) error {
	p.buf = textRow(p.buf, nil, p.fmts, i)
	return p.line(p.op(i), p.buf)
}

func (p *changelogPrinter) line(op string, vals []string) error {
	p.w.WriteString(op)
	p.w.WriteByte('[')
	for k, v := range vals {
		if k > 0 {
			p.w.WriteString(", ")
		}
		p.w.WriteString(cleanCell(v))
	}
	_, err := p.w.WriteString("]\n")
	return err
}

func (p *changelogPrinter) cells(vals []string) error { return p.line("+I", vals) }
func (p *changelogPrinter) flush() error              { return p.w.Flush() }
func (p *changelogPrinter) end() error                { return p.w.Flush() }

// livePrinter keeps the current result of an updating query and draws it
// as a table, in place of the drawing before, after each batch: Flink's
// table result mode. A row is found again by its values, as Flink's
// client does. A batch lists a group's -U right before its +U, so a +U
// takes the place of the -U before it: a row stays where it is while its
// values change.
type livePrinter struct {
	w       *bufio.Writer
	cols    []types.Column
	term    *terminal
	op      func(i int) query.RowKind
	cut     int
	fmts    []func(int) (string, bool)
	rows    [][]string       // the result; nil where a row was removed
	at      map[string][]int // rows by their values
	freed   int              // nil entries of rows
	freedAt []int            // where the batch's -U rows were, for its +U rows
	drawn   int              // lines of the last drawing
}

func (p *livePrinter) batch(rec arrow.RecordBatch) { p.fmts = formatters(p.cols, rec) }

func (p *livePrinter) row(i int) error {
	vals := textRow(nil, nil, p.fmts, i)
	key := strings.Join(vals, "\x00")
	switch p.op(i) {
	case query.UpdateBefore:
		if pos := p.take(key); pos >= 0 {
			p.freedAt = append(p.freedAt, pos)
		}
	case query.Delete:
		p.take(key)
	case query.UpdateAfter:
		if len(p.freedAt) > 0 {
			pos := p.freedAt[0]
			p.freedAt = p.freedAt[1:]
			p.rows[pos] = vals
			p.at[key] = append(p.at[key], pos)
			p.freed--
			return nil
		}
		p.add(key, vals)
	default:
		p.add(key, vals)
	}
	return nil
}

func (p *livePrinter) add(key string, vals []string) {
	p.at[key] = append(p.at[key], len(p.rows))
	p.rows = append(p.rows, vals)
}

// take removes the row with key and returns where it was, or -1.
func (p *livePrinter) take(key string) int {
	list := p.at[key]
	if len(list) == 0 {
		return -1
	}
	pos := list[len(list)-1]
	if len(list) == 1 {
		delete(p.at, key)
	} else {
		p.at[key] = list[:len(list)-1]
	}
	p.rows[pos] = nil
	p.freed++
	return pos
}

func (p *livePrinter) cells(vals []string) error {
	p.add(strings.Join(vals, "\x00"), vals)
	return nil
}

// compact drops the removed rows once they are half of all, renumbering
// the index.
func (p *livePrinter) compact() {
	if p.freed*2 <= len(p.rows) {
		return
	}
	kept := p.rows[:0]
	clear(p.at)
	for _, r := range p.rows {
		if r != nil {
			p.at[strings.Join(r, "\x00")] = append(p.at[strings.Join(r, "\x00")], len(kept))
			kept = append(kept, r)
		}
	}
	clear(p.rows[len(kept):])
	p.rows, p.freed = kept, 0
}

// flush draws the result over the drawing before. What does not fit on
// the screen is counted below the table, since a drawing taller than the
// screen could not be drawn over.
func (p *livePrinter) flush() error {
	p.freedAt = p.freedAt[:0]
	p.compact()
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	tp := newTablePrinter(bw, p.cols, nil)
	tp.cut = p.cut
	room := max(1, p.term.rows()-6) // the header's 3 lines, the bottom border, the note and the status line
	shown, more := 0, 0
	for _, r := range p.rows {
		switch {
		case r == nil:
		case shown < room:
			tp.cells(r)
			shown++
		default:
			more++
		}
	}
	tp.end()
	if more > 0 {
		// "(1 more row not shown)"
		fmt.Fprintf(bw, "(%s not shown)\n", strings.Replace(plural(int64(more), "row"), " ", " more ", 1))
	}
	bw.Flush()
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\r\x1b[J", p.drawn)
	}
	p.w.Write(b.Bytes())
	p.drawn = bytes.Count(b.Bytes(), []byte{'\n'})
	return p.w.Flush()
}

func (p *livePrinter) end() error {
	if p.drawn == 0 {
		return p.flush()
	}
	return p.w.Flush()
}
