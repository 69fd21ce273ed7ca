package expr

// This file holds the analysis of expressions: each sqlparser expression
// becomes a typed node, its operands checked and coerced as Flink does.

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/types"
)

// textOf prints an expression as the user wrote it (near enough: keywords
// come out in lower case), with the rewrite's placeholders turned back
// into CASTs and typed literals.
func (p *Compiler) TextOf(n sqlparser.SQLNode) string {
	buf := sqlparser.NewTrackedBuffer(func(buf *sqlparser.TrackedBuffer, n sqlparser.SQLNode) {
		switch n := n.(type) {
		case *sqlparser.FuncExpr:
			if spec, ok := p.CastSpec(n); ok {
				arg := sqlparser.SelectExprs(n.Exprs)
				switch {
				case spec.Lit:
					buf.Myprintf("%s %v", spec.Type, arg)
				case spec.Returning && len(n.Exprs) == 1:
					var args []string
					if ae, ok := n.Exprs[0].(*sqlparser.AliasedExpr); ok {
						if f, ok := ae.Expr.(*sqlparser.FuncExpr); ok {
							for _, e := range f.Exprs {
								args = append(args, p.TextOf(e))
							}
						}
					}
					buf.Myprintf("%s", jsonValueText(args, spec.Type))
				case spec.Try:
					buf.Myprintf("TRY_CAST(%v AS %s)", arg, spec.Type)
				default:
					buf.Myprintf("CAST(%v AS %s)", arg, spec.Type)
				}
				return
			}
			if text, ok := p.syntaxText(n); ok {
				buf.Myprintf("%s", text)
				return
			}
			if cond, args := FilterOf(n); cond != nil {
				call := *n
				call.Exprs = args
				buf.Myprintf("%v FILTER (WHERE %v)", &call, cond)
				return
			}
		case *sqlparser.IsExpr:
			if p.src.Unknowns[n] {
				buf.Myprintf("%v %s", n.Expr, strings.Replace(n.Operator, "null", "unknown", 1))
				return
			}
		case *sqlparser.BinaryExpr:
			if n.Operator == ConcatOp {
				buf.Myprintf("%v || %v", n.Left, n.Right)
				return
			}
		case *sqlparser.SQLVal:
			if n.Type == sqlparser.StrVal {
				buf.Myprintf("%s", types.QuoteString(string(n.Val)))
				return
			}
		case *sqlparser.IntervalExpr:
			unit := strings.ToLower(n.Unit)
			if u, ok := strings.CutPrefix(unit, IntervalPrefix); ok {
				unit = strings.Replace(u, "_to_", " to ", 1)
			}
			buf.Myprintf("INTERVAL %v %s", n.Expr, strings.ToUpper(unit))
			return
		case *sqlparser.ComparisonExpr:
			if n.Operator == sqlparser.NotEqualStr {
				buf.Myprintf("%v <> %v", n.Left, n.Right)
				return
			}
		}
		n.Format(buf)
	})
	buf.Myprintf("%v", n)
	return buf.String()
}

// CastSpec is the CAST that f, a call the rewrite made of one, stands for;
// ok is false when f is no such call.
func (p *Compiler) CastSpec(f *sqlparser.FuncExpr) (CastSpec, bool) {
	name := f.Name.String()
	if !strings.HasPrefix(name, CastFunc) || !f.Qualifier.IsEmpty() {
		return CastSpec{}, false
	}
	k, err := strconv.Atoi(strings.TrimPrefix(name, CastFunc))
	if err != nil || k < 0 || k >= len(p.src.Casts) {
		return CastSpec{}, false
	}
	return p.src.Casts[k], true
}

// untyped is a NULL literal whose type comes from where it is used (a + NULL
// is NULL of a's type).
type untyped struct{ exprBase }

func (u *untyped) Operands() []Node { return nil }

func (u *untyped) Eval(*EvalCtx, arrow.RecordBatch) (arrow.Array, error) {
	return nil, fmt.Errorf("query: untyped NULL evaluated")
}

