package expr

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

// A Node is a planned expression. It evaluates on a whole batch at once and
// returns one value per row of the batch; its array's Arrow type is always
// Type().ArrowType(), so that nodes compose without checking each other.
//
// Each node type of this package embeds exprBase for its type and text and
// states only what is its own: its operands and how it evaluates.
type Node interface {
	Type() *types.DataType
	// Eval returns an array of b.NumRows() values, which the caller
	// releases.
	Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error)
	// Text is the expression as written, for messages.
	Text() string
	// Operands are the nodes this one evaluates, so that code walking the
	// tree (constant folding, and what reads which column) needs no case
	// per node type.
	Operands() []Node
}

// exprBase is what every node has: its result type and its text.
type exprBase struct {
	t   *types.DataType
	src string // as written
}

func (e *exprBase) Type() *types.DataType { return e.t }
func (e *exprBase) Text() string          { return e.src }

// IsConstant reports whether n reads no column: only a column reference
// reads one, so a node is constant when all its operands are, unless its
// value changes by itself (CURRENT_TIMESTAMP).
func IsConstant(n Node) bool {
	switch n := n.(type) {
	case *ColRef:
		return false
	case *call:
		if n.fn.volatile {
			return false
		}
	}
	for _, o := range n.Operands() {
		if !IsConstant(o) {
			return false
		}
	}
	return true
}

// EvalCtx carries what every kernel needs: the allocator, and a context for
// arrow's compute functions. Evaluation is bounded CPU work, so this context
// is not the query's: a cancel ends the query between batches, never halfway
// through one.
type EvalCtx struct {
	ctx context.Context
	mem memory.Allocator
}

// NewEvalCtx is an EvalCtx whose kernels allocate from mem.
func NewEvalCtx(mem memory.Allocator) *EvalCtx {
	ctx := compute.WithAllocator(context.Background(), mem)
	e := compute.DefaultExecCtx()
	// Batches are small; compute's per-column goroutines would cost more
	// than they save, and a query should start none it does not own.
	e.NumParallel = 1
	return &EvalCtx{ctx: compute.SetExecCtx(ctx, e), mem: mem}
}

// Mem is the allocator the kernels allocate from.
func (ec *EvalCtx) Mem() memory.Allocator { return ec.mem }

// call runs one of arrow's compute functions on arrays.
func (ec *EvalCtx) call(fn string, opts compute.FunctionOptions, args ...arrow.Array) (arrow.Array, error) {
	ds := make([]compute.Datum, len(args))
	for i, a := range args {
		ds[i] = compute.NewDatum(a)
	}
	defer func() {
		for _, d := range ds {
			d.Release()
		}
	}()
	out, err := compute.CallFunction(ec.ctx, fn, opts, ds...)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	ad, ok := out.(*compute.ArrayDatum)
	if !ok {
		return nil, fmt.Errorf("query: %s returned %s, not an array", fn, out.Kind())
	}
	return ad.MakeArray(), nil
}

// TakeRows is the batch made of rows idx of b, in that order.
func TakeRows(ec *EvalCtx, b arrow.RecordBatch, idx []int) (arrow.RecordBatch, error) {
	ib := array.NewInt32Builder(ec.mem)
	defer ib.Release()
	ib.Reserve(len(idx))
	for _, i := range idx {
		ib.UnsafeAppend(int32(i))
	}
	ia := ib.NewArray()
	defer ia.Release()
	cols := make([]arrow.Array, b.NumCols())
	defer ReleaseAll(cols)
	for k := range cols {
		c, err := compute.TakeArray(ec.ctx, b.Column(k), ia)
		if err != nil {
			return nil, err
		}
		cols[k] = c
	}
	return array.NewRecordBatch(b.Schema(), cols, int64(len(idx))), nil
}

func ReleaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// EvalArgs evaluates operands in order; the caller releases the arrays
// (ReleaseAll). On error nothing is left to release.
func EvalArgs(ec *EvalCtx, b arrow.RecordBatch, ns ...Node) ([]arrow.Array, error) {
	as := make([]arrow.Array, len(ns))
	for k, n := range ns {
		a, err := n.Eval(ec, b)
		if err != nil {
			ReleaseAll(as)
			return nil, err
		}
		as[k] = a
	}
	return as, nil
}

// evalUnary evaluates the operand e of a node with one operand and hands
// its array to f, releasing it after.
func evalUnary(ec *EvalCtx, b arrow.RecordBatch, e Node, f func(*EvalCtx, arrow.Array) (arrow.Array, error)) (arrow.Array, error) {
	a, err := e.Eval(ec, b)
	if err != nil {
		return nil, err
	}
	defer a.Release()
	return f(ec, a)
}

// ColRef reads a column of the table; its text is the name as written.
type ColRef struct {
	exprBase
	// Index is the column's place in the batch a plan evaluates on,
	// which the planner renumbers when it narrows the batch to the
	// columns read.
	Index int
	// Column is the column read.
	Column types.Column
}

// NewColRef is a reference to column c at place k of the batch; src is
// its name as written.
func NewColRef(k int, c types.Column, src string) *ColRef {
	return &ColRef{exprBase: exprBase{t: c.Type, src: src}, Index: k, Column: c}
}

func (c *ColRef) Operands() []Node { return nil }
func (c *ColRef) Eval(_ *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	a := b.Column(c.Index)
	a.Retain()
	return a, nil
}

// literal is a constant, held as a scalar and spread over the batch.
type literal struct {
	exprBase
	val scalar.Scalar
	// single is the value as an array of one, for the kernels that read a
	// literal in place (evalOperands): built once, from Go's allocator, it
	// lives as long as the plan.
	single atomic.Pointer[arrow.Array]
}

// one is the literal as an array of one value; the caller releases it.
func (l *literal) one() (arrow.Array, error) {
	if p := l.single.Load(); p != nil {
		(*p).Retain()
		return *p, nil
	}
	a, err := scalar.MakeArrayFromScalar(l.val, 1, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	if !l.single.CompareAndSwap(nil, &a) {
		a.Release() // another evaluation built it first
		return l.one()
	}
	a.Retain()
	return a, nil
}

func newLiteral(t *types.DataType, val scalar.Scalar, src string) *literal {
	return &literal{exprBase: exprBase{t: t, src: src}, val: val}
}

func (l *literal) Operands() []Node { return nil }
func (l *literal) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	return scalar.MakeArrayFromScalar(l.val, int(b.NumRows()), ec.mem)
}

// binaryOp is what a node of two operands has.
type binaryOp struct {
	exprBase
	l, r Node
}

func (n *binaryOp) Operands() []Node { return []Node{n.l, n.r} }

// newBinary is the binary part of a node of type t over l and r.
func newBinary(t *types.DataType, src string, l, r Node) binaryOp {
	return binaryOp{exprBase: exprBase{t: t, src: src}, l: l, r: r}
}

// arith is + - * / % on numbers.
type arith struct {
	binaryOp
	op string
}

func (n *arith) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	ops, err := evalOperands(ec, b, n.l, n.r)
	if err != nil {
		return nil, err
	}
	defer releaseOperands(ops)
	rows := int(b.NumRows())
	if err := fullOperands(ec, ops, rows); err != nil {
		return nil, err
	}
	if n.t.Kind != types.Decimal && n.op != "%" {
		if out, ok, err := nativeArith(ec, n, ops[0], ops[1]); ok {
			return out, err
		}
	}
	for k := range ops {
		if err := ops[k].spread(ec, rows); err != nil {
			return nil, err
		}
	}
	la, ra := ops[0].a, ops[1].a
	switch {
	case n.t.Kind == types.Decimal:
		return decimalArith(ec.mem, n, la, ra)
	case n.op == "%":
		return intMod(ec.mem, n, la, ra)
	}
	// Operands are widened to the result type first, so that compute sees
	// two arrays of one type and its overflow checks are the result's.
	lc, err := castArray(ec, la, n.l.Type(), n.t, false)
	if err != nil {
		return nil, err
	}
	defer lc.Release()
	rc, err := castArray(ec, ra, n.r.Type(), n.t, false)
	if err != nil {
		return nil, err
	}
	defer rc.Release()
	fn := arithFuncs[n.op]
	if n.op == "/" && isApprox(n.t) {
		// Floating-point division by zero gives Infinity or NaN, as in
		// Flink (Java); compute's checked divide would fail instead.
		fn = "divide_unchecked"
	}
	out, err := ec.call(fn, nil, lc, rc)
	if err != nil {
		return nil, n.evalError(err)
	}
	return out, nil
}

