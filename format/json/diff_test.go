package json

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/format/internal/formattest"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/types"
)

// The differential test decodes the same rows with arrow-go's JSON reader
// and with ours and compares the results wherever both accept a row. The
// two differ on purpose in places (arrow-go takes 1.0 as an INT, a date as a
// TIMESTAMP, a map only as a list of key/value objects; we take Flink's
// rules), so a row one of them refuses is only counted, never compared; the
// test insists that most rows are compared, so that it cannot pass by
// refusing everything.

const diffSchema = "b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f32 FLOAT, f64 DOUBLE, " +
	"d DECIMAL(12, 3), s STRING, bin BYTES, dt DATE, ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(6), " +
	"arr ARRAY<INT>, r ROW<x INT, y ARRAY<ROW<z STRING, w DOUBLE>>>, m MAP<STRING, BIGINT>"

func TestDifferentialArrowReader(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	cols, dec := formattest.NewDecoder(t, Format{}, diffSchema)
	schema := (&types.Schema{Columns: cols}).Arrow()
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()

	rng := rand.New(rand.NewPCG(4, 2026))
	const rows = 3000
	compared, onlyOurs, onlyArrow, neither := 0, 0, 0, 0
	for k := range rows {
		row, arrowForm := genRow(rng, k%10 == 9)
		n, ourErr := dec.Decode(row, rb.Fields())
		var ours []string
		if ourErr == nil {
			if n != 1 {
				t.Fatalf("row %d: %d rows", k, n)
			}
			rec := rb.NewRecordBatch()
			ours = rowText(rec)
			rec.Release()
		}
		theirs, arrowErr := arrowRow(mem, schema, arrowForm)
		switch {
		case ourErr == nil && arrowErr == nil:
			compared++
			for c := range ours {
				if ours[c] != theirs[c] {
					t.Errorf("row %d, column %s: ours %s, arrow-go %s\n%s", k, cols[c].Name, ours[c], theirs[c], row)
				}
			}
		case ourErr == nil:
			onlyOurs++
		case arrowErr == nil:
			onlyArrow++
		default:
			neither++
		}
	}
	t.Logf("%d rows: %d compared, %d only ours accepted, %d only arrow-go accepted, %d neither", rows, compared, onlyOurs, onlyArrow, neither)
	if compared < rows*3/4 {
		t.Errorf("only %d of %d rows accepted by both decoders", compared, rows)
	}
}

func rowText(rec arrow.RecordBatch) []string {
	out := make([]string, rec.NumCols())
	for c := range out {
		out[c] = formattest.Value(rec.Column(c), 0)
	}
	return out
}

func arrowRow(mem memory.Allocator, schema *arrow.Schema, row []byte) ([]string, error) {
	r := array.NewJSONReader(bytes.NewReader(row), schema, array.WithAllocator(mem))
	defer r.Release()
	if !r.Next() {
		if r.Err() == nil {
			return nil, fmt.Errorf("no row")
		}
		return nil, r.Err()
	}
	return rowText(r.RecordBatch()), nil
}