// TypedNull gives an untyped NULL the type t; other nodes pass through.
func TypedNull(n Node, t *types.DataType) Node {
	if _, ok := n.(*untyped); !ok {
		return n
	}
	t = t.WithNotNull(false)
	return newLiteral(t, scalar.MakeNullScalar(t.ArrowType()), n.Text())
}

func boolType(notNull bool) *types.DataType {
	return &types.DataType{Kind: types.Boolean, NotNull: notNull}
}

func notNull(ns ...Node) bool {
	for _, n := range ns {
		if n.Type() == nil || !n.Type().NotNull {
			return false
		}
	}
	return true
}

// exprs plans each of es, in order, stopping at the first error.
func (p *Compiler) Exprs(es ...sqlparser.Expr) ([]Node, error) {
	ns := make([]Node, len(es))
	for i, e := range es {
		n, err := p.Expr(e)
		if err != nil {
			return nil, err
		}
		ns[i] = n
	}
	return ns, nil
}

// expr plans an expression and folds it when it reads no column, so that
// CAST('2024-01-01' AS DATE) is parsed once and a bad constant fails before
// the query starts.
func (p *Compiler) Expr(e sqlparser.Expr) (Node, error) {
	n, err := p.expr1(e)
	if err != nil {
		return nil, err
	}
	switch n.(type) {
	case *literal, *untyped:
		return n, nil
	}
	if !IsConstant(n) {
		return n, nil
	}
	return fold(n)
}

func (p *Compiler) expr1(e sqlparser.Expr) (Node, error) {
	src := p.TextOf(e)
	// Aggregate calls and grouped expressions are the scope's.
	if n, ok, err := p.scope.Aggregate(e, src); ok {
		return n, err
	}
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return p.expr1(e.Expr)
	case *sqlparser.ColName:
		return p.scope.Column(e, src)
	case *sqlparser.SQLVal:
		return p.value(e, src)
	case *sqlparser.NullVal:
		return &untyped{exprBase{src: "NULL"}}, nil
	case sqlparser.BoolVal:
		return newLiteral(boolType(true), scalar.NewBooleanScalar(bool(e)), src), nil
	case *sqlparser.AndExpr:
		return p.logic(false, e.Left, e.Right, src)
	case *sqlparser.OrExpr:
		return p.logic(true, e.Left, e.Right, src)
	case *sqlparser.NotExpr:
		x, err := p.boolOperand(e.Expr, "NOT")
		if err != nil {
			return nil, err
		}
		return unaryCall(notDef, boolType(notNull(x)), src, x, nil), nil
	case *sqlparser.ComparisonExpr:
		return p.comparison(e, src)
	case *sqlparser.RangeCond:
		return p.between(e, src)
	case *sqlparser.IsExpr:
		x, err := p.Expr(e.Expr)
		if err != nil {
			return nil, err
		}
		op := strings.TrimPrefix(e.Operator, "is ")
		neg := strings.HasPrefix(op, "not ")
		what := strings.TrimPrefix(op, "not ")
		if p.src.Unknowns[e] {
			// IS UNKNOWN is IS NULL of a BOOLEAN, as in Flink.
			op = strings.Replace(op, "null", "unknown", 1)
		}
		if what != "null" || p.src.Unknowns[e] {
			x = TypedNull(x, types.BooleanType())
			if x.Type().Kind != types.Boolean {
				return nil, Errorf(ErrType, "IS %s needs a BOOLEAN operand, got %s (%s)", strings.ToUpper(op), TypeName(x.Type()), x.Text())
			}
		}
		return unaryCall(isDef, boolType(true), src, x, isSpec{what: what, neg: neg}), nil
	case *sqlparser.BinaryExpr:
		_, li := e.Left.(*sqlparser.IntervalExpr)
		_, ri := e.Right.(*sqlparser.IntervalExpr)
		if (li || ri) && (e.Operator == "+" || e.Operator == "-") {
			return p.intervalArith(e, src)
		}
		switch e.Operator {
		case "+", "-", "*", "/", "%":
			return p.arith(e.Operator, e.Left, e.Right, src)
		case ConcatOp:
			ns, err := p.Exprs(e.Left, e.Right)
			if err != nil {
				return nil, err
			}
			return newCall(p, concatDef, ns, src)
		}
		return nil, UnsupportedExpr("operator " + e.Operator)
	case *sqlparser.UnaryExpr:
		switch e.Operator {
		case "-", "+":
			x, err := p.Expr(e.Expr)
			if err != nil {
				return nil, err
			}
			if x.Type() == nil {
				return x, nil
			}
			if !IsNumeric(x.Type()) {
				return nil, Errorf(ErrType, "unary %s needs a numeric operand, got %s (%s)", e.Operator, TypeName(x.Type()), x.Text())
			}
			if e.Operator == "+" {
				return x, nil
			}
			return unaryCall(negDef, x.Type(), src, x, nil), nil
		}
		return nil, UnsupportedExpr("operator " + strings.TrimSpace(e.Operator))
	case *sqlparser.FuncExpr:
		return p.function(e, src)
	case *sqlparser.ConvertExpr:
		return nil, UnsupportedExpr("CONVERT", "write CAST(x AS type)")
	case *sqlparser.CaseExpr:
		return p.caseExpr(e, src)
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return nil, UnsupportedClause("a subquery")
	case *sqlparser.GroupConcatExpr:
		return nil, UnsupportedExpr("aggregate function GROUP_CONCAT")
	case *sqlparser.IntervalExpr:
		return nil, UnsupportedExpr("INTERVAL here", "an INTERVAL is added to or subtracted from a time: ts + INTERVAL '5' MINUTE")
	case *sqlparser.SubstrExpr:
		return nil, UnsupportedExpr("function SUBSTRING")
	case sqlparser.ValTuple:
		return nil, UnsupportedExpr("a row value " + src)
	}
	return nil, UnsupportedExpr(src)
}