// arithFuncs are arrow's checked compute functions for the operators.
var arithFuncs = map[string]string{"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}

// errDivZero is what every division by zero wraps.
var errDivZero = errors.New("division by zero")

func (n *arith) evalError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "divide by zero") || errors.Is(err, errDivZero):
		return Errorf(ErrEval, "division by zero in %s", n.src)
	case strings.Contains(msg, "overflow"):
		return Errorf(ErrEval, "%s overflows %s", n.src, n.t.WithNotNull(false))
	}
	return &Error{Kind: ErrEval, Msg: fmt.Sprintf("%s: %v", n.src, err)}
}

// intMod is % on integers, with Java's sign rule (the sign of the dividend),
// which Go's % shares.
func intMod(mem memory.Allocator, n *arith, la, ra arrow.Array) (arrow.Array, error) {
	lr, rr := render.IntReader(la), render.IntReader(ra)
	var app func(int64)
	return eachRow(mem, n.t.ArrowType(), []arrow.Array{la, ra}, func(b array.Builder, i int) error {
		d := rr(i)
		if d == 0 {
			return n.evalError(errDivZero)
		}
		if app == nil {
			app = intAppender(b)
		}
		app(lr(i) % d) // |result| < |d|, so it fits the divisor's type
		return nil
	})
}

// eachRow builds an array of type t: f appends row i's value for each row
// where no array of as is NULL; the other rows are NULL.
func eachRow[B array.Builder](mem memory.Allocator, t arrow.DataType, as []arrow.Array, f func(b B, i int) error) (arrow.Array, error) {
	n := as[0].Len()
	b := array.NewBuilder(mem, t)
	defer b.Release()
	b.Reserve(n)
	bb := b.(B)
	nulls := false
	for _, a := range as {
		nulls = nulls || a.NullN() > 0
	}
	for i := 0; i < n; i++ {
		if nulls && anyNull(as, i) {
			b.AppendNull()
			continue
		}
		if err := f(bb, i); err != nil {
			return nil, err
		}
	}
	return b.NewArray(), nil
}

func anyNull(as []arrow.Array, i int) bool {
	for _, a := range as {
		if a.IsNull(i) {
			return true
		}
	}
	return false
}

// decReader yields the unscaled value of an exact number (integers have
// scale 0).
func decReader(a arrow.Array, t *types.DataType) func(int) *big.Int {
	if t.Kind == types.Decimal {
		d := a.(*array.Decimal128)
		return func(i int) *big.Int { return d.Value(i).BigInt() }
	}
	r := render.IntReader(a)
	return func(i int) *big.Int { return big.NewInt(r(i)) }
}

func scaleOf(t *types.DataType) int {
	if t.Kind == types.Decimal {
		return t.Scale
	}
	return 0
}

