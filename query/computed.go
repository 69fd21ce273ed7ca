package query

import (
	"errors"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// A computed column (name AS expr in CREATE TABLE) is planned as the one
// expression of SELECT expr FROM the table's source columns: it may read
// physical and metadata columns, not other computed ones (as in Flink),
// and no aggregate. The table package checks a definition with it when
// the table is bound (table.SetExprTyper), so that CREATE TABLE reports a
// bad expression, and every query over the table plans it again.
func init() {
	table.SetExprTyper(func(def *table.Definition, text string) (*types.DataType, error) {
		p, err := planComputed(def, text)
		if err != nil {
			return nil, err
		}
		return p.cols[0].Type, nil
	})
}

// computedCol is a computed column: its position among all the table's
// columns and the plan of its expression over the source's batch.
type computedCol struct {
	pos  int
	plan *Plan
}

func planComputedColumns(def *table.Definition) ([]computedCol, error) {
	var out []computedCol
	for _, c := range def.Computed {
		p, err := planComputed(def, c.Expr)
		if err != nil {
			return nil, expr.Errorf(ErrType, "computed column '%s' of table '%s': %v", options.Cut(c.Name), options.Cut(def.Name), err)
		}
		out = append(out, computedCol{pos: c.Pos, plan: p})
	}
	return out, nil
}

func planComputed(def *table.Definition, text string) (*Plan, error) {
	src := def.Clone()
	src.Computed, src.Watermark = nil, nil
	tbl := &table.Table{Bound: &table.Bound{Def: src}}
	rw, stmt, err := parseStatement("SELECT " + text + " FROM " + types.QuoteIdent(def.Name))
	if err != nil {
		return nil, err
	}
	s, ok := stmt.(*sqlparser.Select)
	if !ok || len(s.SelectExprs) != 1 || s.Where != nil || s.GroupBy != nil || s.Having != nil || s.Limit != nil || s.Distinct != "" || len(s.From) != 1 {
		return nil, expr.Errorf(ErrSyntax, "'%s' is not one expression", options.Cut(text))
	}
	if _, star := s.SelectExprs[0].(*sqlparser.StarExpr); star {
		return nil, expr.Errorf(ErrSyntax, "'%s' is not one expression", options.Cut(text))
	}
	p, err := planTable(rw, s, tbl, []string{def.Name})
	if errors.Is(err, ErrUnknownColumn) {
		// The likely cause: a name of another computed column.
		for _, t := range rw.toks {
			if k := def.Index(t.Val); isName(t) && k >= 0 && def.Columns()[k].Expr != "" {
				return nil, expr.Errorf(ErrUnknownColumn, "a computed column cannot read another computed column ('%s', as in Flink); repeat its expression instead", options.Cut(t.Val))
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if p.agg != nil {
		return nil, expr.Errorf(ErrType, "an aggregate cannot compute a column (%s)", options.Cut(text))
	}
	return p, nil
}

// extend makes the batch of all the table's columns in the order declared
// from a source batch, evaluating the computed ones, and for a window TVF
// with the window's columns after them (one row per window a row falls
// in); the caller releases it. A table without computed columns and
// window gives src back, retained.
func (r *Rows) extend(src arrow.RecordBatch) (arrow.RecordBatch, error) {
	full, err := r.computeColumns(src)
	if err != nil || r.winRows == nil {
		return full, err
	}
	defer full.Release()
	// Without an aggregation the rows go on as they are: none is late.
	wm, limit := int64(math.MinInt64), int64(math.MinInt64)
	if r.win != nil {
		wm, limit = r.win.wm, r.win.dropLimit()
	}
	return r.winRows.expand(r.ec, full, wm, limit)
}

// computeColumns is extend without the window's columns.
func (r *Rows) computeColumns(src arrow.RecordBatch) (arrow.RecordBatch, error) {
	p := r.plan
	if len(p.computed) == 0 {
		src.Retain()
		return src, nil
	}
	n := int(src.NumRows())
	cols := make([]arrow.Array, 0, p.fullSchema.NumFields())
	var made []arrow.Array
	defer func() { expr.ReleaseAll(made) }()
	k := 0
	for _, c := range p.computed {
		for len(cols) < c.pos {
			cols = append(cols, src.Column(k))
			k++
		}
		in := narrowBatch(c.plan, src)
		a, err := c.plan.exprs[0].Eval(r.ec, in)
		in.Release()
		if err != nil {
			return nil, err
		}
		made = append(made, a)
		cols = append(cols, a)
	}
	for ; k < int(src.NumCols()); k++ {
		cols = append(cols, src.Column(k))
	}
	return array.NewRecordBatch(p.fullSchema, cols, int64(n)), nil
}

// narrowBatch is the batch of the columns of src that p reads (its
// inputs); the caller releases it.
func narrowBatch(p *Plan, src arrow.RecordBatch) arrow.RecordBatch {
	if p.allInputs {
		src.Retain()
		return src
	}
	cols := make([]arrow.Array, len(p.inputs))
	for j, k := range p.inputs {
		cols[j] = src.Column(k)
	}
	return array.NewRecordBatch(p.inSchema, cols, src.NumRows())
}
