package expr

// This file holds the conditional functions: CASE, COALESCE, NULLIF, IF,
// IFNULL, GREATEST and LEAST. A branch is evaluated only on the rows that
// take it, as Flink does, so that CASE WHEN qty <> 0 THEN price / qty END
// never divides by zero; the result is then put together from the
// branches' arrays by one take.

import (
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/xwb1989/sqlparser"

	"github.com/kshare/kshare/types"
)

func init() {
	register(
		&funcDef{name: "COALESCE", args: []argKind{anyArg}, variadic: true,
			desc:  "the first argument that is not NULL",
			build: buildCoalesce("COALESCE")},
		&funcDef{name: "IFNULL", args: []argKind{anyArg, anyArg},
			desc:  "the first argument unless it is NULL, else the second",
			build: buildCoalesce("IFNULL")},
		&funcDef{name: "NULLIF", args: []argKind{anyArg, anyArg},
			desc: "NULL if the arguments are equal, else the first", build: buildNullIf},
		&funcDef{name: "IF", args: []argKind{boolArg, anyArg, anyArg},
			desc: "the second argument if the first is TRUE, else the third", build: buildIf},
		&funcDef{name: "GREATEST", args: []argKind{anyArg}, variadic: true,
			desc: "the largest argument; NULL if any is NULL", build: buildExtreme("GREATEST", ">")},
		&funcDef{name: "LEAST", args: []argKind{anyArg}, variadic: true,
			desc: "the smallest argument; NULL if any is NULL", build: buildExtreme("LEAST", "<")},
	)
}

// unify converts values to their common type (commonType), the error naming
// what and the first value that has none with those before it. Untyped
// NULLs take the common type; all of them untyped is an error.
func unify(what string, vals []Node, src string) (*types.DataType, error) {
	name := func(k int) string { return fmt.Sprintf("argument %d of %s", k+1, what) }
	if what == "CASE" {
		name = func(k int) string { return fmt.Sprintf("result %d of CASE", k+1) }
	}
	var t *types.DataType
	for k, v := range vals {
		if v.Type() == nil {
			continue
		}
		if t == nil {
			t = v.Type().WithNotNull(false)
			continue
		}
		ct, ok := commonType(t, v.Type())
		if !ok {
			return nil, Errorf(ErrType, "%s is %s (%s), which has no type in common with the ones before it (%s); CAST one of them (%s)",
				name(k), TypeName(v.Type()), v.Text(), TypeName(t), src)
		}
		t = ct
	}
	if t == nil {
		return nil, Errorf(ErrType, "%s of NULLs alone needs a type; write CAST(NULL AS <type>) (%s)", what, src)
	}
	for k, v := range vals {
		c, err := convert(v, t)
		if err != nil {
			return nil, err
		}
		vals[k] = c
	}
	return t, nil
}

// convert gives n the type t (nullability aside), with a cast if its values
// need one; a constant is cast once, here.
func convert(n Node, t *types.DataType) (Node, error) {
	if n.Type() == nil {
		return TypedNull(n, t), nil
	}
	if n.Type().WithNotNull(false).Equal(t) {
		return n, nil
	}
	c := &cast{exprBase: exprBase{t: t.WithNotNull(n.Type().NotNull), src: n.Text()}, e: n}
	if IsConstant(n) {
		return fold(c)
	}
	return c, nil
}

// infallible nodes cannot fail on any row, so that a branch made of one is
// evaluated on the whole batch rather than on the rows that take it.
func infallible(n Node) bool {
	switch n.(type) {
	case *ColRef, *literal:
		return true
	}
	return false
}

// span says which row of b value j of an array evalRows returned is for.
type span int

const (
	subset span = iota // value j is row rows[j]'s
	whole              // value i is row i's: the array holds all of b's rows
	single             // one value, every row's: a literal
)

// index is where row r, the j-th of rows, is in an array of span s.
func (s span) index(j, r int) int {
	switch s {
	case whole:
		return r
	case single:
		return 0
	}
	return j
}

// evalRows evaluates n on rows of b (indexes, ascending): a literal once, a
// node that cannot fail on all of b, any other on those rows alone.
func evalRows(ec *EvalCtx, b arrow.RecordBatch, n Node, rows []int) (a arrow.Array, s span, err error) {
	switch {
	case isLiteral(n):
		one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
		defer one.Release()
		a, err = n.Eval(ec, one)
		return a, single, err
	case len(rows) == int(b.NumRows()) || infallible(n):
		a, err = n.Eval(ec, b)
		return a, whole, err
	}
	sub, err := TakeRows(ec, b, rows)
	if err != nil {
		return nil, subset, err
	}
	defer sub.Release()
	a, err = n.Eval(ec, sub)
	return a, subset, err
}

