package types_test

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/types"
)

// typ reads a type name as a column of CREATE TABLE declares it.
func typ(t *testing.T, s string) *types.DataType {
	t.Helper()
	dt, err := parse.Type(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return dt
}

func TestFromArrowInvertsArrowType(t *testing.T) {
	for _, c := range []struct{ name, typ string }{
		{"a", "CHAR(3)"}, {"b", "STRING"}, {"c", "BOOLEAN"}, {"d", "BINARY(4)"}, {"e", "BYTES"},
		{"f", "DECIMAL(38, 10)"}, {"g", "TINYINT"}, {"h", "SMALLINT"},
		{"i", "INT NOT NULL"}, {"j", "BIGINT"}, {"k", "FLOAT"}, {"l", "DOUBLE"}, {"m", "DATE"},
		{"n0", "TIME(0)"}, {"n3", "TIME(3)"}, {"n6", "TIME(6)"}, {"n9", "TIME(9)"},
		{"o0", "TIMESTAMP(0)"}, {"o3", "TIMESTAMP(3)"}, {"o6", "TIMESTAMP(6)"}, {"o9", "TIMESTAMP(9)"},
		{"p", "TIMESTAMP_LTZ(3)"},
		{"q", "ARRAY<INT NOT NULL>"}, {"r", "MAP<STRING, ARRAY<BYTES>>"}, {"s", "ROW<x INT NOT NULL, y ROW<z DATE>>"},
	} {
		ct := typ(t, c.typ)
		at := ct.ArrowType()
		back, err := types.FromArrow(at, ct.Nullable())
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !arrow.TypeEqual(back.ArrowType(), at) || back.Nullable() != ct.Nullable() {
			t.Errorf("%s: %s -> %s -> %s", c.name, ct, at, back)
		}
		// Where the SQL type is the widest of its Arrow type, the way back
		// is exact.
		if c.name != "a" && !back.Equal(ct) {
			t.Errorf("%s: %s came back as %s", c.name, ct, back)
		}
	}
	for _, at := range []arrow.DataType{
		arrow.PrimitiveTypes.Uint8, arrow.BinaryTypes.LargeString, arrow.FixedWidthTypes.Float16,
		arrow.ListOf(arrow.PrimitiveTypes.Uint32), &arrow.Decimal128Type{Precision: 0},
	} {
		if _, err := types.FromArrow(at, true); !errors.Is(err, types.ErrNoSQLType) {
			t.Errorf("%s: got %v", at, err)
		}
	}
}

func TestCanHold(t *testing.T) {
	for _, c := range []struct {
		col, val string
		want     bool
	}{
		{"INT", "INT NOT NULL", true},
		{"INT NOT NULL", "INT", false},
		{"BIGINT", "INT", true},
		{"SMALLINT", "INT", false},
		{"STRING", "VARCHAR(10)", true},
		{"VARCHAR(10)", "STRING", false},
		{"CHAR(3)", "CHAR(3)", true},
		{"CHAR(4)", "CHAR(3)", false},
		{"BYTES", "VARBINARY(3)", true},
		{"STRING", "BYTES", false},
		{"DECIMAL(12, 4)", "DECIMAL(10, 2)", true},
		{"DECIMAL(10, 4)", "DECIMAL(10, 2)", false},
		{"TIMESTAMP_LTZ(6)", "TIMESTAMP_LTZ(3)", true},
		{"TIMESTAMP_LTZ(0)", "TIMESTAMP_LTZ(3)", false},
		{"TIMESTAMP(3)", "TIMESTAMP_LTZ(3)", false},
		{"MAP<STRING, BYTES>", "MAP<STRING NOT NULL, BYTES> NOT NULL", true},
		{"MAP<STRING NOT NULL, BYTES>", "MAP<STRING, BYTES>", false},
		{"ARRAY<BIGINT>", "ARRAY<INT>", true},
		{"ROW<A BIGINT, b STRING>", "ROW<a INT, b STRING>", true},
		{"ROW<x BIGINT, b STRING>", "ROW<a INT, b STRING>", false},
		{"ROW<a BIGINT>", "ROW<a INT, b STRING>", false},
	} {
		if got := typ(t, c.col).CanHold(typ(t, c.val)); got != c.want {
			t.Errorf("%s.CanHold(%s) = %v", c.col, c.val, got)
		}
	}
}