func (p *Compiler) value(v *sqlparser.SQLVal, src string) (Node, error) {
	s := string(v.Val)
	switch v.Type {
	case sqlparser.StrVal:
		t := &types.DataType{Kind: types.Char, Length: utf8.RuneCountInString(s), NotNull: true}
		return newLiteral(t, scalar.NewStringScalar(s), src), nil
	case sqlparser.IntVal:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return newLiteral(&types.DataType{Kind: types.Int, NotNull: true}, scalar.NewInt32Scalar(int32(n)), src), nil
			}
			return newLiteral(&types.DataType{Kind: types.BigInt, NotNull: true}, scalar.NewInt64Scalar(n), src), nil
		}
		return decimalLiteral(s, src)
	case sqlparser.FloatVal:
		if strings.ContainsAny(s, "eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, Errorf(ErrSyntax, "bad number %s", s)
			}
			return newLiteral(&types.DataType{Kind: types.Double, NotNull: true}, scalar.NewFloat64Scalar(f), src), nil
		}
		return decimalLiteral(s, src)
	case sqlparser.HexVal:
		b, err := v.HexDecode()
		if err != nil {
			return nil, Errorf(ErrSyntax, "bad binary literal %s: %v", src, err)
		}
		t := &types.DataType{Kind: types.Binary, Length: max(len(b), 1), NotNull: true}
		if len(b) == 0 {
			t = &types.DataType{Kind: types.Varbinary, Length: types.MaxLength, NotNull: true}
			return newLiteral(t, scalar.NewBinaryScalar(memory.NewBufferBytes(b), arrow.BinaryTypes.Binary), src), nil
		}
		return newLiteral(t, scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(b), t.ArrowType()), src), nil
	case sqlparser.ValArg:
		return nil, UnsupportedExpr("a parameter (?)")
	}
	return nil, UnsupportedExpr("literal " + src)
}