// genRow writes one object of diffSchema, fields in random order, some
// missing or null; with odd set, some values are of the wrong type or out
// of range. It returns the row as Flink writes it and as arrow-go's reader
// takes it, which differ only in the map: an object for Flink, an array of
// key/value objects for arrow-go.
func genRow(rng *rand.Rand, odd bool) (flink, arrowForm []byte) {
	type field struct{ name, val, arrowVal string }
	var fs []field
	add := func(name, val string) {
		switch rng.IntN(12) {
		case 0:
			return // missing
		case 1:
			val = "null"
		}
		fs = append(fs, field{name, val, val})
	}
	wrong := func(v string) string {
		if odd && rng.IntN(6) == 0 {
			return []string{`"x"`, `true`, `1.5`, `[]`, `{}`, `300000`, `"2026-13-01"`}[rng.IntN(7)]
		}
		return v
	}
	add("b", wrong(strconv.FormatBool(rng.IntN(2) == 0)))
	add("i8", wrong(strconv.Itoa(rng.IntN(256)-128)))
	add("i16", wrong(strconv.Itoa(rng.IntN(65536)-32768)))
	add("i32", wrong(strconv.FormatInt(rng.Int64N(1<<32)-1<<31, 10)))
	add("i64", wrong(strconv.FormatInt(int64(rng.Uint64()), 10)))
	add("f32", wrong(strconv.FormatFloat(float64(float32(rng.NormFloat64()*1e3)), 'g', -1, 32)))
	add("f64", wrong(genDouble(rng)))
	add("d", wrong(genDecimal(rng, 9, 3)))
	add("s", wrong(genString(rng)))
	add("bin", wrong(`"`+base64.StdEncoding.EncodeToString(genBytes(rng))+`"`))
	add("dt", wrong(`"`+genDate(rng)+`"`))
	add("ts", wrong(`"`+genDate(rng)+" "+genClock(rng, 3)+`"`))
	add("ltz", wrong(`"`+genDate(rng)+" "+genClock(rng, 6)+`Z"`))
	add("arr", wrong(genArray(rng, func() string { return strconv.Itoa(int(rng.Int32())) })))
	add("r", wrong(fmt.Sprintf(`{"x":%d,"y":%s}`, rng.Int32(), genArray(rng, func() string {
		return fmt.Sprintf(`{"w":%s,"z":%s}`, genDouble(rng), genString(rng))
	}))))
	if rng.IntN(10) > 0 {
		var obj, list []string
		for i := range rng.IntN(4) {
			k, v := fmt.Sprintf(`"k%d"`, i), strconv.FormatInt(rng.Int64N(1e12), 10)
			if rng.IntN(8) == 0 {
				v = "null"
			}
			obj = append(obj, k+":"+v)
			list = append(list, fmt.Sprintf(`{"key":%s,"value":%s}`, k, v))
		}
		fs = append(fs, field{"m", "{" + strings.Join(obj, ",") + "}", "[" + strings.Join(list, ",") + "]"})
	}
	rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	var b, a strings.Builder
	b.WriteByte('{')
	a.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			sep := []string{",", ", ", " ,\n"}[rng.IntN(3)]
			b.WriteString(sep)
			a.WriteString(sep)
		}
		fmt.Fprintf(&b, "%q:%s", f.name, f.val)
		fmt.Fprintf(&a, "%q:%s", f.name, f.arrowVal)
	}
	b.WriteByte('}')
	a.WriteByte('}')
	return []byte(b.String()), []byte(a.String())
}

func genDouble(rng *rand.Rand) string {
	v := rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
	return strconv.FormatFloat(v, []byte("gef")[rng.IntN(3)], -1, 64)
}

func genDecimal(rng *rand.Rand, intDigits, scale int) string {
	var b strings.Builder
	if rng.IntN(2) == 0 {
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatInt(rng.Int64N(int64(math.Pow10(rng.IntN(intDigits)+1))), 10))
	if f := rng.IntN(scale + 1); f > 0 {
		b.WriteByte('.')
		for range f {
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
	}
	return b.String()
}

// genString writes a JSON string with plain characters, escapes, \u
// escapes (surrogate pairs included) and raw UTF-8.
func genString(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteByte('"')
	for range rng.IntN(12) {
		switch rng.IntN(8) {
		case 0:
			b.WriteString([]string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`}[rng.IntN(8)])
		case 1:
			fmt.Fprintf(&b, `\u%04x`, 0x20+rng.IntN(0xd000))
		case 2:
			b.WriteString(`\ud83d\ude00`)
		case 3:
			b.WriteString([]string{"\u00e9", "\u4e2d", "\U0001f600"}[rng.IntN(3)])
		default:
			b.WriteByte(byte('a' + rng.IntN(26)))
		}
	}
	b.WriteByte('"')
	return b.String()
}

func genBytes(rng *rand.Rand) []byte {
	b := make([]byte, rng.IntN(10))
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

func genDate(rng *rand.Rand) string {
	return fmt.Sprintf("%04d-%02d-%02d", 1900+rng.IntN(300), 1+rng.IntN(12), 1+rng.IntN(28))
}

func genClock(rng *rand.Rand, prec int) string {
	s := fmt.Sprintf("%02d:%02d:%02d", rng.IntN(24), rng.IntN(60), rng.IntN(60))
	if f := rng.IntN(prec + 1); f > 0 {
		s += "." + fmt.Sprintf("%09d", rng.IntN(1e9))[:f]
	}
	return s
}

func genArray(rng *rand.Rand, elem func() string) string {
	n := rng.IntN(4)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = elem()
		if rng.IntN(8) == 0 {
			parts[i] = "null"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}
