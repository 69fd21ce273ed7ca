package query

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/table"
)

// A timestamp formatter keeps the last value's text (window rows repeat
// their bounds): repeated, alternating and zero values, and NULLs between
// them, still read right.
func TestFormatterRepeatedTimestamps(t *testing.T) {
	mem := tabletest.CheckedAlloc(t)
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Millisecond})
	defer b.Release()
	b.AppendValues([]arrow.Timestamp{0, 0, 60_000, 60_000, 0, 1_500}, nil)
	b.AppendNull()
	b.Append(1_500)
	col := b.NewArray()
	defer col.Release()
	f := Formatter(col, &table.DataType{Kind: table.Timestamp, Precision: 3})
	want := []string{"1970-01-01 00:00:00.000", "1970-01-01 00:00:00.000", "1970-01-01 00:01:00.000", "1970-01-01 00:01:00.000",
		"1970-01-01 00:00:00.000", "1970-01-01 00:00:01.500", "", "1970-01-01 00:00:01.500"}
	for i, w := range want {
		got, ok := f(i)
		if got != w || ok != (w != "") {
			t.Errorf("row %d: %q, %v; want %q, %v", i, got, ok, w, w != "")
		}
	}
}
