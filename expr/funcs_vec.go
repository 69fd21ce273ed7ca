package expr

// This file holds the native kernels of the hot operators: + - * / on
// integers (with kshare's overflow rule) and floating-point numbers,
// comparisons of numbers and times, NULLIF, and COALESCE of fixed-width
// values. arrow's compute functions give the same answers, but each call
// costs a goroutine and a channel, and mixed widths (BIGINT + INT) a cast
// into a new array first; these read their operands in place (a literal
// once, not spread over the batch) and write the result once.

import (
	"math"
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/kshare/kshare/types"
)

// operand is an evaluated operand of a kernel: an array of one value per
// row, or (one) of a single value for every row, as a literal evaluates.
type operand struct {
	a   arrow.Array
	one bool
}

// evalOperands evaluates ns on b, each literal once; the caller releases
// them (releaseOperands). On error nothing is left to release.
func evalOperands(ec *EvalCtx, b arrow.RecordBatch, ns ...Node) ([]operand, error) {
	ops := make([]operand, len(ns))
	for k, n := range ns {
		var err error
		if lit, ok := n.(*literal); ok {
			ops[k].a, err = lit.one()
			ops[k].one = true
		} else {
			ops[k].a, err = n.Eval(ec, b)
		}
		if err != nil {
			releaseOperands(ops)
			return nil, err
		}
	}
	return ops, nil
}

func releaseOperands(ops []operand) {
	for _, o := range ops {
		if o.a != nil {
			o.a.Release()
		}
	}
}

// operandRows is the rows of a kernel's result: those of its operands that are
// not one value (at least one is: fullOperands).
func operandRows(ops ...operand) int {
	for _, o := range ops {
		if !o.one {
			return o.a.Len()
		}
	}
	return 1
}

// fullOperands makes the first operand one value per row when every one is
// a single value (literals that planning did not fold), so that a kernel's
// result has the batch's rows.
func fullOperands(ec *EvalCtx, ops []operand, rows int) error {
	for _, o := range ops {
		if !o.one {
			return nil
		}
	}
	return ops[0].spread(ec, rows)
}

// spread makes o an array of one value per row, rows of them.
func (o *operand) spread(ec *EvalCtx, rows int) error {
	if !o.one {
		return nil
	}
	s, err := scalar.GetScalar(o.a, 0)
	if err != nil {
		return err
	}
	if r, ok := s.(scalar.Releasable); ok {
		defer r.Release()
	}
	a, err := scalar.MakeArrayFromScalar(s, rows, ec.mem)
	if err != nil {
		return err
	}
	o.a.Release()
	o.a, o.one = a, false
	return nil
}

// allNull reports whether an operand is NULL on every row: a NULL literal.
func (o operand) allNull() bool { return o.one && o.a.IsNull(0) }

// spread returns the operand's n values: its array's own (vals), or its one
// value repeated into buf.
func spread[T any](o operand, vals []T, n int, buf *[]T) []T {
	if !o.one {
		return vals
	}
	out := scratch(buf, n)
	for i := range out {
		out[i] = vals[0]
	}
	return out
}

// scratch is buf resized to n values, for a kernel's temporary values.
func scratch[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}

// Temporary values of kernels, reused across batches.
var (
	intBufs   = sync.Pool{New: func() any { return new([]int64) }}
	floatBufs = sync.Pool{New: func() any { return new([]float64) }}
	f32Bufs   = sync.Pool{New: func() any { return new([]float32) }}
)

// widenInto converts src's values into buf.
func widenInto[S ~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64, T int64 | float32 | float64](src []S, buf *[]T) []T {
	out := scratch(buf, len(src))
	for i, v := range src {
		out[i] = T(v)
	}
	return out
}

// int64s is the values of an array of integers or times as int64s: an
// int64 array's own, another's widened into buf. ok is false for another
// type.
func int64s(a arrow.Array, buf *[]int64) (v []int64, ok bool) {
	if a, ok := a.(*array.Int64); ok {
		return a.Int64Values(), true
	}
	return intsAs(a, buf)
}

