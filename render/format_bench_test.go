package render

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/types"
)

// BenchmarkFormatter renders 1024 values of a column per op, as the print
// sink and the shell's CSV do; timestamps all differ, so that the cache of
// the last value's text does not hide the cost of formatting one.
func BenchmarkFormatter(b *testing.B) {
	mem := memory.NewGoAllocator()
	const n = 1024
	cols := []struct {
		name string
		t    *types.DataType
		fill func(array.Builder, int)
	}{
		{"timestamp3", &types.DataType{Kind: types.Timestamp, Precision: 3}, func(bb array.Builder, i int) {
			bb.(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000 + int64(i)*86_399_123))
		}},
		{"date", &types.DataType{Kind: types.Date}, func(bb array.Builder, i int) {
			bb.(*array.Date32Builder).Append(arrow.Date32(19_000 + i))
		}},
		{"time3", &types.DataType{Kind: types.Time, Precision: 3}, func(bb array.Builder, i int) {
			bb.(*array.Time32Builder).Append(arrow.Time32(i * 84_321))
		}},
		{"decimal10_2", &types.DataType{Kind: types.Decimal, Precision: 10, Scale: 2}, func(bb array.Builder, i int) {
			bb.(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i)*1_234_567 - 500_000))
		}},
	}
	for _, c := range cols {
		b.Run(c.name, func(b *testing.B) {
			bb := array.NewBuilder(mem, c.t.ArrowType())
			for i := 0; i < n; i++ {
				c.fill(bb, i)
			}
			a := bb.NewArray()
			bb.Release()
			defer a.Release()
			b.ReportAllocs()
			b.ResetTimer()
			for k := 0; k < b.N; k++ {
				f := Formatter(a, c.t)
				for i := 0; i < n; i++ {
					if _, ok := f(i); !ok {
						b.Fatal("NULL")
					}
				}
			}
		})
	}
}
