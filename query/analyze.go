package query

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
	"github.com/kshare/kshare/table"
)

// textOf prints an expression as the user wrote it (near enough: keywords
// come out in lower case), with the rewrite's placeholders turned back
// into CASTs and typed literals.
func (p *planner) textOf(n sqlparser.SQLNode) string {
	buf := sqlparser.NewTrackedBuffer(func(buf *sqlparser.TrackedBuffer, n sqlparser.SQLNode) {
		switch n := n.(type) {
		case *sqlparser.FuncExpr:
			if spec, ok := p.castSpec(n); ok {
				arg := sqlparser.SelectExprs(n.Exprs)
				switch {
				case spec.lit:
					buf.Myprintf("%s %v", spec.typ, arg)
				case spec.returning && len(n.Exprs) == 1:
					var args []string
					if ae, ok := n.Exprs[0].(*sqlparser.AliasedExpr); ok {
						if f, ok := ae.Expr.(*sqlparser.FuncExpr); ok {
							for _, e := range f.Exprs {
								args = append(args, p.textOf(e))
							}
						}
					}
					buf.Myprintf("%s", jsonValueText(args, spec.typ))
				case spec.try:
					buf.Myprintf("TRY_CAST(%v AS %s)", arg, spec.typ)
				default:
					buf.Myprintf("CAST(%v AS %s)", arg, spec.typ)
				}
				return
			}
			if text, ok := p.syntaxText(n); ok {
				buf.Myprintf("%s", text)
				return
			}
			if cond, args := filterOf(n); cond != nil {
				call := *n
				call.Exprs = args
				buf.Myprintf("%v FILTER (WHERE %v)", &call, cond)
				return
			}
		case *sqlparser.IsExpr:
			if p.rw.unknowns[n] {
				buf.Myprintf("%v %s", n.Expr, strings.Replace(n.Operator, "null", "unknown", 1))
				return
			}
		case *sqlparser.BinaryExpr:
			if n.Operator == concatOp {
				buf.Myprintf("%v || %v", n.Left, n.Right)
				return
			}
		case *sqlparser.SQLVal:
			if n.Type == sqlparser.StrVal {
				buf.Myprintf("%s", table.QuoteString(string(n.Val)))
				return
			}
		case *sqlparser.IntervalExpr:
			unit := strings.ToLower(n.Unit)
			if u, ok := strings.CutPrefix(unit, intervalPrefix); ok {
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

func (p *planner) castSpec(f *sqlparser.FuncExpr) (castSpec, bool) {
	name := f.Name.String()
	if !strings.HasPrefix(name, castFunc) || !f.Qualifier.IsEmpty() {
		return castSpec{}, false
	}
	k, err := strconv.Atoi(strings.TrimPrefix(name, castFunc))
	if err != nil || k < 0 || k >= len(p.rw.casts) {
		return castSpec{}, false
	}
	return p.rw.casts[k], true
}

// untyped is a NULL literal whose type comes from where it is used (a + NULL
// is NULL of a's type).
type untyped struct{ exprBase }

func (u *untyped) operands() []node { return nil }

func (u *untyped) eval(*evalCtx, arrow.RecordBatch) (arrow.Array, error) {
	return nil, fmt.Errorf("query: untyped NULL evaluated")
}

// typedNull gives an untyped NULL the type t; other nodes pass through.
func typedNull(n node, t *table.DataType) node {
	if _, ok := n.(*untyped); !ok {
		return n
	}
	t = t.WithNotNull(false)
	return newLiteral(t, scalar.MakeNullScalar(t.ArrowType()), n.text())
}

func boolType(notNull bool) *table.DataType {
	return &table.DataType{Kind: table.Boolean, NotNull: notNull}
}

func notNull(ns ...node) bool {
	for _, n := range ns {
		if n.typ() == nil || !n.typ().NotNull {
			return false
		}
	}
	return true
}

// exprs plans each of es, in order, stopping at the first error.
func (p *planner) exprs(es ...sqlparser.Expr) ([]node, error) {
	ns := make([]node, len(es))
	for i, e := range es {
		n, err := p.expr(e)
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
func (p *planner) expr(e sqlparser.Expr) (node, error) {
	n, err := p.expr1(e)
	if err != nil {
		return nil, err
	}
	switch n.(type) {
	case *literal, *untyped:
		return n, nil
	}
	if !isConstant(n) {
		return n, nil
	}
	return fold(n)
}

func (p *planner) expr1(e sqlparser.Expr) (node, error) {
	src := p.textOf(e)
	if p.agg != nil {
		// Aggregate calls and grouped expressions (see aggplan.go).
		if n, ok, err := p.agg.expr(e, src); ok {
			return n, err
		}
	}
	switch e := e.(type) {
	case *sqlparser.ParenExpr:
		return p.expr1(e.Expr)
	case *sqlparser.ColName:
		if n, ok, err := p.rowField(e, src); ok || err != nil {
			return n, err
		}
		return p.column(e)
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
		x, err := p.expr(e.Expr)
		if err != nil {
			return nil, err
		}
		op := strings.TrimPrefix(e.Operator, "is ")
		neg := strings.HasPrefix(op, "not ")
		what := strings.TrimPrefix(op, "not ")
		if p.rw.unknowns[e] {
			// IS UNKNOWN is IS NULL of a BOOLEAN, as in Flink.
			op = strings.Replace(op, "null", "unknown", 1)
		}
		if what != "null" || p.rw.unknowns[e] {
			x = typedNull(x, table.BooleanType())
			if x.typ().Kind != table.Boolean {
				return nil, errorf(ErrType, "IS %s needs a BOOLEAN operand, got %s (%s)", strings.ToUpper(op), tn(x.typ()), x.text())
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
		case concatOp:
			ns, err := p.exprs(e.Left, e.Right)
			if err != nil {
				return nil, err
			}
			return newCall(p, concatDef, ns, src)
		}
		return nil, unsupportedExpr("operator " + e.Operator)
	case *sqlparser.UnaryExpr:
		switch e.Operator {
		case "-", "+":
			x, err := p.expr(e.Expr)
			if err != nil {
				return nil, err
			}
			if x.typ() == nil {
				return x, nil
			}
			if !isNumeric(x.typ()) {
				return nil, errorf(ErrType, "unary %s needs a numeric operand, got %s (%s)", e.Operator, tn(x.typ()), x.text())
			}
			if e.Operator == "+" {
				return x, nil
			}
			return unaryCall(negDef, x.typ(), src, x, nil), nil
		}
		return nil, unsupportedExpr("operator " + strings.TrimSpace(e.Operator))
	case *sqlparser.FuncExpr:
		return p.function(e, src)
	case *sqlparser.ConvertExpr:
		return nil, unsupportedExpr("CONVERT", "write CAST(x AS type)")
	case *sqlparser.CaseExpr:
		return p.caseExpr(e, src)
	case *sqlparser.Subquery, *sqlparser.ExistsExpr:
		return nil, unsupportedClause("a subquery")
	case *sqlparser.GroupConcatExpr:
		return nil, unsupportedExpr("aggregate function GROUP_CONCAT")
	case *sqlparser.IntervalExpr:
		return nil, unsupportedExpr("INTERVAL here", "an INTERVAL is added to or subtracted from a time: ts + INTERVAL '5' MINUTE")
	case *sqlparser.SubstrExpr:
		return nil, unsupportedExpr("function SUBSTRING")
	case sqlparser.ValTuple:
		return nil, unsupportedExpr("a row value " + src)
	}
	return nil, unsupportedExpr(src)
}

func (p *planner) value(v *sqlparser.SQLVal, src string) (node, error) {
	s := string(v.Val)
	switch v.Type {
	case sqlparser.StrVal:
		t := &table.DataType{Kind: table.Char, Length: utf8.RuneCountInString(s), NotNull: true}
		return newLiteral(t, scalar.NewStringScalar(s), src), nil
	case sqlparser.IntVal:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return newLiteral(&table.DataType{Kind: table.Int, NotNull: true}, scalar.NewInt32Scalar(int32(n)), src), nil
			}
			return newLiteral(&table.DataType{Kind: table.BigInt, NotNull: true}, scalar.NewInt64Scalar(n), src), nil
		}
		return decimalLiteral(s, src)
	case sqlparser.FloatVal:
		if strings.ContainsAny(s, "eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, errorf(ErrSyntax, "bad number %s", s)
			}
			return newLiteral(&table.DataType{Kind: table.Double, NotNull: true}, scalar.NewFloat64Scalar(f), src), nil
		}
		return decimalLiteral(s, src)
	case sqlparser.HexVal:
		b, err := v.HexDecode()
		if err != nil {
			return nil, errorf(ErrSyntax, "bad binary literal %s: %v", src, err)
		}
		t := &table.DataType{Kind: table.Binary, Length: max(len(b), 1), NotNull: true}
		if len(b) == 0 {
			t = &table.DataType{Kind: table.Varbinary, Length: table.MaxLength, NotNull: true}
			return newLiteral(t, scalar.NewBinaryScalar(memory.NewBufferBytes(b), arrow.BinaryTypes.Binary), src), nil
		}
		return newLiteral(t, scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(b), t.ArrowType()), src), nil
	case sqlparser.ValArg:
		return nil, unsupportedExpr("a parameter (?)")
	}
	return nil, unsupportedExpr("literal " + src)
}

// decimalLiteral types 1.50 as DECIMAL(3, 2), as Flink does: the precision
// counts the significant digits, the scale the digits after the point.
func decimalLiteral(s, src string) (node, error) {
	v, scale, ok := decimal.ParseBig(s)
	if !ok {
		return nil, errorf(ErrSyntax, "bad number %s", s)
	}
	prec := len(new(big.Int).Abs(v).String())
	if v.Sign() == 0 {
		prec = 1
	}
	prec = max(prec, scale)
	if prec > table.MaxDecimalPrecision {
		return nil, errorf(ErrType, "number %s has more than %d digits", s, table.MaxDecimalPrecision)
	}
	t := &table.DataType{Kind: table.Decimal, Precision: prec, Scale: scale, NotNull: true}
	return newLiteral(t, scalar.NewDecimal128Scalar(decimal128.FromBigInt(v), t.ArrowType()), src), nil
}

func (p *planner) boolOperand(e sqlparser.Expr, op string) (node, error) {
	x, err := p.expr(e)
	if err != nil {
		return nil, err
	}
	x = typedNull(x, table.BooleanType())
	if x.typ().Kind != table.Boolean {
		what := "BOOLEAN operands"
		if op == "NOT" {
			what = "a BOOLEAN operand"
		}
		return nil, errorf(ErrType, "%s needs %s, got %s (%s)", op, what, tn(x.typ()), x.text())
	}
	return x, nil
}

func (p *planner) logic(or bool, le, re sqlparser.Expr, src string) (node, error) {
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

func (p *planner) arith(op string, le, re sqlparser.Expr, src string) (node, error) {
	ns, err := p.exprs(le, re)
	if err != nil {
		return nil, err
	}
	return arithOf(op, ns[0], ns[1], src)
}

// arithOf is l op r on planned operands.
func arithOf(op string, l, r node, src string) (node, error) {
	switch {
	case l.typ() == nil && r.typ() == nil:
		return nil, errorf(ErrType, "NULL %s NULL needs a type; write CAST(NULL AS <type>)", op)
	case l.typ() == nil:
		l = typedNull(l, r.typ())
	case r.typ() == nil:
		r = typedNull(r, l.typ())
	}
	t, err := arithType(op, l.typ(), r.typ())
	if err != nil {
		return nil, &Error{Kind: ErrType, Msg: err.Error() + " (" + src + ")"}
	}
	return &arith{binaryOp: newBinary(t, src, l, r), op: op}, nil
}

// operands plans both sides of a comparison and finds the type they are
// compared as. A string literal compared with a number, a time or a
// BOOLEAN is read as that type (ts > '2024-01-01 00:00:00'), as Flink's
// implicit coercion of literals does; anything else must match.
func (p *planner) operands(l, r node, src string) (node, node, *table.DataType, error) {
	switch {
	case l.typ() == nil && r.typ() == nil:
		return nil, nil, nil, errorf(ErrType, "comparing NULL with NULL needs a type; write CAST(NULL AS <type>) (%s)", src)
	case l.typ() == nil:
		l = typedNull(l, r.typ())
	case r.typ() == nil:
		r = typedNull(r, l.typ())
	}
	var err error
	if l, err = coerceLiteral(l, r.typ()); err != nil {
		return nil, nil, nil, err
	}
	if r, err = coerceLiteral(r, l.typ()); err != nil {
		return nil, nil, nil, err
	}
	if !comparableKind(l.typ()) || !comparableKind(r.typ()) {
		return nil, nil, nil, errorf(ErrType, "cannot compare %s with %s: values of nested types are not comparable (%s)", tn(l.typ()), tn(r.typ()), src)
	}
	ct, ok := compareType(l.typ(), r.typ())
	if !ok {
		return nil, nil, nil, errorf(ErrType, "cannot compare %s with %s; CAST one side to the other's type (%s)", tn(l.typ()), tn(r.typ()), src)
	}
	return l, r, ct, nil
}

func (p *planner) comparison(e *sqlparser.ComparisonExpr, src string) (node, error) {
	switch e.Operator {
	case "in", "not in":
		return p.in(e, src)
	case "like", "not like":
		return p.like(e, src)
	case "=", "!=", "<>", "<", "<=", ">", ">=":
	case "<=>":
		return nil, unsupportedExpr("<=>", "null-safe equality")
	default:
		return nil, unsupportedExpr("operator " + strings.ToUpper(e.Operator))
	}
	ns, err := p.exprs(e.Left, e.Right)
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

func (p *planner) in(e *sqlparser.ComparisonExpr, src string) (node, error) {
	tuple, ok := e.Right.(sqlparser.ValTuple)
	if !ok {
		return nil, unsupportedClause("IN with a subquery")
	}
	x, err := p.expr(e.Left)
	if err != nil {
		return nil, err
	}
	n := &inList{exprBase: exprBase{src: src}, neg: e.Operator == "not in"}
	nn := true
	for _, it := range tuple {
		item, err := p.expr(it)
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
		nn = nn && item.typ().NotNull
	}
	n.x = x
	n.t = boolType(nn && notNull(x))
	return n, nil
}

func (p *planner) between(e *sqlparser.RangeCond, src string) (node, error) {
	ns, err := p.exprs(e.Left, e.From, e.To)
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

func (p *planner) like(e *sqlparser.ComparisonExpr, src string) (node, error) {
	x, err := p.expr(e.Left)
	if err != nil {
		return nil, err
	}
	x = typedNull(x, table.StringType())
	if !isChar(x.typ()) {
		return nil, errorf(ErrType, "LIKE needs a string operand, got %s (%s); CAST it to STRING", tn(x.typ()), x.text())
	}
	pat, err := p.expr(e.Right)
	if err != nil {
		return nil, err
	}
	n := &like{exprBase: exprBase{src: src}, x: x, neg: e.Operator == "not like"}
	lit, ok := pat.(*literal)
	if _, isNull := pat.(*untyped); isNull {
		n.t = boolType(false)
		return n, nil
	}
	if !ok || !isChar(lit.t) {
		return nil, unsupportedExpr("LIKE with a pattern that is not a string literal", pat.text())
	}
	var esc rune
	if e.Escape != nil {
		en, err := p.expr(e.Escape)
		if err != nil {
			return nil, err
		}
		el, ok := en.(*literal)
		if !ok || !isChar(el.t) || utf8.RuneCountInString(el.val.String()) != 1 {
			return nil, errorf(ErrType, "ESCAPE needs a string literal of one character, got %s", en.text())
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
// expr1 hands them to the aggregate planner (aggplan.go) first.
func (p *planner) function(f *sqlparser.FuncExpr, src string) (node, error) {
	if spec, ok := p.castSpec(f); ok {
		return p.castCall(f, spec, src)
	}
	if cond, _ := filterOf(f); cond != nil || f.Qualifier.IsEmpty() && f.Name.EqualString(filterFunc) {
		return nil, errorf(ErrSyntax, "FILTER (WHERE ...) follows an aggregate call (%s), as in COUNT(*) FILTER (WHERE x > 0); %s is not one", aggList, src)
	}
	return p.callFunction(f, src)
}

// castCall plans CAST, TRY_CAST and a typed literal.
func (p *planner) castCall(f *sqlparser.FuncExpr, spec castSpec, src string) (node, error) {
	if len(f.Exprs) != 1 {
		return nil, errorf(ErrSyntax, "CAST takes one expression (%s)", src)
	}
	ae, ok := f.Exprs[0].(*sqlparser.AliasedExpr)
	if !ok || !ae.As.IsEmpty() {
		return nil, errorf(ErrSyntax, "bad CAST %s", src)
	}
	x, err := p.expr(ae.Expr)
	if err != nil {
		return nil, err
	}
	if jv, ok := x.(*jsonValue); ok && spec.returning {
		// JSON_VALUE(... RETURNING t): the type is the call's, so that a
		// value not of it meets the ON ERROR clause.
		to, err := castType(p.rw, spec)
		if err != nil {
			return nil, err
		}
		if !castable(table.StringType(), to) {
			return nil, errorf(ErrType, "JSON_VALUE cannot return %s; RETURNING takes a type a STRING can be cast to (%s)", tn(to), src)
		}
		jv.src = src
		return jv, jv.returning(to)
	}
	var to *table.DataType
	if spec.lit {
		to, err = literalType(spec, x)
	} else {
		to, err = castType(p.rw, spec)
	}
	if err != nil {
		return nil, err
	}
	if x.typ() == nil {
		return typedNull(x, to), nil
	}
	if !castable(x.typ(), to) {
		return nil, errorf(ErrType, "cannot cast %s to %s (%s)", tn(x.typ()), tn(to), src)
	}
	to = to.WithNotNull(x.typ().NotNull && !spec.try)
	return &cast{exprBase: exprBase{t: to, src: src}, e: x, try: spec.try, hint: !spec.lit && !spec.try}, nil
}

// literalType is the type of DATE '...', TIME '...' or TIMESTAMP '...': a
// time's precision is the number of fractional digits written.
func literalType(spec castSpec, x node) (*table.DataType, error) {
	lit, ok := x.(*literal)
	if !ok || !isChar(lit.t) {
		return nil, errorf(ErrSyntax, "%s needs a string literal", spec.typ)
	}
	s := lit.val.String()
	switch spec.kind {
	case litDate:
		return &table.DataType{Kind: table.Date, NotNull: true}, nil
	case litTime:
		return &table.DataType{Kind: table.Time, Precision: fractionDigits(s), NotNull: true}, nil
	}
	return &table.DataType{Kind: table.Timestamp, Precision: fractionDigits(s), NotNull: true}, nil
}