// intsAs is the values of an array of integers (or times: their numbers)
// converted to T into buf; the storage's width is what tells how to read.
func intsAs[T int64 | float32 | float64](a arrow.Array, buf *[]T) (v []T, ok bool) {
	d := a.Data()
	if len(d.Buffers()) < 2 || d.Buffers()[1] == nil {
		return nil, false
	}
	b, from, to := d.Buffers()[1].Bytes(), d.Offset(), d.Offset()+d.Len()
	switch a.DataType().ID() {
	case arrow.INT8:
		return widenInto(arrow.Int8Traits.CastFromBytes(b)[from:to], buf), true
	case arrow.INT16:
		return widenInto(arrow.Int16Traits.CastFromBytes(b)[from:to], buf), true
	case arrow.INT32, arrow.DATE32, arrow.TIME32:
		return widenInto(arrow.Int32Traits.CastFromBytes(b)[from:to], buf), true
	case arrow.INT64, arrow.TIME64, arrow.TIMESTAMP:
		return widenInto(arrow.Int64Traits.CastFromBytes(b)[from:to], buf), true
	}
	return nil, false
}

// floats is the values of a numeric array as T (float32 for FLOAT, where
// Java converts each operand to float first): a T array's own, another's
// converted into buf.
func floats[T float32 | float64](a arrow.Array, buf *[]T) (v []T, ok bool) {
	switch a := a.(type) {
	case *array.Float64:
		if v, ok := any(a.Float64Values()).([]T); ok {
			return v, true
		}
		return widenInto(a.Float64Values(), buf), true
	case *array.Float32:
		if v, ok := any(a.Float32Values()).([]T); ok {
			return v, true
		}
		return widenInto(a.Float32Values(), buf), true
	}
	return intsAs(a, buf)
}

// vals2 is two operands' values as T, rows of each (a literal's spread), in
// buffers of pool until release.
type vals2[T any] struct {
	x, y   []T
	pool   *sync.Pool
	xb, yb *[]T
}

// readPair reads l's and r's values with vals; ok is false if vals reads
// either's type not.
func readPair[T any](l, r operand, rows int, vals func(arrow.Array, *[]T) ([]T, bool), pool *sync.Pool) (p vals2[T], ok bool) {
	p = vals2[T]{pool: pool, xb: pool.Get().(*[]T), yb: pool.Get().(*[]T)}
	xv, okx := vals(l.a, p.xb)
	yv, oky := vals(r.a, p.yb)
	if !okx || !oky {
		p.release()
		return p, false
	}
	p.x, p.y = spread(l, xv, rows, p.xb), spread(r, yv, rows, p.yb)
	return p, true
}

func (p vals2[T]) release() {
	p.pool.Put(p.xb)
	p.pool.Put(p.yb)
}

// validity is the validity bitmap of a result of n rows that is NULL where
// any operand is (nil: no NULLs), with its NULLs. No operand may be a NULL
// literal (allNull): that result is NULL throughout.
func validity(mem memory.Allocator, n int, ops ...operand) (*memory.Buffer, int) {
	var out *memory.Buffer
	for _, o := range ops {
		if o.one || o.a.NullN() == 0 {
			continue
		}
		d := o.a.Data()
		bm, off := d.Buffers()[0].Bytes(), d.Offset()
		if out == nil {
			out = memory.NewResizableBuffer(mem)
			out.Resize(int(bitutil.BytesForBits(int64(n))))
			bitutil.CopyBitmap(bm, off, n, out.Bytes(), 0)
			continue
		}
		bitutil.BitmapAnd(out.Bytes(), bm, 0, int64(off), out.Bytes(), 0, int64(n))
	}
	if out == nil {
		return nil, 0
	}
	return out, n - bitutil.CountSetBits(out.Bytes(), 0, n)
}

// validAt reports whether row i of a result with validity vb is not NULL.
func validAt(vb *memory.Buffer, i int) bool { return vb == nil || bitutil.BitIsSet(vb.Bytes(), i) }

// newFixed is an array of type t over values and validity (nil: no NULLs),
// which it takes over.
func newFixed(t arrow.DataType, n int, valid, values *memory.Buffer, nulls int) arrow.Array {
	d := array.NewData(t, n, []*memory.Buffer{valid, values}, nil, nulls, 0)
	if valid != nil {
		valid.Release()
	}
	values.Release()
	defer d.Release()
	return array.MakeFromData(d)
}

