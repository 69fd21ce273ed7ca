package flow

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Take is cols' rows at rows, in that order (a row may come several times
// or not at all), each column a new array the caller releases. When rows is
// every row once, in order, the columns are cols themselves, retained.
func Take(mem memory.Allocator, cols []arrow.Array, rows []int) ([]arrow.Array, error) {
	same := len(cols) == 0 || len(rows) == cols[0].Len()
	for i := 0; same && i < len(rows); i++ {
		same = rows[i] == i
	}
	out := make([]arrow.Array, 0, len(cols))
	if same {
		for _, c := range cols {
			c.Retain()
			out = append(out, c)
		}
		return out, nil
	}
	ib := array.NewInt32Builder(mem)
	for _, i := range rows {
		ib.Append(int32(i))
	}
	idx := ib.NewArray()
	ib.Release()
	defer idx.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	for _, c := range cols {
		t, err := compute.TakeArray(ctx, c, idx)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