// decimalLiteral types 1.50 as DECIMAL(3, 2), as Flink does: the precision
// counts the significant digits, the scale the digits after the point.
func decimalLiteral(s, src string) (Node, error) {
	v, scale, ok := decimal.ParseBig(s)
	if !ok {
		return nil, Errorf(ErrSyntax, "bad number %s", s)
	}
	prec := len(new(big.Int).Abs(v).String())
	if v.Sign() == 0 {
		prec = 1
	}
	prec = max(prec, scale)
	if prec > types.MaxDecimalPrecision {
		return nil, Errorf(ErrType, "number %s has more than %d digits", s, types.MaxDecimalPrecision)
	}
	t := &types.DataType{Kind: types.Decimal, Precision: prec, Scale: scale, NotNull: true}
	return newLiteral(t, scalar.NewDecimal128Scalar(decimal128.FromBigInt(v), t.ArrowType()), src), nil
}

func (p *Compiler) boolOperand(e sqlparser.Expr, op string) (Node, error) {
	x, err := p.Expr(e)
	if err != nil {
		return nil, err
	}
	x = TypedNull(x, types.BooleanType())
	if x.Type().Kind != types.Boolean {
		what := "BOOLEAN operands"
		if op == "NOT" {
			what = "a BOOLEAN operand"
		}
		return nil, Errorf(ErrType, "%s needs %s, got %s (%s)", op, what, TypeName(x.Type()), x.Text())
	}
	return x, nil
}

func (p *Compiler) logic(or bool, le, re sqlparser.Expr, src string) (Node, error) {
	op := "AND"
	if or {
		op = "OR"
	}
	l, err := p.boolOperand(le, op)
	if err != nil {
		return nil, err
	}
	r, err := p.boolOperand(re, op)
	if err != nil {
		return nil, err
	}
	return &logic{binaryOp: newBinary(boolType(notNull(l, r)), src, l, r), or: or}, nil
}

func (p *Compiler) arith(op string, le, re sqlparser.Expr, src string) (Node, error) {
	ns, err := p.Exprs(le, re)
	if err != nil {
		return nil, err
	}
	return arithOf(op, ns[0], ns[1], src)
}

// arithOf is l op r on planned operands.
func arithOf(op string, l, r Node, src string) (Node, error) {
	switch {
	case l.Type() == nil && r.Type() == nil:
		return nil, Errorf(ErrType, "NULL %s NULL needs a type; write CAST(NULL AS <type>)", op)
	case l.Type() == nil:
		l = TypedNull(l, r.Type())
	case r.Type() == nil:
		r = TypedNull(r, l.Type())
	}
	t, err := arithType(op, l.Type(), r.Type())
	if err != nil {
		return nil, &Error{Kind: ErrType, Msg: err.Error() + " (" + src + ")"}
	}
	return &arith{binaryOp: newBinary(t, src, l, r), op: op}, nil
}

// operands plans both sides of a comparison and finds the type they are
// compared as. A string literal compared with a number, a time or a
// BOOLEAN is read as that type (ts > '2024-01-01 00:00:00'), as Flink's
// implicit coercion of literals does; anything else must match.
func (p *Compiler) operands(l, r Node, src string) (Node, Node, *types.DataType, error) {
	switch {
	case l.Type() == nil && r.Type() == nil:
		return nil, nil, nil, Errorf(ErrType, "comparing NULL with NULL needs a type; write CAST(NULL AS <type>) (%s)", src)
	case l.Type() == nil:
		l = TypedNull(l, r.Type())
	case r.Type() == nil:
		r = TypedNull(r, l.Type())
	}
	var err error
	if l, err = coerceLiteral(l, r.Type()); err != nil {
		return nil, nil, nil, err
	}
	if r, err = coerceLiteral(r, l.Type()); err != nil {
		return nil, nil, nil, err
	}
	if !comparableKind(l.Type()) || !comparableKind(r.Type()) {
		return nil, nil, nil, Errorf(ErrType, "cannot compare %s with %s: values of nested types are not comparable (%s)", TypeName(l.Type()), TypeName(r.Type()), src)
	}
	ct, ok := compareType(l.Type(), r.Type())
	if !ok {
		return nil, nil, nil, Errorf(ErrType, "cannot compare %s with %s; CAST one side to the other's type (%s)", TypeName(l.Type()), TypeName(r.Type()), src)
	}
	return l, r, ct, nil
}