func isLiteral(n Node) bool {
	_, ok := n.(*literal)
	return ok
}

// assembly puts a result together from parts: row i is value pos[i] of
// parts[from[i]], or NULL where from[i] is -1.
type assembly struct {
	parts     []arrow.Array
	from, pos []int32
	// borrowed are the row lists lent to this evaluation (rows), which
	// release gives back: a batch's bookkeeping reuses the last one's.
	borrowed []*[]int
	marks    *[]int32
}

// Row lists and row marks of batches: reused, not allocated per batch.
var (
	rowLists = sync.Pool{New: func() any { return new([]int) }}
	rowMarks = sync.Pool{New: func() any { return new([]int32) }}
)

func newAssembly(n int) *assembly {
	a := &assembly{marks: rowMarks.Get().(*[]int32)}
	if cap(*a.marks) < 2*n {
		*a.marks = make([]int32, 2*n)
	}
	m := (*a.marks)[:2*n]
	a.from, a.pos = m[:n:n], m[n:]
	for i := range a.from {
		a.from[i] = -1
	}
	return a
}

// rows lends an empty list of row indexes with room for n, until release.
func (s *assembly) rows(n int) []int {
	p := rowLists.Get().(*[]int)
	if cap(*p) < n {
		*p = make([]int, 0, n)
	}
	s.borrowed = append(s.borrowed, p)
	return (*p)[:0]
}

// all lends the list of rows 0 to n-1.
func (s *assembly) all(n int) []int {
	rows := s.rows(n)[:n]
	for i := range rows {
		rows[i] = i
	}
	return rows
}

// add makes part a (from evalRows over rows, of span sp) the value of the
// rows in take, a subset of rows; it owns a from now on.
func (s *assembly) add(a arrow.Array, sp span, rows, take []int) {
	k := int32(len(s.parts))
	s.parts = append(s.parts, a)
	j := 0
	for _, r := range take {
		if sp == subset {
			for rows[j] != r {
				j++
			}
		}
		s.pos[r] = int32(sp.index(j, r))
		s.from[r] = k
	}
}

func (s *assembly) release() {
	ReleaseAll(s.parts)
	for _, p := range s.borrowed {
		rowLists.Put(p)
	}
	rowMarks.Put(s.marks)
}

// result is the assembled array of type t.
func (s *assembly) result(ec *EvalCtx, t arrow.DataType) (arrow.Array, error) {
	n := len(s.from)
	if len(s.parts) == 1 && s.parts[0].Len() == n && s.whole() {
		s.parts[0].Retain()
		return s.parts[0], nil
	}
	if len(s.parts) == 0 {
		return array.MakeArrayOfNull(ec.mem, t, n), nil
	}
	if out, ok := s.pick(ec.mem, t); ok {
		return out, nil
	}
	off := make([]int32, len(s.parts))
	for k := 1; k < len(s.parts); k++ {
		off[k] = off[k-1] + int32(s.parts[k-1].Len())
	}
	ib := array.NewInt32Builder(ec.mem)
	defer ib.Release()
	ib.Reserve(n)
	for i, k := range s.from {
		if k < 0 {
			ib.UnsafeAppendBoolToBitmap(false)
			continue
		}
		ib.UnsafeAppend(off[k] + s.pos[i])
	}
	idx := ib.NewArray()
	defer idx.Release()
	all := s.parts[0]
	if len(s.parts) > 1 {
		cat, err := array.Concatenate(s.parts, ec.mem)
		if err != nil {
			return nil, err
		}
		defer cat.Release()
		all = cat
	}
	return compute.TakeArray(ec.ctx, all, idx)
}

// partBits is where a part's values and validity are: a kernel reads them
// directly rather than through arrow.Array's methods, once per row.
type partBits struct {
	valid  []byte // nil: no NULLs
	off    int    // of the array's first value, in values
	values []byte
	offs   []int32 // strings: value offsets
}

func bitsOf(a arrow.Array) partBits {
	d := a.Data()
	p := partBits{off: d.Offset()}
	if a.NullN() > 0 && d.Buffers()[0] != nil {
		p.valid = d.Buffers()[0].Bytes()
	}
	return p
}

func (p *partBits) isNull(j int) bool { return p.valid != nil && !bitutil.BitIsSet(p.valid, p.off+j) }

