package query

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
)

// TestKernelsOnSlices runs the native kernels over batches that are slices
// of one (their arrays start at an offset, as a source's may), with NULLs,
// and checks every value against one computed here from the rows.
func TestKernelsOnSlices(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cat := newCatalog(t, "CREATE TABLE t (bi BIGINT, i INT, f DOUBLE) WITH ('connector' = 'test', 'format' = 'test')")
	src := sourceOf(t, cat, "t")
	type row struct {
		bi    int64
		i     int64
		f     float64
		iNull bool
		fNull bool
	}
	var rows []row
	var lines []string
	for k := 0; k < 40; k++ {
		r := row{bi: int64(k) * 1000000000, i: int64(k % 5), f: float64(k) / 2, iNull: k%3 == 0, fNull: k%4 == 0}
		rows = append(rows, r)
		iv, fv := fmt.Sprint(r.i), fmt.Sprint(r.f)
		if r.iNull {
			iv = "null"
		}
		if r.fNull {
			fv = "null"
		}
		lines = append(lines, fmt.Sprintf(`{"bi": %d, "i": %s, "f": %s}`, r.bi, iv, fv))
	}
	whole := tabletest.FromJSON(t, mem, src.Schema, 0, lines...)[0]
	for _, cut := range [][2]int64{{0, 7}, {7, 23}, {23, 40}} {
		src.Batches = append(src.Batches, whole.NewSlice(cut[0], cut[1]))
	}
	whole.Release()
	t.Cleanup(src.Release)
	p, err := Prepare("SELECT bi + i, i * 3 - 1, NULLIF(i, 2), COALESCE(i, -1), bi > i * 1000000000000, f / 2, f < i FROM t", cat)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), p, Options{Alloc: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	n := 0
	for res.Next() {
		rb := res.RecordBatch()
		for j := 0; j < int(rb.NumRows()); j++ {
			r := rows[n]
			var want []any
			if r.iNull {
				want = []any{nil, nil, nil, int64(-1), nil}
			} else {
				var nullIf any = r.i
				if r.i == 2 {
					nullIf = nil
				}
				want = []any{r.bi + r.i, r.i*3 - 1, nullIf, r.i, r.bi > r.i*1000000000000}
			}
			if r.fNull {
				want = append(want, nil, nil)
			} else if r.iNull {
				want = append(want, r.f/2, nil)
			} else {
				want = append(want, r.f/2, r.f < float64(r.i))
			}
			for c, w := range want {
				if got := cellOf(rb.Column(c), j); got != w {
					t.Errorf("row %d, column %d: %v, want %v", n, c+1, got, w)
				}
			}
			n++
		}
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(rows) {
		t.Fatalf("%d rows, want %d", n, len(rows))
	}
}

// cellOf is value i of a as int64, float64 or bool; nil for NULL.
func cellOf(a arrow.Array, i int) any {
	switch {
	case a.IsNull(i):
		return nil
	case a.DataType().ID() == arrow.FLOAT64:
		return a.(*array.Float64).Value(i)
	case a.DataType().ID() == arrow.BOOL:
		return a.(*array.Boolean).Value(i)
	}
	return render.IntReader(a)(i)
}