func (p *Compiler) comparison(e *sqlparser.ComparisonExpr, src string) (Node, error) {
	switch e.Operator {
	case "in", "not in":
		return p.in(e, src)
	case "like", "not like":
		return p.like(e, src)
	case "=", "!=", "<>", "<", "<=", ">", ">=":
	case "<=>":
		return nil, UnsupportedExpr("<=>", "null-safe equality")
	default:
		return nil, UnsupportedExpr("operator " + strings.ToUpper(e.Operator))
	}
	ns, err := p.Exprs(e.Left, e.Right)
	if err != nil {
		return nil, err
	}
	l, r := ns[0], ns[1]
	l, r, ct, err := p.operands(l, r, src)
	if err != nil {
		return nil, err
	}
	op := e.Operator
	if op == "!=" {
		op = "<>"
	}
	return newCompare(op, l, r, ct, src), nil
}

func (p *Compiler) in(e *sqlparser.ComparisonExpr, src string) (Node, error) {
	tuple, ok := e.Right.(sqlparser.ValTuple)
	if !ok {
		return nil, UnsupportedClause("IN with a subquery")
	}
	x, err := p.Expr(e.Left)
	if err != nil {
		return nil, err
	}
	n := &inList{exprBase: exprBase{src: src}, neg: e.Operator == "not in"}
	nn := true
	for _, it := range tuple {
		item, err := p.Expr(it)
		if err != nil {
			return nil, err
		}
		xx, item, ct, err := p.operands(x, item, src)
		if err != nil {
			return nil, err
		}
		x = xx // x may have been typed by the first item (NULL IN (1, 2))
		n.items = append(n.items, item)
		n.cts = append(n.cts, ct)
		nn = nn && item.Type().NotNull
	}
	n.x = x
	n.t = boolType(nn && notNull(x))
	return n, nil
}

func (p *Compiler) between(e *sqlparser.RangeCond, src string) (Node, error) {
	ns, err := p.Exprs(e.Left, e.From, e.To)
	if err != nil {
		return nil, err
	}
	x, lo, hi := ns[0], ns[1], ns[2]
	x1, lo, ctLo, err := p.operands(x, lo, src)
	if err != nil {
		return nil, err
	}
	x2, hi, ctHi, err := p.operands(x1, hi, src)
	if err != nil {
		return nil, err
	}
	return &between{exprBase: exprBase{t: boolType(notNull(x2, lo, hi)), src: src},
		x: x2, lo: lo, hi: hi, ctLo: ctLo, ctHi: ctHi, neg: e.Operator == sqlparser.NotBetweenStr}, nil
}

func (p *Compiler) like(e *sqlparser.ComparisonExpr, src string) (Node, error) {
	x, err := p.Expr(e.Left)
	if err != nil {
		return nil, err
	}
	x = TypedNull(x, types.StringType())
	if !IsChar(x.Type()) {
		return nil, Errorf(ErrType, "LIKE needs a string operand, got %s (%s); CAST it to STRING", TypeName(x.Type()), x.Text())
	}
	pat, err := p.Expr(e.Right)
	if err != nil {
		return nil, err
	}
	n := &like{exprBase: exprBase{src: src}, x: x, neg: e.Operator == "not like"}
	lit, ok := pat.(*literal)
	if _, isNull := pat.(*untyped); isNull {
		n.t = boolType(false)
		return n, nil
	}
	if !ok || !IsChar(lit.t) {
		return nil, UnsupportedExpr("LIKE with a pattern that is not a string literal", pat.Text())
	}
	var esc rune
	if e.Escape != nil {
		en, err := p.Expr(e.Escape)
		if err != nil {
			return nil, err
		}
		el, ok := en.(*literal)
		if !ok || !IsChar(el.t) || utf8.RuneCountInString(el.val.String()) != 1 {
			return nil, Errorf(ErrType, "ESCAPE needs a string literal of one character, got %s", en.Text())
		}
		esc, _ = utf8.DecodeRuneInString(el.val.String())
	}
	n.t = boolType(notNull(x) && lit.val.IsValid())
	if !lit.val.IsValid() {
		return n, nil
	}
	if n.match, err = likeMatcher(lit.val.String(), esc); err != nil {
		return nil, err
	}
	return n, nil
}

