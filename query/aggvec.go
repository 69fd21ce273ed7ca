package query

// This file holds the typed values aggregation works on: a column of a
// batch read as one of five physical classes (vec), values kept per group
// (store), and how both turn into group keys and Arrow builders.

import (
	"cmp"
	"encoding/binary"
	"math"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/types"
)

// phys is how aggregation holds a type's values: every integer, date and
// time as int64, FLOAT and DOUBLE as float64, DECIMAL as its 128-bit
// unscaled value, character and byte strings as string, BOOLEAN as bool.
type phys int

const (
	pInt phys = iota + 1
	pFloat
	pDec
	pStr
	pBool
)

// physOf is t's class; ok is false for ARRAY, MAP and ROW, which
// aggregation cannot compare.
func physOf(t *types.DataType) (phys, bool) {
	switch t.Kind {
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Date, types.Time, types.Timestamp, types.TimestampLTZ:
		return pInt, true
	case types.Float, types.Double:
		return pFloat, true
	case types.Decimal:
		return pDec, true
	case types.Char, types.Varchar, types.Binary, types.Varbinary:
		return pStr, true
	case types.Boolean:
		return pBool, true
	}
	return 0, false
}

// vec is one column of a batch, read as its class. Its buffers are reused
// from batch to batch, so reading allocates only while a batch is larger
// than every one before.
type vec struct {
	ph    phys
	a     arrow.Array
	nulls bool
	ints  []int64
	flts  []float64
	decs  []decimal128.Num
	str   func(int) string
	bools *array.Boolean
	// own are buffers of v's own for widened values: ints and flts may
	// be a batch's.
	ownI []int64
	ownF []float64
}

// ints reads an integer-like array (integers, dates, times, timestamps)
// as int64, widening into v's own buffer unless it is int64 already.
func ints[T ~int8 | ~int16 | ~int32 | ~int64](v *vec, a arrow.Array) bool {
	vs, ok := a.(interface{ Values() []T })
	if !ok {
		return false
	}
	if w, ok := any(vs.Values()).([]int64); ok {
		v.ints = w
		return true
	}
	v.ownI = v.ownI[:0]
	for _, x := range vs.Values() {
		v.ownI = append(v.ownI, int64(x))
	}
	v.ints = v.ownI
	return true
}

var intReaders = []func(*vec, arrow.Array) bool{
	ints[int8], ints[int16], ints[int32], ints[int64],
	ints[arrow.Date32], ints[arrow.Time32], ints[arrow.Time64], ints[arrow.Timestamp],
}

// load makes v read a, whose class is ph.
func (v *vec) load(a arrow.Array, ph phys) {
	v.ph, v.a, v.nulls = ph, a, a.NullN() > 0
	if ph == pInt {
		for _, read := range intReaders {
			if read(v, a) {
				return
			}
		}
	}
	switch a := a.(type) {
	case *array.Float32:
		v.ownF = v.ownF[:0]
		for _, x := range a.Float32Values() {
			v.ownF = append(v.ownF, float64(x))
		}
		v.flts = v.ownF
	case *array.Float64:
		v.flts = a.Float64Values()
	case *array.Decimal128:
		v.decs = a.Values()
	case *array.String:
		v.str = a.Value
	case *array.Binary:
		v.str = a.ValueString
	case *array.FixedSizeBinary:
		v.str = func(i int) string { return string(a.Value(i)) }
	case *array.Boolean:
		v.bools = a
	}
}

func (v *vec) null(i int) bool { return v.nulls && v.a.IsNull(i) }

// appendKey appends row i's value to a group key: a NULL byte or a
// non-NULL one, then the value's bytes. A string is preceded by its
// length, so that keys of several columns cannot run into each other.
func (v *vec) appendKey(b []byte, i int) []byte {
	if v.null(i) {
		return append(b, 0)
	}
	b = append(b, 1)
	switch v.ph {
	case pInt:
		return binary.LittleEndian.AppendUint64(b, uint64(v.ints[i]))
	case pFloat:
		return keyFloat(b, v.flts[i])
	case pDec:
		return appendDec(b, v.decs[i])
	case pStr:
		return appendText(b, v.str(i))
	}
	return appendBool(b, v.bools.Value(i))
}

