package expr

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/types"
)

// TestIntOps checks the integer kernel against exact arithmetic (big.Int)
// on edge values and random ones of every result width: a result beyond its
// type, or a division by zero, must be found, and only on a row that is not
// NULL; every other result must be exact.
func TestIntOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []types.Kind{types.TinyInt, types.SmallInt, types.Int, types.BigInt} {
		lo, hi := types.IntRange(k)
		vals := []int64{0, 1, -1, 2, -2, lo, hi, lo + 1, hi - 1, hi / 2, lo / 2}
		if k == types.BigInt {
			vals = append(vals, math.MaxInt32, math.MinInt32, 3037000499, 3037000500, -3037000500, 1<<32, -(1 << 32))
		}
		for range 30 {
			vals = append(vals, lo+rng.Int64N(hi/2-lo/2)*2+rng.Int64N(2), rng.Int64N(100)-50)
		}
		for _, op := range []string{"+", "-", "*", "/"} {
			var x, y []int64
			for _, a := range vals {
				for _, b := range vals {
					x, y = append(x, a), append(y, b)
				}
			}
			checkIntOps(t, k, op, x, y)
		}
	}
}

func checkIntOps(t *testing.T, k types.Kind, op string, x, y []int64) {
	t.Helper()
	lo, hi := types.IntRange(k)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// Every third row is NULL: it must never fail, whatever its values.
	valid := memory.NewResizableBuffer(mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(len(x)))))
	for i := range x {
		bitutil.SetBitTo(valid.Bytes(), i, i%3 != 0)
	}
	out := make([]int64, len(x))
	// Chunks of 8 rows, each from a failing row on to the chunk's end.
	for c := 0; c < len(x); c += 8 {
		end := min(c+8, len(x))
		for i := c; i < end; {
			vb := sliceValid(mem, valid, i, end)
			bad, div0 := intOps(op, x[i:end], y[i:end], out[i:end], lo, hi, vb)
			vb.Release()
			want, wantBad := exactOp(op, x[:end], y[:end], lo, hi, i, valid.Bytes())
			if bad >= 0 {
				bad += i
			}
			if bad != wantBad {
				j := max(bad, wantBad)
				t.Fatalf("%v %s: first failing row %d, want %d (%d %s %d)", k, op, bad, wantBad, x[j], op, y[j])
			}
			last := end
			if bad >= 0 {
				if div0 != (y[bad] == 0) {
					t.Fatalf("%v %d %s %d: division by zero %v", k, x[bad], op, y[bad], div0)
				}
				last = bad
			}
			for j := i; j < last; j++ {
				if bitutil.BitIsSet(valid.Bytes(), j) && out[j] != want[j] {
					t.Fatalf("%v %d %s %d = %d, want %d", k, x[j], op, y[j], out[j], want[j])
				}
			}
			if bad < 0 {
				break
			}
			i = bad + 1
		}
	}
}

// sliceValid is the validity of rows from..n of valid, from bit 0.
func sliceValid(mem memory.Allocator, valid *memory.Buffer, from, n int) *memory.Buffer {
	b := memory.NewResizableBuffer(mem)
	b.Resize(int(bitutil.BytesForBits(int64(n - from))))
	bitutil.CopyBitmap(valid.Bytes(), from, n-from, b.Bytes(), 0)
	return b
}

// exactOp is x op y by big.Int for rows from on, and the first valid row at
// or after from whose result is beyond lo..hi or divides by zero (-1: none).
func exactOp(op string, x, y []int64, lo, hi int64, from int, valid []byte) ([]int64, int) {
	want := make([]int64, len(x))
	bad := -1
	for i := from; i < len(x); i++ {
		a, b := big.NewInt(x[i]), big.NewInt(y[i])
		var r big.Int
		switch op {
		case "+":
			r.Add(a, b)
		case "-":
			r.Sub(a, b)
		case "*":
			r.Mul(a, b)
		case "/":
			if y[i] == 0 {
				if bad < 0 && bitutil.BitIsSet(valid, i) {
					bad = i
				}
				continue
			}
			r.Quo(a, b) // truncated, as Java's
		}
		if !r.IsInt64() || r.Int64() < lo || r.Int64() > hi {
			if bad < 0 && bitutil.BitIsSet(valid, i) {
				bad = i
			}
			continue
		}
		want[i] = r.Int64()
	}
	return want, bad
}
