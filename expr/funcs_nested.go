package expr

// This file holds access to ARRAY, MAP and ROW values: CARDINALITY, arr[i]
// (from 1; an index out of range is NULL), m['key'] (NULL for a missing
// key) and r.field. The rewrite makes x[k] a call of the hidden function
// ITEM; r.field is a column name with a qualifier that names a ROW column.

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/types"
)

var nestedArg = argKind{name: "ARRAY or MAP", ok: func(t *types.DataType) bool {
	return t.Kind == types.Array || t.Kind == types.Map
}}

func init() {
	register(
		&funcDef{name: "CARDINALITY", args: []argKind{nestedArg},
			desc: "the number of elements of an ARRAY or entries of a MAP",
			ret:  fixedType(types.IntType()), eval: cardinality},
		&funcDef{name: strings.ToUpper(ItemFunc), args: []argKind{nestedArg, anyArg}, hidden: true,
			sig: "ARRAY[INTEGER], MAP[key]", desc: "an element of an ARRAY (from 1) or the value of a MAP's key",
			ret: itemType, eval: item},
	)
}

func cardinality(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	offs := func(i int) (int64, int64) { return as[0].(array.ListLike).ValueOffsets(i) }
	return rowsOf(ec, c, as, func(b *array.Int32Builder, i int) error {
		s, e := offs(i)
		b.UnsafeAppend(int32(e - s))
		return nil
	})
}

// itemType is the element's or value's type, NULL when absent; an ARRAY
// takes an integer index, a MAP a key of its key type.
func itemType(c *call) (*types.DataType, error) {
	x, k := c.args[0].Type(), c.args[1].Type()
	if x.Kind == types.Array {
		if !isInt(k) {
			return nil, Errorf(ErrType, "an ARRAY index is an integer, got %s (%s)", TypeName(k), c.src)
		}
		return x.Elem.WithNotNull(false), nil
	}
	if _, ok := commonType(x.Key, k); !ok || !comparableKind(x.Key) {
		return nil, Errorf(ErrType, "the keys of %s are %s, got %s (%s)", c.args[0].Text(), TypeName(x.Key), TypeName(k), c.src)
	}
	kc, err := convert(c.args[1], x.Key)
	if err != nil {
		return nil, err
	}
	c.args[1] = kc
	return x.Value.WithNotNull(false), nil
}

// item finds, for each row, where in the ARRAY's elements or the MAP's
// values its answer is, and takes those.
func item(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	x := as[0]
	n := x.Len()
	idx := array.NewInt32Builder(ec.mem)
	defer idx.Release()
	idx.Reserve(n)
	var values arrow.Array
	switch l := x.(type) {
	case *array.Map:
		values = l.Items()
		keyType := c.args[0].Type().Key
		ct, _ := compareType(keyType, keyType)
		for i := 0; i < n; i++ {
			if x.IsNull(i) || as[1].IsNull(i) {
				idx.AppendNull()
				continue
			}
			s, e := l.ValueOffsets(i)
			at, err := findKey(ec, l.Keys(), keyType, ct, as[1], i, int(s), int(e))
			if err != nil {
				return nil, err
			}
			if at < 0 {
				idx.AppendNull()
			} else {
				idx.UnsafeAppend(int32(at))
			}
		}
	case *array.List:
		values = l.ListValues()
		get := render.IntReader(as[1])
		for i := 0; i < n; i++ {
			if x.IsNull(i) || as[1].IsNull(i) {
				idx.AppendNull()
				continue
			}
			s, e := l.ValueOffsets(i)
			k := get(i)
			if k < 1 || k > e-s {
				idx.AppendNull()
				continue
			}
			idx.UnsafeAppend(int32(s + k - 1))
		}
	default:
		return nil, fmt.Errorf("query: item of %s", x.DataType())
	}
	ia := idx.NewArray()
	defer ia.Release()
	return compute.TakeArray(ec.ctx, values, ia)
}

// findKey is the position in keys[s:e] of row i's key, -1 if absent.
func findKey(ec *EvalCtx, keys arrow.Array, kt, ct *types.DataType, key arrow.Array, i, s, e int) (int, error) {
	if e == s {
		return -1, nil
	}
	one := array.NewSlice(key, int64(i), int64(i+1))
	defer one.Release()
	run := array.NewSlice(keys, int64(s), int64(e))
	defer run.Release()
	for j := 0; j < e-s; j++ {
		k := array.NewSlice(run, int64(j), int64(j+1))
		eq, err := compareArrays(ec, "=", k, kt, one, kt, ct)
		k.Release()
		if err != nil {
			return 0, err
		}
		hit := eq.(*array.Boolean).IsValid(0) && eq.(*array.Boolean).Value(0)
		eq.Release()
		if hit {
			return s + j, nil
		}
	}
	return -1, nil
}

// FieldOf is the field path fields of n, a ROW (r.a.b: n is r, fields
// are a and b; src is the whole as written): an error names the field n
// has not.
func FieldOf(n Node, fields []string, src string) (Node, error) {
	for _, f := range fields {
		t := n.Type()
		if t.Kind != types.Row {
			return nil, Errorf(ErrType, "%s is %s, which has no fields (%s)", n.Text(), TypeName(t), src)
		}
		at := -1
		var names []string
		for j, fl := range t.Fields {
			names = append(names, fl.Name)
			if strings.EqualFold(fl.Name, f) {
				at = j
			}
		}
		if at < 0 {
			return nil, Errorf(ErrUnknownColumn, "%s has no field %s (fields: %s)", n.Text(), f, strings.Join(names, ", "))
		}
		n = &field{exprBase: exprBase{t: t.Fields[at].Type.WithNotNull(false), src: n.Text() + "." + f}, e: n, idx: at}
	}
	return n, nil
}

// field is a field of a ROW: NULL where the ROW is.
type field struct {
	exprBase
	e   Node
	idx int
}

func (f *field) Operands() []Node { return []Node{f.e} }
func (f *field) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	return evalUnary(ec, b, f.e, func(ec *EvalCtx, a arrow.Array) (arrow.Array, error) {
		st := a.(*array.Struct)
		child := st.Field(f.idx)
		if st.NullN() == 0 {
			child.Retain()
			return child, nil
		}
		idx := array.NewInt32Builder(ec.mem)
		defer idx.Release()
		for i := 0; i < st.Len(); i++ {
			if st.IsNull(i) {
				idx.AppendNull()
			} else {
				idx.Append(int32(i))
			}
		}
		ia := idx.NewArray()
		defer ia.Release()
		return compute.TakeArray(ec.ctx, child, ia)
	})
}
