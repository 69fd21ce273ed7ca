package query

import (
	"context"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/table"
)

// A SELECT without FROM (SELECT 1 + 1 AS two) answers one row, as Flink's
// does: its expressions are evaluated over noTable, a table of no columns
// whose source hands out one row and ends. Nothing is read from Kafka and
// nothing is acknowledged.
var noTable = &table.Table{
	Bound:  &table.Bound{Def: &table.Definition{Name: "(no table)"}},
	Source: oneRowSource{},
}

// noFrom reports whether s had no FROM clause: the parser kshare uses reads
// one as FROM dual, so the text is what tells.
func noFrom(rw *rewritten, s *sqlparser.Select) bool {
	te, ok := s.From[0].(*sqlparser.AliasedTableExpr)
	if !ok {
		return false
	}
	if tn, ok := te.Expr.(sqlparser.TableName); !ok || !strings.EqualFold(tn.Name.String(), "dual") || !tn.Qualifier.IsEmpty() {
		return false
	}
	// Only a FROM outside parentheses is the statement's: one inside is a
	// function's (SUBSTRING(s FROM 2), EXTRACT(YEAR FROM t)) or a
	// subquery's, which is refused.
	depth := 0
	for _, t := range rw.toks {
		switch {
		case t.IsSymbol("("):
			depth++
		case t.IsSymbol(")"):
			depth--
		case depth == 0 && t.IsWord("from"):
			return false
		}
	}
	return true
}

func planNoFrom(rw *rewritten, s *sqlparser.Select) (*Plan, error) {
	for _, e := range s.SelectExprs {
		if _, ok := e.(*sqlparser.StarExpr); ok {
			return nil, expr.Errorf(ErrSyntax, "SELECT * needs a FROM clause; a SELECT without FROM names its values (SELECT 1 + 1 AS two)")
		}
	}
	return planTable(rw, s, noTable, nil)
}

type oneRowSource struct{}

func (oneRowSource) Open(context.Context, flow.OpenOptions) (flow.Stream, error) {
	return &oneRowStream{}, nil
}

type oneRowStream struct{ done bool }

var noColumns = arrow.NewSchema(nil, nil)

func (s *oneRowStream) Schema() *arrow.Schema { return noColumns }
func (s *oneRowStream) Stats() flow.Stats     { return flow.Stats{} }
func (s *oneRowStream) Close() error          { return nil }

func (s *oneRowStream) Next(ctx context.Context) (flow.Batch, error) {
	if err := ctx.Err(); err != nil {
		return flow.Batch{}, err
	}
	if s.done {
		return flow.Batch{}, io.EOF
	}
	s.done = true
	return flow.Batch{Record: array.NewRecordBatch(noColumns, nil, 1), Ack: flow.NoAck{}}, nil
}
