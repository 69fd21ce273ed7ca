package expr

// This file holds constant folding: an expression of literals, or a string
// literal read as the type it is compared with, is evaluated once, at
// planning, into a literal.

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/types"
)

// foldMem allocates constants; they live as long as their plan, outside any
// query's allocator.
var foldMem = memory.DefaultAllocator

func fold(n Node) (Node, error) {
	ec := NewEvalCtx(foldMem)
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	a, err := n.Eval(ec, one)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	sc, err := scalar.GetScalar(a, 0)
	if err != nil {
		return nil, fmt.Errorf("query: folding %s: %w", n.Text(), err)
	}
	return newLiteral(n.Type(), sc, n.Text()), nil
}

func coerceLiteral(n Node, to *types.DataType) (Node, error) {
	lit, ok := n.(*literal)
	if !ok || !IsChar(lit.t) || IsChar(to) || isBin(to) || !comparableKind(to) {
		return n, nil
	}
	t := to.WithNotNull(lit.t.NotNull)
	if isInt(to) || isApprox(to) {
		// A number literal in a string keeps its own type ('1.5' against an
		// INT column must not become 1).
		if v, sc, ok := decimal.ParseBig(strings.TrimSpace(lit.val.String())); ok {
			t = &types.DataType{Kind: types.Decimal, Precision: max(len(new(big.Int).Abs(v).String()), sc, 1), Scale: sc, NotNull: lit.t.NotNull}
			if t.Precision > types.MaxDecimalPrecision || isApprox(to) {
				t = &types.DataType{Kind: types.Double, NotNull: lit.t.NotNull}
			}
		}
	}
	if !castable(lit.t, t) {
		return n, nil
	}
	return fold(&cast{exprBase: exprBase{t: t, src: lit.src}, e: lit})
}