// decimalArith computes exactly and rounds once, half away from zero, to the
// result's scale; a result with more digits than its precision is an error
// (Flink gives NULL; kshare will not turn a number into a NULL silently).
func decimalArith(mem memory.Allocator, n *arith, la, ra arrow.Array) (arrow.Array, error) {
	lr, rr := decReader(la, n.l.Type()), decReader(ra, n.r.Type())
	s1, s2, s := scaleOf(n.l.Type()), scaleOf(n.r.Type()), n.t.Scale
	return eachRow(mem, n.t.ArrowType(), []arrow.Array{la, ra}, func(b *array.Decimal128Builder, i int) error {
		x, y := lr(i), rr(i)
		var v *big.Int
		switch n.op {
		case "+", "-":
			m := max(s1, s2)
			x, y = rescale(x, s1, m), rescale(y, s2, m)
			if n.op == "+" {
				v = rescale(new(big.Int).Add(x, y), m, s)
			} else {
				v = rescale(new(big.Int).Sub(x, y), m, s)
			}
		case "*":
			v = rescale(new(big.Int).Mul(x, y), s1+s2, s)
		case "/":
			if y.Sign() == 0 {
				return n.evalError(errDivZero)
			}
			// x/10^s1 / (y/10^s2) at scale s is x*10^(s+s2) / (y*10^s1),
			// rounded: divide at one more digit and round that away.
			num := new(big.Int).Mul(x, pow10(s+s2+1))
			den := new(big.Int).Mul(y, pow10(s1))
			v = rescale(new(big.Int).Quo(num, den), s+1, s)
		case "%":
			if y.Sign() == 0 {
				return n.evalError(errDivZero)
			}
			m := max(s1, s2)
			x, y = rescale(x, s1, m), rescale(y, s2, m)
			v = rescale(new(big.Int).Rem(x, y), m, s)
		}
		if !fitsDecimal(v, n.t.Precision) {
			return Errorf(ErrEval, "%s overflows %s", n.src, n.t.WithNotNull(false))
		}
		b.Append(decimal128.FromBigInt(v))
		return nil
	})
}

// The operators of one operand are calls of these definitions, which no
// name reaches (only the operator): unary minus keeps its operand's type,
// NOT keeps NULL, the IS tests are never NULL.
var (
	negDef = &funcDef{name: "-", eval: negate}
	notDef = &funcDef{name: "NOT", eval: func(ec *EvalCtx, _ *call, as []arrow.Array) (arrow.Array, error) {
		return ec.call("not", nil, as[0])
	}}
	isDef = &funcDef{name: "IS", eval: isTest}
)

// unaryCall is the call of an operator of one operand.
func unaryCall(d *funcDef, t *types.DataType, src string, x Node, state any) *call {
	return &call{exprBase: exprBase{t: t, src: src}, fn: d, args: []Node{x}, state: state}
}

func negate(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	a := as[0]
	if c.Type().Kind == types.Decimal {
		d := a.(*array.Decimal128)
		bld := array.NewDecimal128Builder(ec.mem, d.DataType().(*arrow.Decimal128Type))
		defer bld.Release()
		for i := 0; i < d.Len(); i++ {
			if d.IsNull(i) {
				bld.AppendNull()
			} else {
				bld.Append(d.Value(i).Negate())
			}
		}
		return bld.NewArray(), nil
	}
	out, err := ec.call("negate", nil, a)
	if err != nil {
		return nil, Errorf(ErrEval, "%s overflows %s", c.src, c.Type().WithNotNull(false))
	}
	return out, nil
}

// compare is = <> < <= > >=.
type compare struct {
	binaryOp
	op string
	ct *types.DataType // the type both sides are compared as
}

func (n *compare) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	ops, err := evalOperands(ec, b, n.l, n.r)
	if err != nil {
		return nil, err
	}
	defer releaseOperands(ops)
	if err := fullOperands(ec, ops, int(b.NumRows())); err != nil {
		return nil, err
	}
	return compareOperands(ec, n.op, ops[0], n.l.Type(), ops[1], n.r.Type(), n.ct)
}

// newCompare is l op r, compared as type ct: NULL if either side is.
func newCompare(op string, l, r Node, ct *types.DataType, src string) *compare {
	return &compare{binaryOp: newBinary(boolType(notNull(l, r)), src, l, r), op: op, ct: ct}
}