// pick assembles values of a fixed width (numbers, times, DECIMAL, BINARY(n))
// or strings by copying each row's bytes from its part; ok is false for
// other types (BOOLEAN, nested), which take the general way.
func (s *assembly) pick(mem memory.Allocator, t arrow.DataType) (arrow.Array, bool) {
	n := len(s.from)
	width := 0
	isString := t.ID() == arrow.STRING
	if fw, ok := t.(arrow.FixedWidthDataType); ok && fw.BitWidth()%8 == 0 && t.ID() != arrow.BOOL {
		width = fw.BitWidth() / 8
	} else if !isString {
		return nil, false
	}
	parts := make([]partBits, len(s.parts))
	for k, a := range s.parts {
		parts[k] = bitsOf(a)
		b := a.Data().Buffers()
		switch {
		case !isString:
			parts[k].values = b[1].Bytes()
		case b[2] != nil:
			parts[k].offs = a.(*array.String).ValueOffsets() // from the first value on
			parts[k].values = b[2].Bytes()
		default:
			parts[k].offs = a.(*array.String).ValueOffsets()
		}
	}
	valid := memory.NewResizableBuffer(mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	vb := valid.Bytes()
	clear(vb)
	nulls := 0
	var bufs []*memory.Buffer
	if isString {
		offsets := memory.NewResizableBuffer(mem)
		defer offsets.Release()
		offsets.Resize((n + 1) * arrow.Int32SizeBytes)
		ob := arrow.Int32Traits.CastFromBytes(offsets.Bytes())
		size := 0
		for i, k := range s.from {
			if k >= 0 {
				p, j := &parts[k], int(s.pos[i])
				size += int(p.offs[j+1] - p.offs[j])
			}
		}
		values := memory.NewResizableBuffer(mem)
		defer values.Release()
		values.Resize(size)
		data := values.Bytes()
		at := int32(0)
		for i, k := range s.from {
			ob[i] = at
			if k < 0 || parts[k].isNull(int(s.pos[i])) {
				nulls++
				continue
			}
			p, j := &parts[k], int(s.pos[i])
			at += int32(copy(data[at:], p.values[p.offs[j]:p.offs[j+1]]))
			bitutil.SetBit(vb, i)
		}
		ob[n] = at
		bufs = []*memory.Buffer{valid, offsets, values}
	} else {
		values := memory.NewResizableBuffer(mem)
		defer values.Release()
		values.Resize(n * width)
		switch width {
		case 4:
			nulls = pickFixed(s, parts, arrow.Uint32Traits.CastFromBytes(values.Bytes()), arrow.Uint32Traits.CastFromBytes, vb)
		case 8:
			nulls = pickFixed(s, parts, arrow.Uint64Traits.CastFromBytes(values.Bytes()), arrow.Uint64Traits.CastFromBytes, vb)
		default:
			nulls = pickBytes(s, parts, width, values.Bytes(), vb)
		}
		bufs = []*memory.Buffer{valid, values}
	}
	d := array.NewData(t, n, bufs, nil, nulls, 0)
	defer d.Release()
	return array.MakeFromData(d), true
}

// pickFixed copies each row's value of 4 or 8 bytes (INT, BIGINT, DOUBLE,
// DATE, TIMESTAMP: the common widths) as one word; it returns the NULLs.
func pickFixed[T uint32 | uint64](s *assembly, parts []partBits, dst []T, words func([]byte) []T, valid []byte) int {
	src := make([][]T, len(parts))
	for k := range parts {
		src[k] = words(parts[k].values)
	}
	nulls := 0
	for i, k := range s.from {
		if k < 0 || parts[k].isNull(int(s.pos[i])) {
			nulls++
			continue
		}
		dst[i] = src[k][parts[k].off+int(s.pos[i])]
		bitutil.SetBit(valid, i)
	}
	return nulls
}

// pickBytes is pickFixed for any width.
func pickBytes(s *assembly, parts []partBits, width int, out, valid []byte) int {
	nulls := 0
	for i, k := range s.from {
		if k < 0 || parts[k].isNull(int(s.pos[i])) {
			nulls++
			continue
		}
		p, j := &parts[k], (parts[k].off+int(s.pos[i]))*width
		copy(out[i*width:(i+1)*width], p.values[j:j+width])
		bitutil.SetBit(valid, i)
	}
	return nulls
}

// whole reports whether every row is the same row of part 0.
func (s *assembly) whole() bool {
	for i, k := range s.from {
		if k != 0 || s.pos[i] != int32(i) {
			return false
		}
	}
	return true
}

// caseWhen is CASE WHEN c1 THEN v1 ... [ELSE e] END; IF and NULLIF are
// planned as one. Row i takes the first WHEN that is TRUE for it; a WHEN is
// evaluated only on the rows no earlier WHEN took, a THEN only on its rows.
type caseWhen struct {
	exprBase
	whens, vals []Node
	els         Node // nil: NULL
}

func (n *caseWhen) Operands() []Node {
	ops := append(append([]Node{}, n.whens...), n.vals...)
	if n.els != nil {
		ops = append(ops, n.els)
	}
	return ops
}

func (n *caseWhen) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	asm := newAssembly(int(b.NumRows()))
	defer asm.release()
	open := asm.all(int(b.NumRows()))
	branch := func(v Node, rows, take []int) error {
		if len(take) == 0 {
			return nil
		}
		a, sp, err := evalRows(ec, b, v, take)
		if err != nil {
			return err
		}
		asm.add(a, sp, take, take)
		return nil
	}
	for k, w := range n.whens {
		ca, _, hit, rest, err := step(ec, b, asm, w, open, isTrue)
		if err != nil {
			return nil, err
		}
		if ca != nil {
			ca.Release()
		}
		if err := branch(n.vals[k], hit, hit); err != nil {
			return nil, err
		}
		open = rest
	}
	if n.els != nil {
		if err := branch(n.els, open, open); err != nil {
			return nil, err
		}
	}
	return asm.result(ec, n.t.ArrowType())
}