// nativeArith is n (+ - * / on integers or floating-point numbers) on its
// evaluated operands; ok is false for the operators and types it leaves to
// the general way.
func nativeArith(ec *EvalCtx, n *arith, l, r operand) (out arrow.Array, ok bool, err error) {
	rows := operandRows(l, r)
	t := n.t.ArrowType()
	switch {
	case !isInt(n.t) && !isApprox(n.t):
		return nil, false, nil
	case l.allNull() || r.allNull():
		return array.MakeArrayOfNull(ec.mem, t, rows), true, nil
	}
	if isApprox(n.t) {
		if n.t.Kind == types.Float {
			return floatArith(ec.mem, n.op, t, l, r, rows, floats[float32], &f32Bufs)
		}
		return floatArith(ec.mem, n.op, t, l, r, rows, floats[float64], &floatBufs)
	}
	p, ok := readPair(l, r, rows, int64s, &intBufs)
	if !ok {
		return nil, false, nil
	}
	defer p.release()
	x, y := p.x, p.y
	valid, nulls := validity(ec.mem, rows, l, r)
	values := memory.NewResizableBuffer(ec.mem)
	values.Resize(rows * t.(arrow.FixedWidthDataType).BitWidth() / 8)
	lo, hi := types.IntRange(n.t.Kind)
	var bad int
	var div0 bool
	switch vb := values.Bytes(); n.t.Kind {
	case types.TinyInt:
		bad, div0 = intOps(n.op, x, y, arrow.Int8Traits.CastFromBytes(vb), lo, hi, valid)
	case types.SmallInt:
		bad, div0 = intOps(n.op, x, y, arrow.Int16Traits.CastFromBytes(vb), lo, hi, valid)
	case types.Int:
		bad, div0 = intOps(n.op, x, y, arrow.Int32Traits.CastFromBytes(vb), lo, hi, valid)
	default:
		bad, div0 = intOps(n.op, x, y, arrow.Int64Traits.CastFromBytes(vb), lo, hi, valid)
	}
	if bad >= 0 {
		values.Release()
		if valid != nil {
			valid.Release()
		}
		if div0 {
			return nil, true, n.evalError(errDivZero)
		}
		return nil, true, Errorf(ErrEval, "%s overflows %s", n.src, n.t.WithNotNull(false))
	}
	return newFixed(t, rows, valid, values, nulls), true, nil
}

// intOps computes x op y into out, whose type's values are lo..hi; it
// returns the first row (not NULL by valid) whose result is beyond them or
// (div0) divides by zero, or -1. A NULL row's value is left 0.
func intOps[O int8 | int16 | int32 | int64](op string, x, y []int64, out []O, lo, hi int64, valid *memory.Buffer) (bad int, div0 bool) {
	// Operands narrower than 64 bits cannot overflow int64, so the range
	// check alone finds a narrow result's overflow; BIGINT needs the
	// 64-bit checks.
	fail := func(i int) bool { return validAt(valid, i) }
	switch op {
	case "+":
		for i := range out {
			s := x[i] + y[i]
			if ((s^x[i])&(s^y[i]) < 0 || s < lo || s > hi) && fail(i) {
				return i, false
			}
			out[i] = O(s)
		}
	case "-":
		for i := range out {
			s := x[i] - y[i]
			if ((x[i]^y[i])&(x[i]^s) < 0 || s < lo || s > hi) && fail(i) {
				return i, false
			}
			out[i] = O(s)
		}
	case "*":
		for i := range out {
			h, s := bits.Mul64(uint64(x[i]), uint64(y[i]))
			// The signed product's high word; it must be the sign of the low.
			sh := int64(h) - (x[i]>>63)&y[i] - (y[i]>>63)&x[i]
			if (sh != int64(s)>>63 || int64(s) < lo || int64(s) > hi) && fail(i) {
				return i, false
			}
			out[i] = O(int64(s))
		}
	case "/":
		for i := range out {
			if y[i] == 0 {
				if fail(i) {
					return i, true
				}
				continue
			}
			if x[i] == math.MinInt64 && y[i] == -1 {
				if fail(i) {
					return i, false
				}
				continue
			}
			s := x[i] / y[i]
			if (s < lo || s > hi) && fail(i) {
				return i, false
			}
			out[i] = O(s)
		}
	}
	return -1, false
}