// keyFloat appends f to a group key: -0 groups with 0, and every NaN
// with every other.
func keyFloat(b []byte, f float64) []byte {
	switch {
	case f == 0:
		f = 0
	case math.IsNaN(f):
		f = math.NaN()
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// appendDec appends d's 16 bytes, low half first.
func appendDec(b []byte, d decimal128.Num) []byte {
	b = binary.LittleEndian.AppendUint64(b, d.LowBits())
	return binary.LittleEndian.AppendUint64(b, uint64(d.HighBits()))
}

// appendText appends s preceded by its length, so that texts one after
// the other cannot run into each other.
func appendText[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// store holds one value per group: a key column, or MIN's or MAX's
// current value.
type store struct {
	ph    phys
	valid []bool
	ints  []int64
	flts  []float64
	decs  []decimal128.Num
	strs  []string
	bools []bool
	// out are appendAll's values and validity of the groups it appends,
	// gathered in order for one AppendValues; reused.
	out struct {
		valid []bool
		ints  []int64
		decs  []decimal128.Num
		strs  []string
	}
}

// grow makes room for groups up to n-1; a new group's value is NULL.
func (s *store) grow(n int) {
	for len(s.valid) < n {
		s.valid = append(s.valid, false)
		switch s.ph {
		case pInt:
			s.ints = append(s.ints, 0)
		case pFloat:
			s.flts = append(s.flts, 0)
		case pDec:
			s.decs = append(s.decs, decimal128.Num{})
		case pStr:
			s.strs = append(s.strs, "")
		case pBool:
			s.bools = append(s.bools, false)
		}
	}
}

// reset makes group g's value that of a new group: NULL, and zero for
// a SUM, which adds to it without looking at valid. It lets go of a
// string.
func (s *store) reset(g int32) {
	s.valid[g] = false
	switch s.ph {
	case pInt:
		s.ints[g] = 0
	case pFloat:
		s.flts[g] = 0
	case pDec:
		s.decs[g] = decimal128.Num{}
	case pStr:
		s.strs[g] = ""
	case pBool:
		s.bools[g] = false
	}
}

// copy makes each slot dst[i]'s value that of group src[i].
func (s *store) copy(dst, src []int32) {
	for i, d := range dst {
		s.valid[d] = s.valid[src[i]]
	}
	switch s.ph {
	case pInt:
		copyAt(s.ints, dst, src)
	case pFloat:
		copyAt(s.flts, dst, src)
	case pDec:
		copyAt(s.decs, dst, src)
	case pStr:
		copyAt(s.strs, dst, src)
	case pBool:
		copyAt(s.bools, dst, src)
	}
}

// copyAt sets vals[dst[i]] to vals[src[i]] for each i.
func copyAt[T any](vals []T, dst, src []int32) {
	for i, d := range dst {
		vals[d] = vals[src[i]]
	}
}

// set makes group g's value row i of v, copied: a string of a batch
// points into the batch's buffer, which goes back to the allocator.
func (s *store) set(g int32, v *vec, i int) {
	if v.null(i) {
		s.valid[g] = false
		return
	}
	s.valid[g] = true
	switch s.ph {
	case pInt:
		s.ints[g] = v.ints[i]
	case pFloat:
		s.flts[g] = v.flts[i]
	case pDec:
		s.decs[g] = v.decs[i]
	case pStr:
		s.strs[g] = strings.Clone(v.str(i))
	case pBool:
		s.bools[g] = v.bools.Value(i)
	}
}

// compare compares row i of v (not NULL) with group g's value (not NULL).
func (s *store) compare(v *vec, i int, g int32) int {
	switch s.ph {
	case pInt:
		return cmp.Compare(v.ints[i], s.ints[g])
	case pFloat:
		return compareFloat(v.flts[i], s.flts[g])
	case pDec:
		return v.decs[i].Cmp(s.decs[g])
	case pStr:
		return strings.Compare(v.str(i), s.strs[g])
	}
	x, y := v.bools.Value(i), s.bools[g]
	switch {
	case x == y:
		return 0
	case y:
		return -1
	}
	return 1
}

// compareFloat orders NaN above every number, as Java's Double.compareTo
// and so Flink's MIN and MAX do: MAX over a NaN is NaN, MIN skips it.
func compareFloat(x, y float64) int {
	switch xn, yn := math.IsNaN(x), math.IsNaN(y); {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp.Compare(x, y)
}

// appendAll appends the values of groups gs to b, a builder of the
// values' type with room for them.
func (s *store) appendAll(b array.Builder, gs []int32) {
	// The common types gather their values and append them at once: a
	// call per value (a closure, a builder's checks) costs more than the
	// value.
	o := &s.out
	switch b := b.(type) {
	case *array.Int64Builder:
		o.ints = gather(o.ints, s.ints, gs)
		b.AppendValues(o.ints, s.gatherValid(gs))
	case *array.TimestampBuilder:
		o.ints = gather(o.ints, s.ints, gs)
		b.AppendValues(unsafe.Slice((*arrow.Timestamp)(unsafe.SliceData(o.ints)), len(o.ints)), s.gatherValid(gs))
	case *array.Decimal128Builder:
		o.decs = gather(o.decs, s.decs, gs)
		b.AppendValues(o.decs, s.gatherValid(gs))
	case *array.StringBuilder:
		o.strs = gather(o.strs, s.strs, gs)
		b.AppendValues(o.strs, s.gatherValid(gs))
	case *array.Float64Builder:
		appendEach(s, b, gs, func(g int32) { b.UnsafeAppend(s.flts[g]) })
	case *array.Float32Builder:
		appendEach(s, b, gs, func(g int32) { b.UnsafeAppend(float32(s.flts[g])) })
	case *array.BinaryBuilder:
		appendEach(s, b, gs, func(g int32) { b.AppendString(s.strs[g]) })
	case *array.FixedSizeBinaryBuilder:
		appendEach(s, b, gs, func(g int32) { b.Append([]byte(s.strs[g])) })
	case *array.BooleanBuilder:
		appendEach(s, b, gs, func(g int32) { b.UnsafeAppend(s.bools[g]) })
	default:
		appendEach(s, b, gs, func(g int32) { appendInt(b, s.ints[g]) })
	}
}

// gather returns buf holding vals[g] for each g of gs.
func gather[T any](buf, vals []T, gs []int32) []T {
	buf = buf[:0]
	for _, g := range gs {
		buf = append(buf, vals[g])
	}
	return buf
}

// gatherValid returns whether each group of gs has a value.
func (s *store) gatherValid(gs []int32) []bool {
	s.out.valid = gather(s.out.valid, s.valid, gs)
	return s.out.valid
}

// appendEach appends, for each group of gs, a NULL or its value (app).
func appendEach(s *store, b array.Builder, gs []int32, app func(int32)) {
	for _, g := range gs {
		if s.valid[g] {
			app(g)
		} else {
			b.AppendNull()
		}
	}
}

// appendInt appends x to b, a builder of an integer-like type. BIGINT
// (every COUNT) and TIMESTAMP (every window's bounds) are picked by a
// type switch, since trying each Append(T) interface in turn is most of
// what emitting a group row costs; the other types are tried in turn.
func appendInt(b array.Builder, x int64) {
	switch b := b.(type) {
	case *array.Int64Builder:
		b.Append(x)
		return
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(x))
		return
	}
	for _, app := range intAppenders {
		if app(b, x) {
			return
		}
	}
}

func appendAs[T ~int8 | ~int16 | ~int32 | ~int64](b array.Builder, x int64) bool {
	tb, ok := b.(interface{ Append(T) })
	if ok {
		tb.Append(T(x))
	}
	return ok
}

var intAppenders = []func(array.Builder, int64) bool{
	appendAs[int32], appendAs[int16], appendAs[int8],
	appendAs[arrow.Date32], appendAs[arrow.Time32], appendAs[arrow.Time64],
}

// sameAt reports whether a[i] and a[j] are the same value (NULL is NULL),
// for the result's types.
func sameAt(a arrow.Array, i, j int) bool {
	if a.IsNull(i) || a.IsNull(j) {
		return a.IsNull(i) == a.IsNull(j)
	}
	switch a := a.(type) {
	case *array.Int64:
		return a.Value(i) == a.Value(j)
	case *array.Decimal128:
		return a.Value(i) == a.Value(j)
	case *array.String:
		return a.Value(i) == a.Value(j)
	}
	// Other types: compare what they print as, which is exact for them.
	return a.ValueStr(i) == a.ValueStr(j)
}