// step evaluates n on the open rows (none: nothing to do) and divides them
// into those whose value passes test and the rest.
func step(ec *EvalCtx, b arrow.RecordBatch, asm *assembly, n Node, open []int, test func(arrow.Array) func(int) bool) (a arrow.Array, sp span, pass, rest []int, err error) {
	if len(open) == 0 {
		return nil, subset, nil, nil, nil
	}
	if a, sp, err = evalRows(ec, b, n, open); err != nil {
		return nil, subset, nil, nil, err
	}
	pass, rest = asm.split(open, sp, test(a))
	return a, sp, pass, rest, nil
}

// split divides the open rows into those whose value (in an array of span
// sp over them) passes ok and the rest.
func (s *assembly) split(open []int, sp span, ok func(int) bool) (pass, rest []int) {
	pass, rest = s.rows(len(open)), s.rows(len(open))
	for j, r := range open {
		if ok(sp.index(j, r)) {
			pass = append(pass, r)
		} else {
			rest = append(rest, r)
		}
	}
	return pass, rest
}

func isValid(a arrow.Array) func(int) bool { return a.IsValid }

func isTrue(a arrow.Array) func(int) bool {
	c := a.(*array.Boolean)
	return func(i int) bool { return c.IsValid(i) && c.Value(i) }
}

// coalesce is COALESCE and IFNULL: an argument is evaluated only on the rows
// every argument before it left NULL.
type coalesce struct {
	exprBase
	args []Node
}

func (n *coalesce) Operands() []Node { return n.args }

func (n *coalesce) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	// The first argument is every row's; the common case, no NULLs in
	// this batch, hands it on.
	first, err := n.args[0].Eval(ec, b)
	if err != nil || first.NullN() == 0 {
		return first, err
	}
	if out, ok, err := n.fill(ec, b, first); ok || err != nil {
		first.Release()
		return out, err
	}
	rows := int(b.NumRows())
	asm := newAssembly(rows)
	defer asm.release()
	hit, open := asm.split(asm.all(rows), whole, first.IsValid)
	asm.add(first, whole, hit, hit)
	for _, arg := range n.args[1:] {
		a, sp, hit, rest, err := step(ec, b, asm, arg, open, isValid)
		switch {
		case err != nil:
			return nil, err
		case len(hit) > 0:
			asm.add(a, sp, open, hit)
		case a != nil:
			a.Release()
		}
		open = rest
	}
	return asm.result(ec, n.t.ArrowType())
}

// fill is the result when the arguments after the first cannot fail
// (columns and literals), so that each is read on every row at once, and
// its type is of a fixed width; ok is false otherwise.
func (n *coalesce) fill(ec *EvalCtx, b arrow.RecordBatch, first arrow.Array) (out arrow.Array, ok bool, err error) {
	for _, a := range n.args[1:] {
		if !infallible(a) {
			return nil, false, nil
		}
	}
	ops, err := evalOperands(ec, b, n.args[1:]...)
	if err != nil {
		return nil, false, err
	}
	defer releaseOperands(ops)
	out, ok = fillNulls(ec, n.t.ArrowType(), first, ops)
	return out, ok, nil
}