// function plans a call: a CAST (the rewrite's placeholder) or a scalar
// function of the registry (callFunction). Aggregate calls never reach it:
// expr1 hands them to the Scope (Aggregate) first.
func (p *Compiler) function(f *sqlparser.FuncExpr, src string) (Node, error) {
	if spec, ok := p.CastSpec(f); ok {
		return p.castCall(f, spec, src)
	}
	if cond, _ := FilterOf(f); cond != nil || f.Qualifier.IsEmpty() && f.Name.EqualString(FilterFunc) {
		return nil, Errorf(ErrSyntax, "FILTER (WHERE ...) follows an aggregate call (%s), as in COUNT(*) FILTER (WHERE x > 0); %s is not one", AggregateNames, src)
	}
	return p.callFunction(f, src)
}

// castCall plans CAST, TRY_CAST and a typed literal.
func (p *Compiler) castCall(f *sqlparser.FuncExpr, spec CastSpec, src string) (Node, error) {
	if len(f.Exprs) != 1 {
		return nil, Errorf(ErrSyntax, "CAST takes one expression (%s)", src)
	}
	ae, ok := f.Exprs[0].(*sqlparser.AliasedExpr)
	if !ok || !ae.As.IsEmpty() {
		return nil, Errorf(ErrSyntax, "bad CAST %s", src)
	}
	x, err := p.Expr(ae.Expr)
	if err != nil {
		return nil, err
	}
	if jv, ok := x.(*jsonValue); ok && spec.Returning {
		// JSON_VALUE(... RETURNING t): the type is the call's, so that a
		// value not of it meets the ON ERROR clause.
		to, err := castType(p.src.Src, spec)
		if err != nil {
			return nil, err
		}
		if !castable(types.StringType(), to) {
			return nil, Errorf(ErrType, "JSON_VALUE cannot return %s; RETURNING takes a type a STRING can be cast to (%s)", TypeName(to), src)
		}
		jv.src = src
		return jv, jv.returning(to)
	}
	var to *types.DataType
	if spec.Lit {
		to, err = literalType(spec, x)
	} else {
		to, err = castType(p.src.Src, spec)
	}
	if err != nil {
		return nil, err
	}
	if x.Type() == nil {
		return TypedNull(x, to), nil
	}
	if !castable(x.Type(), to) {
		return nil, Errorf(ErrType, "cannot cast %s to %s (%s)", TypeName(x.Type()), TypeName(to), src)
	}
	to = to.WithNotNull(x.Type().NotNull && !spec.Try)
	return &cast{exprBase: exprBase{t: to, src: src}, e: x, try: spec.Try, hint: !spec.Lit && !spec.Try}, nil
}

// literalType is the type of DATE '...', TIME '...' or TIMESTAMP '...': a
// time's precision is the number of fractional digits written.
func literalType(spec CastSpec, x Node) (*types.DataType, error) {
	lit, ok := x.(*literal)
	if !ok || !IsChar(lit.t) {
		return nil, Errorf(ErrSyntax, "%s needs a string literal", spec.Type)
	}
	s := lit.val.String()
	switch spec.Kind {
	case LitDate:
		return &types.DataType{Kind: types.Date, NotNull: true}, nil
	case LitTime:
		return &types.DataType{Kind: types.Time, Precision: fractionDigits(s), NotNull: true}, nil
	}
	return &types.DataType{Kind: types.Timestamp, Precision: fractionDigits(s), NotNull: true}, nil
}