// floatArith is + - * / in T, Java's float or double arithmetic: division
// by zero gives Infinity or NaN.
func floatArith[T float32 | float64](mem memory.Allocator, op string, t arrow.DataType, l, r operand, rows int, vals func(arrow.Array, *[]T) ([]T, bool), pool *sync.Pool) (arrow.Array, bool, error) {
	p, ok := readPair(l, r, rows, vals, pool)
	if !ok {
		return nil, false, nil
	}
	defer p.release()
	x, y := p.x, p.y
	valid, nulls := validity(mem, rows, l, r)
	values := memory.NewResizableBuffer(mem)
	values.Resize(rows * t.(arrow.FixedWidthDataType).BitWidth() / 8)
	var out []T
	if v, ok := any(arrow.Float64Traits.CastFromBytes(values.Bytes())).([]T); ok {
		out = v[:rows]
	} else {
		out = any(arrow.Float32Traits.CastFromBytes(values.Bytes())).([]T)[:rows]
	}
	switch op {
	case "+":
		for i := range out {
			out[i] = x[i] + y[i]
		}
	case "-":
		for i := range out {
			out[i] = x[i] - y[i]
		}
	case "*":
		for i := range out {
			out[i] = x[i] * y[i]
		}
	case "/":
		for i := range out {
			out[i] = x[i] / y[i]
		}
	}
	return newFixed(t, rows, valid, values, nulls), true, nil
}

// nativeCompare is l op r compared as type ct, for numbers and times; ok is
// false for the types it leaves to the general way. Times arrive cast to
// ct's precision (castOperand).
func nativeCompare(ec *EvalCtx, op string, l, r operand, ct *types.DataType) (arrow.Array, bool) {
	rows := operandRows(l, r)
	if l.allNull() || r.allNull() {
		return array.MakeArrayOfNull(ec.mem, arrow.FixedWidthTypes.Boolean, rows), true
	}
	switch ct.Kind {
	case types.Float:
		return compareVals(ec, op, l, r, rows, floats[float32], &f32Bufs)
	case types.Double:
		return compareVals(ec, op, l, r, rows, floats[float64], &floatBufs)
	}
	return compareVals(ec, op, l, r, rows, int64s, &intBufs)
}

// compareVals compares the operands' values as read by vals.
func compareVals[T int64 | float32 | float64](ec *EvalCtx, op string, l, r operand, rows int, vals func(arrow.Array, *[]T) ([]T, bool), pool *sync.Pool) (arrow.Array, bool) {
	p, ok := readPair(l, r, rows, vals, pool)
	if !ok {
		return nil, false
	}
	defer p.release()
	x, y := p.x, p.y
	valid, nulls := validity(ec.mem, rows, l, r)
	values := memory.NewResizableBuffer(ec.mem)
	values.Resize(int(bitutil.BytesForBits(int64(rows))))
	out := values.Bytes()
	clear(out)
	var test func(a, b T) bool
	switch op {
	case "=":
		test = func(a, b T) bool { return a == b }
	case "<>":
		test = func(a, b T) bool { return a != b }
	case "<":
		test = func(a, b T) bool { return a < b }
	case "<=":
		test = func(a, b T) bool { return a <= b }
	case ">":
		test = func(a, b T) bool { return a > b }
	default:
		test = func(a, b T) bool { return a >= b }
	}
	for i := range x {
		if test(x[i], y[i]) {
			out[i>>3] |= 1 << (i & 7)
		}
	}
	return newFixed(arrow.FixedWidthTypes.Boolean, rows, valid, values, nulls), true
}

// nullIf is NULLIF(x, y): x, made NULL where it equals y. The result shares
// x's values; only its validity is new.
type nullIf struct {
	exprBase
	x, y Node
	ct   *types.DataType
}