func buildCoalesce(name string) func(p *Compiler, args []Node, src string) (Node, error) {
	return func(p *Compiler, args []Node, src string) (Node, error) {
		t, err := unify(name, args, src)
		if err != nil {
			return nil, err
		}
		nn := false
		for _, a := range args {
			nn = nn || a.Type().NotNull
		}
		return &coalesce{exprBase: exprBase{t: t.WithNotNull(nn), src: src}, args: args}, nil
	}
}

func buildIf(p *Compiler, args []Node, src string) (Node, error) {
	vals := args[1:]
	t, err := unify("IF", vals, src)
	if err != nil {
		return nil, err
	}
	return &caseWhen{exprBase: exprBase{t: t.WithNotNull(notNull(vals...)), src: src},
		whens: args[:1], vals: vals[:1], els: vals[1]}, nil
}

func buildNullIf(p *Compiler, args []Node, src string) (Node, error) {
	x, y, ct, err := p.operands(args[0], args[1], src)
	if err != nil {
		return nil, err
	}
	return &nullIf{exprBase: exprBase{t: x.Type().WithNotNull(false), src: src}, x: x, y: y, ct: ct}, nil
}

// caseExpr plans CASE [x] WHEN ... THEN ... [ELSE ...] END; with x, each
// WHEN v is x = v.
func (p *Compiler) caseExpr(e *sqlparser.CaseExpr, src string) (Node, error) {
	n := &caseWhen{exprBase: exprBase{src: src}}
	var x Node
	if e.Expr != nil {
		var err error
		if x, err = p.Expr(e.Expr); err != nil {
			return nil, err
		}
	}
	for _, w := range e.Whens {
		c, err := p.Expr(w.Cond)
		if err != nil {
			return nil, err
		}
		if x != nil {
			l, r, ct, err := p.operands(x, c, src)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("%s = %s", l.Text(), r.Text())
			c = newCompare("=", l, r, ct, text)
		}
		c = TypedNull(c, types.BooleanType())
		if c.Type().Kind != types.Boolean {
			return nil, Errorf(ErrType, "WHEN needs a BOOLEAN condition, got %s (%s); write CASE x WHEN value THEN ... to compare x (%s)", TypeName(c.Type()), c.Text(), src)
		}
		v, err := p.Expr(w.Val)
		if err != nil {
			return nil, err
		}
		n.whens, n.vals = append(n.whens, c), append(n.vals, v)
	}
	vals := n.vals
	if e.Else != nil {
		els, err := p.Expr(e.Else)
		if err != nil {
			return nil, err
		}
		vals = append(vals, els)
	}
	t, err := unify("CASE", vals, src)
	if err != nil {
		return nil, err
	}
	n.vals = vals[:len(n.whens)]
	if e.Else != nil {
		n.els = vals[len(vals)-1]
	}
	n.t = t.WithNotNull(e.Else != nil && notNull(vals...))
	return n, nil
}

// buildExtreme is GREATEST (op >) and LEAST (op <): NULL if any argument is,
// as in Flink.
func buildExtreme(name, op string) func(p *Compiler, args []Node, src string) (Node, error) {
	def := &funcDef{name: name, ret: func(c *call) (*types.DataType, error) { return c.t, nil },
		eval: func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
			return extreme(ec, c, op, as)
		}}
	return func(p *Compiler, args []Node, src string) (Node, error) {
		t, err := unify(name, args, src)
		if err != nil {
			return nil, err
		}
		if !comparableKind(t) {
			return nil, Errorf(ErrType, "%s needs comparable arguments, got %s (%s)", name, TypeName(t), src)
		}
		return &call{exprBase: exprBase{t: t.WithNotNull(notNull(args...)), src: src}, fn: def, args: args}, nil
	}
}

func extreme(ec *EvalCtx, c *call, op string, as []arrow.Array) (arrow.Array, error) {
	t := c.t.WithNotNull(false)
	ct, _ := compareType(t, t)
	acc := as[0]
	acc.Retain()
	defer func() { acc.Release() }()
	for _, next := range as[1:] {
		better, err := compareArrays(ec, op, next, t, acc, t, ct)
		if err != nil {
			return nil, err
		}
		asm := newAssembly(acc.Len())
		acc.Retain()
		next.Retain()
		asm.parts = []arrow.Array{acc, next}
		bv := better.(*array.Boolean)
		for i := range asm.from {
			asm.pos[i] = int32(i)
			switch {
			case bv.IsNull(i):
				asm.from[i] = -1
			case bv.Value(i):
				asm.from[i] = 1
			default:
				asm.from[i] = 0
			}
		}
		better.Release()
		out, err := asm.result(ec, t.ArrowType())
		asm.release()
		if err != nil {
			return nil, err
		}
		acc.Release()
		acc = out
	}
	acc.Retain()
	return acc, nil
}