var compareFuncs = map[string]string{
	"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal",
}

func compareArrays(ec *EvalCtx, op string, la arrow.Array, lt *types.DataType, ra arrow.Array, rt *types.DataType, ct *types.DataType) (arrow.Array, error) {
	return compareOperands(ec, op, operand{a: la}, lt, operand{a: ra}, rt, ct)
}

// compareOperands is compareArrays where either side (not both) may be a
// single value for every row.
func compareOperands(ec *EvalCtx, op string, l operand, lt *types.DataType, r operand, rt *types.DataType, ct *types.DataType) (arrow.Array, error) {
	if IsNumeric(ct) && ct.Kind != types.Decimal {
		// Numbers are read as ct's values in place, without a cast.
		if out, ok := nativeCompare(ec, op, l, r, ct); ok {
			return out, nil
		}
	}
	rows := operandRows(l, r)
	ops := []operand{l, r}
	ts := []*types.DataType{lt, rt}
	for k, o := range ops {
		if ct.Kind == types.Decimal {
			o.a.Retain()
		} else {
			c, err := castArray(ec, o.a, ts[k], ct, false)
			if err != nil {
				releaseOperands(ops[:k])
				return nil, err
			}
			o.a = c
		}
		ops[k] = o
	}
	defer releaseOperands(ops)
	if ct.Kind != types.Decimal {
		if out, ok := nativeCompare(ec, op, ops[0], ops[1], ct); ok {
			return out, nil // times, in ct's unit
		}
	}
	for k := range ops {
		if err := ops[k].spread(ec, rows); err != nil {
			return nil, err
		}
	}
	if ct.Kind == types.Decimal {
		return decimalCompare(ec.mem, op, ops[0].a, lt, ops[1].a, rt), nil
	}
	return ec.call(compareFuncs[op], nil, ops[0].a, ops[1].a)
}

// decimalCompare compares exact numbers of any scales exactly; casting both
// to one DECIMAL could need more than 38 digits.
func decimalCompare(mem memory.Allocator, op string, la arrow.Array, lt *types.DataType, ra arrow.Array, rt *types.DataType) arrow.Array {
	lr, rr := decReader(la, lt), decReader(ra, rt)
	s1, s2 := scaleOf(lt), scaleOf(rt)
	m := max(s1, s2)
	out, _ := eachRow(mem, arrow.FixedWidthTypes.Boolean, []arrow.Array{la, ra}, func(b *array.BooleanBuilder, i int) error {
		c := rescale(lr(i), s1, m).Cmp(rescale(rr(i), s2, m))
		var v bool
		switch op {
		case "=":
			v = c == 0
		case "<>":
			v = c != 0
		case "<":
			v = c < 0
		case "<=":
			v = c <= 0
		case ">":
			v = c > 0
		case ">=":
			v = c >= 0
		}
		b.UnsafeAppend(v)
		return nil
	})
	return out
}

// logic is AND and OR, with SQL's three-valued logic (Kleene's). The right
// side is evaluated only on the rows the left side does not decide, so that
// `qty <> 0 AND price / qty > 2` never divides by zero, as in Flink.
type logic struct {
	binaryOp
	or bool
}