func (n *nullIf) Operands() []Node { return []Node{n.x, n.y} }

func (n *nullIf) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	ops, err := evalOperands(ec, b, n.x, n.y)
	if err != nil {
		return nil, err
	}
	defer releaseOperands(ops)
	// A literal x (rare: the constant case is folded) is spread first.
	if err := ops[0].spread(ec, int(b.NumRows())); err != nil {
		return nil, err
	}
	x := ops[0]
	eq, err := compareOperands(ec, "=", x, n.x.Type(), ops[1], n.y.Type(), n.ct)
	if err != nil {
		return nil, err
	}
	defer eq.Release()
	e := eq.(*array.Boolean)
	if e.NullN() == e.Len() || e.Len() == 0 {
		x.a.Retain()
		return x.a, nil
	}
	// x is NULL where it was, and where the comparison is TRUE: valid and
	// not equal.
	rows := x.a.Len()
	d := x.a.Data()
	off := d.Offset()
	valid := memory.NewResizableBuffer(ec.mem)
	valid.Resize(int(bitutil.BytesForBits(int64(off + rows))))
	vb := valid.Bytes()
	ed := e.Data()
	// eq's TRUE rows: value and validity both set.
	bitutil.CopyBitmap(ed.Buffers()[1].Bytes(), ed.Offset(), rows, vb, off)
	if e.NullN() > 0 {
		bitutil.BitmapAnd(vb, ed.Buffers()[0].Bytes(), int64(off), int64(ed.Offset()), vb, int64(off), int64(rows))
	}
	bitutil.InvertBitmap(vb, off, rows, vb, off)
	if x.a.NullN() > 0 {
		bitutil.BitmapAnd(vb, d.Buffers()[0].Bytes(), int64(off), int64(off), vb, int64(off), int64(rows))
	}
	nulls := rows - bitutil.CountSetBits(vb, off, rows)
	bufs := append([]*memory.Buffer{valid}, d.Buffers()[1:]...)
	nd := array.NewData(d.DataType(), rows, bufs, d.Children(), nulls, off)
	valid.Release()
	defer nd.Release()
	return array.MakeFromData(nd), nil
}

// fillNulls is COALESCE of fixed-width values where every argument is whole
// or one (a column or a literal): first's values, and where first is NULL
// the first other argument's that is not; ok is false for other types.
func fillNulls(ec *EvalCtx, t arrow.DataType, first arrow.Array, rest []operand) (arrow.Array, bool) {
	fw, isFixed := t.(arrow.FixedWidthDataType)
	if !isFixed || t.ID() == arrow.BOOL || fw.BitWidth()%8 != 0 {
		return nil, false
	}
	width := fw.BitWidth() / 8
	rows := first.Len()
	d := first.Data()
	values := memory.NewResizableBuffer(ec.mem)
	values.Resize(rows * width)
	vb := values.Bytes()
	copy(vb, d.Buffers()[1].Bytes()[d.Offset()*width:(d.Offset()+rows)*width])
	valid := memory.NewResizableBuffer(ec.mem)
	valid.Resize(int(bitutil.BytesForBits(int64(rows))))
	bm := valid.Bytes()
	bitutil.CopyBitmap(d.Buffers()[0].Bytes(), d.Offset(), rows, bm, 0)
	nulls := first.NullN()
	for _, o := range rest {
		if nulls == 0 {
			break
		}
		if o.allNull() {
			continue
		}
		od := o.a.Data()
		src, soff := od.Buffers()[1].Bytes(), od.Offset()
		for i := 0; i < rows; i++ {
			if bm[i>>3] == 0xff {
				i |= 7
				continue
			}
			if bitutil.BitIsSet(bm, i) {
				continue
			}
			j := i
			if o.one {
				j = 0
			}
			if o.a.IsNull(j) {
				continue
			}
			copy(vb[i*width:(i+1)*width], src[(soff+j)*width:(soff+j+1)*width])
			bitutil.SetBit(bm, i)
			nulls--
		}
	}
	if nulls == 0 {
		valid.Release()
		valid = nil
	}
	return newFixed(t, rows, valid, values, nulls), true
}
