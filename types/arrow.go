package types

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// ErrNoSQLType is returned (wrapped) by FromArrow for an Arrow type that no
// Flink SQL type maps to.
var ErrNoSQLType = errors.New("no SQL type for Arrow type")

// FromArrow is the inverse of DataType.ArrowType: the Flink SQL type whose
// Arrow type is t, nullable or NOT NULL as nullable says. Where several SQL
// types share an Arrow type it picks the widest (utf8 is STRING, not
// VARCHAR(n)). A timestamp with any time zone is an instant, so
// TIMESTAMP_LTZ. Arrow types that ArrowType never makes (unsigned integers,
// large or view strings, float16, ...) are an error wrapping ErrNoSQLType.
// A map's key type is nullable, as in a MAP<K, V> that does not say NOT
// NULL: Arrow cannot tell.
func FromArrow(t arrow.DataType, nullable bool) (*DataType, error) {
	return fromArrow(t, nullable, 0)
}

func fromArrow(t arrow.DataType, nullable bool, depth int) (*DataType, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil", ErrNoSQLType)
	}
	if depth > MaxTypeDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d levels", ErrNoSQLType, MaxTypeDepth)
	}
	var dt *DataType
	switch a := t.(type) {
	case *arrow.StringType:
		dt = StringType()
	case *arrow.BooleanType:
		dt = BooleanType()
	case *arrow.FixedSizeBinaryType:
		if a.ByteWidth < 1 {
			return nil, fmt.Errorf("%w: %s (BINARY needs a length of 1 or more)", ErrNoSQLType, t)
		}
		dt = &DataType{Kind: Binary, Length: a.ByteWidth}
	case *arrow.BinaryType:
		dt = BytesType()
	case *arrow.Decimal128Type:
		dt = DecimalType(int(a.Precision), int(a.Scale))
		if err := dt.CheckParams(); err != nil {
			return nil, fmt.Errorf("%w: %s (%v)", ErrNoSQLType, t, err)
		}
	case *arrow.Int8Type:
		dt = &DataType{Kind: TinyInt}
	case *arrow.Int16Type:
		dt = &DataType{Kind: SmallInt}
	case *arrow.Int32Type:
		dt = IntType()
	case *arrow.Int64Type:
		dt = BigIntType()
	case *arrow.Float32Type:
		dt = &DataType{Kind: Float}
	case *arrow.Float64Type:
		dt = DoubleType()
	case *arrow.Date32Type:
		dt = &DataType{Kind: Date}
	case *arrow.Time32Type:
		dt = &DataType{Kind: Time, Precision: unitPrecision(a.Unit)}
	case *arrow.Time64Type:
		dt = &DataType{Kind: Time, Precision: unitPrecision(a.Unit)}
	case *arrow.TimestampType:
		dt = &DataType{Kind: Timestamp, Precision: unitPrecision(a.Unit)}
		if a.TimeZone != "" {
			dt.Kind = TimestampLTZ
		}
	case *arrow.ListType:
		f := a.ElemField()
		elem, err := fromArrow(f.Type, f.Nullable, depth+1)
		if err != nil {
			return nil, err
		}
		dt = &DataType{Kind: Array, Elem: elem}
	case *arrow.MapType:
		k, err := fromArrow(a.KeyType(), true, depth+1)
		if err != nil {
			return nil, err
		}
		item := a.ItemField()
		v, err := fromArrow(item.Type, item.Nullable, depth+1)
		if err != nil {
			return nil, err
		}
		dt = MapType(k, v)
	case *arrow.StructType:
		dt = &DataType{Kind: Row, Fields: []Field{}}
		for _, f := range a.Fields() {
			ft, err := fromArrow(f.Type, f.Nullable, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field '%s': %w", f.Name, err)
			}
			dt.Fields = append(dt.Fields, Field{Name: f.Name, Type: ft})
		}
		if err := dt.CheckParams(); err != nil {
			return nil, fmt.Errorf("%w: %s (%v)", ErrNoSQLType, t, err)
		}
	default:
		return nil, fmt.Errorf("%w: %s", ErrNoSQLType, t)
	}
	dt.NotNull = !nullable
	return dt, nil
}

func unitPrecision(u arrow.TimeUnit) int {
	switch u {
	case arrow.Second:
		return 0
	case arrow.Millisecond:
		return 3
	case arrow.Microsecond:
		return 6
	}
	return 9
}