func (n *logic) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	la, err := n.l.Eval(ec, b)
	if err != nil {
		return nil, err
	}
	defer la.Release()
	lv := la.(*array.Boolean)
	// A row is decided by the left side alone when it is FALSE for AND or
	// TRUE for OR.
	var open []int
	for i := 0; i < lv.Len(); i++ {
		if !(lv.IsValid(i) && lv.Value(i) == n.or) {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		la.Retain()
		return la, nil
	}
	fn := "and_kleene"
	if n.or {
		fn = "or_kleene"
	}
	if len(open) == lv.Len() {
		ra, err := n.r.Eval(ec, b)
		if err != nil {
			return nil, err
		}
		defer ra.Release()
		return ec.call(fn, nil, la, ra)
	}
	sub, err := TakeRows(ec, b, open)
	if err != nil {
		return nil, err
	}
	defer sub.Release()
	ra, err := n.r.Eval(ec, sub)
	if err != nil {
		return nil, err
	}
	defer ra.Release()
	rv := ra.(*array.Boolean)
	out := array.NewBooleanBuilder(ec.mem)
	defer out.Release()
	out.Reserve(lv.Len())
	j := 0
	for i := 0; i < lv.Len(); i++ {
		if j >= len(open) || open[j] != i {
			out.UnsafeAppend(n.or) // decided by the left side
			continue
		}
		// Left is NULL or the neutral value (TRUE for AND, FALSE for OR).
		leftNull := lv.IsNull(i)
		switch {
		case rv.IsValid(j) && rv.Value(j) == n.or: // right decides
			out.UnsafeAppend(n.or)
		case leftNull || rv.IsNull(j):
			out.AppendNull()
		default:
			out.UnsafeAppend(!n.or)
		}
		j++
	}
	return out.NewArray(), nil
}

// isSpec is what an IS test tests: IS [NOT] NULL, TRUE or FALSE.
type isSpec struct {
	what string // "null", "true", "false"
	neg  bool
}

func isTest(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	n, a := c.state.(isSpec), as[0]
	if n.what == "null" {
		fn := "is_null"
		if n.neg {
			fn = "is_not_null"
		}
		return ec.call(fn, nil, a)
	}
	v := a.(*array.Boolean)
	want := n.what == "true"
	out := array.NewBooleanBuilder(ec.mem)
	defer out.Release()
	out.Reserve(v.Len())
	for i := 0; i < v.Len(); i++ {
		out.UnsafeAppend((v.IsValid(i) && v.Value(i) == want) != n.neg)
	}
	return out.NewArray(), nil
}

// inList is x [NOT] IN (a, b, ...): x = a OR x = b OR ..., which gives SQL's
// answer for NULLs on either side (NULL when nothing matched and a NULL was
// involved).
type inList struct {
	exprBase
	x     Node
	items []Node
	cts   []*types.DataType
	neg   bool
}

func (n *inList) Operands() []Node { return append([]Node{n.x}, n.items...) }
func (n *inList) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	xa, err := n.x.Eval(ec, b)
	if err != nil {
		return nil, err
	}
	defer xa.Release()
	var acc arrow.Array
	defer func() {
		if acc != nil {
			acc.Release()
		}
	}()
	for k, it := range n.items {
		ia, err := it.Eval(ec, b)
		if err != nil {
			return nil, err
		}
		eq, err := compareArrays(ec, "=", xa, n.x.Type(), ia, it.Type(), n.cts[k])
		ia.Release()
		if err != nil {
			return nil, err
		}
		if acc == nil {
			acc = eq
			continue
		}
		next, err := ec.call("or_kleene", nil, acc, eq)
		eq.Release()
		if err != nil {
			return nil, err
		}
		acc.Release()
		acc = next
	}
	if n.neg {
		return ec.call("not", nil, acc)
	}
	acc.Retain()
	return acc, nil
}

// between is x [NOT] BETWEEN lo AND hi: lo <= x AND x <= hi.
type between struct {
	exprBase
	x, lo, hi  Node
	ctLo, ctHi *types.DataType
	neg        bool
}

func (n *between) Operands() []Node { return []Node{n.x, n.lo, n.hi} }
func (n *between) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	as, err := EvalArgs(ec, b, n.x, n.lo, n.hi)
	if err != nil {
		return nil, err
	}
	defer ReleaseAll(as)
	xa, la, ha := as[0], as[1], as[2]
	ge, err := compareArrays(ec, ">=", xa, n.x.Type(), la, n.lo.Type(), n.ctLo)
	if err != nil {
		return nil, err
	}
	defer ge.Release()
	le, err := compareArrays(ec, "<=", xa, n.x.Type(), ha, n.hi.Type(), n.ctHi)
	if err != nil {
		return nil, err
	}
	defer le.Release()
	both, err := ec.call("and_kleene", nil, ge, le)
	if err != nil || !n.neg {
		return both, err
	}
	defer both.Release()
	return ec.call("not", nil, both)
}

