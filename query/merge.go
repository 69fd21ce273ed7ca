package query

import (
	"errors"
	"fmt"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/types"
)

// ErrNotMergeable is returned by MergeOps for a query whose result columns
// cannot be merged into rows that hold earlier totals.
var ErrNotMergeable = errors.New("the result cannot be merged")

// MergeOps says how each result column of an aggregate merges into a row
// that holds the totals of other records (flow.MergeOp): a GROUP BY
// column selected as it is is the key, COUNT and SUM add, MIN and MAX keep
// the smaller or larger. Anything else is an error that says why and what
// to do: AVG (an average of averages is not the average), COUNT or SUM of
// DISTINCT values (a value counted by two replicas is one), LISTAGG, an
// expression over aggregates or keys, HAVING (it hides and shows groups by
// a replica's part of the records), a window, a query that is not an
// aggregate.
func (p *Plan) MergeOps() ([]flow.MergeOp, error) {
	switch {
	case p.window != nil:
		return nil, fmt.Errorf("%w: a window's rows are merged by no destination yet; write the windowed query 'at-least-once'", ErrNotMergeable)
	case p.agg == nil:
		return nil, fmt.Errorf("%w: the query is not an aggregate", ErrNotMergeable)
	case p.agg.having != nil:
		return nil, fmt.Errorf("%w: HAVING keeps or drops a group by the records one replica saw, not by all of them; filter the table where you read it instead", ErrNotMergeable)
	}
	if _, ok := p.UpsertKey(); !ok {
		return nil, fmt.Errorf("%w: the query does not select every GROUP BY column as it is, so its rows have no key", ErrNotMergeable)
	}
	nkeys := len(p.agg.keys)
	ops := make([]flow.MergeOp, len(p.exprs))
	for i, e := range p.exprs {
		col := p.cols[i].Name
		c, isRef := e.(*expr.ColRef)
		if !isRef {
			return nil, fmt.Errorf("%w: column %s is an expression; select the aggregates and keys as they are, and compute %s where you read the table",
				ErrNotMergeable, types.QuoteIdent(col), types.QuoteIdent(col))
		}
		if c.Index < nkeys {
			ops[i] = flow.MergeKey
			continue
		}
		call := p.agg.calls[c.Index-nkeys]
		switch {
		case call.fn == "avg":
			return nil, fmt.Errorf("%w: column %s is AVG, and an average of partial averages is not the average; select SUM and COUNT instead and divide them where you read the table",
				ErrNotMergeable, types.QuoteIdent(col))
		case call.fn == "min":
			ops[i] = flow.MergeMin
		case call.fn == "max":
			ops[i] = flow.MergeMax
		case call.distinct:
			return nil, fmt.Errorf("%w: column %s counts DISTINCT values, and a value two replicas each saw would count twice; write the query 'at-least-once' from one replica",
				ErrNotMergeable, types.QuoteIdent(col))
		case call.fn == "count" || call.fn == "sum":
			ops[i] = flow.MergeAdd
		default:
			return nil, fmt.Errorf("%w: column %s is %s, which has no merge; write the query 'at-least-once' from one replica",
				ErrNotMergeable, types.QuoteIdent(col), call.src)
		}
	}
	return ops, nil
}