// like is x [NOT] LIKE 'pattern' [ESCAPE 'c'].
type like struct {
	exprBase
	x     Node
	match func(string) bool // nil: the pattern is NULL
	neg   bool
}

func (n *like) Operands() []Node { return []Node{n.x} }
func (n *like) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	return evalUnary(ec, b, n.x, n.matchAll)
}

func (n *like) matchAll(ec *EvalCtx, a arrow.Array) (arrow.Array, error) {
	s := a.(*array.String)
	out := array.NewBooleanBuilder(ec.mem)
	defer out.Release()
	out.Reserve(s.Len())
	for i := 0; i < s.Len(); i++ {
		if s.IsNull(i) || n.match == nil {
			out.AppendNull()
			continue
		}
		out.UnsafeAppend(n.match(s.Value(i)) != n.neg)
	}
	return out.NewArray(), nil
}

// likeMatcher compiles a LIKE pattern: % is any run of characters, _ any one
// character, esc (if not 0) makes the next character literal. The common
// shapes (abc, abc%, %abc, %abc%) skip the regular expression.
func likeMatcher(pattern string, esc rune) (func(string) bool, error) {
	var lit strings.Builder // literal text of the current run
	var parts []string      // alternating literals and wildcards, for the fast paths
	var re strings.Builder
	re.WriteString(`^(?s:`)
	simple := true
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case esc != 0 && c == esc:
			if i+1 >= len(rs) {
				return nil, Errorf(ErrEval, "LIKE pattern %s ends with the escape character", types.QuoteString(pattern))
			}
			i++
			lit.WriteRune(rs[i])
			re.WriteString(regexp.QuoteMeta(string(rs[i])))
		case c == '%':
			parts = append(parts, lit.String(), "%")
			lit.Reset()
			re.WriteString(`.*`)
		case c == '_':
			simple = false
			re.WriteString(`.`)
		default:
			lit.WriteRune(c)
			re.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	parts = append(parts, lit.String())
	re.WriteString(`)$`)
	if simple {
		switch {
		case len(parts) == 1:
			s := parts[0]
			return func(v string) bool { return v == s }, nil
		case len(parts) == 3 && parts[2] == "":
			p := parts[0]
			return func(v string) bool { return strings.HasPrefix(v, p) }, nil
		case len(parts) == 3 && parts[0] == "":
			p := parts[2]
			return func(v string) bool { return strings.HasSuffix(v, p) }, nil
		case len(parts) == 5 && parts[0] == "" && parts[4] == "":
			p := parts[2]
			return func(v string) bool { return strings.Contains(v, p) }, nil
		}
	}
	rx, err := regexp.Compile(re.String())
	if err != nil {
		return nil, fmt.Errorf("query: LIKE pattern %q: %w", pattern, err)
	}
	return rx.MatchString, nil
}

// cast is CAST and TRY_CAST (and typed literals, and the coercion of a
// string literal compared with another type).
type cast struct {
	exprBase
	e   Node
	try bool
	// hint: the user wrote CAST, so a failure mentions TRY_CAST.
	hint bool
}

func (n *cast) Operands() []Node { return []Node{n.e} }
func (n *cast) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	return evalUnary(ec, b, n.e, n.convert)
}

func (n *cast) convert(ec *EvalCtx, a arrow.Array) (arrow.Array, error) {
	out, err := castArray(ec, a, n.e.Type(), n.t, n.try)
	var qe *Error
	if err != nil && n.hint && errors.As(err, &qe) && qe.Kind == ErrEval {
		return nil, &Error{Kind: ErrEval, Msg: qe.Msg + " (TRY_CAST gives NULL instead)"}
	}
	return out, err
}
