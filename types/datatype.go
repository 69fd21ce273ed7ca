package types

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Kind is a Flink SQL logical type, without its parameters.
type Kind int

const (
	Char Kind = iota
	Varchar
	Boolean
	Binary
	Varbinary
	Decimal
	TinyInt
	SmallInt
	Int
	BigInt
	Float
	Double
	Date
	Time
	Timestamp
	TimestampLTZ
	Array
	Map
	Row
)

// MaxTypeDepth bounds the nesting of ARRAY, MAP and ROW types: deep enough
// for any schema a person writes, shallow enough that a hostile script
// cannot exhaust the stack.
const MaxTypeDepth = 1000

// MaxLength is the length of STRING (VARCHAR(MaxLength)) and BYTES
// (VARBINARY(MaxLength)), as in Flink.
const MaxLength = 2147483647

// Defaults Flink applies when a type is written without its parameters.
const (
	DefaultDecimalPrecision   = 10
	DefaultTimePrecision      = 0
	DefaultTimestampPrecision = 6
	MaxDecimalPrecision       = 38
	MaxTimePrecision          = 9
)

// DataType is a Flink SQL type with its parameters and nullability. A
// DataType is immutable once built; share it freely.
type DataType struct {
	Kind Kind
	// NotNull is set by NOT NULL; types are nullable by default.
	NotNull bool
	// Length of CHAR, VARCHAR, BINARY, VARBINARY (MaxLength for STRING, BYTES).
	Length int
	// Precision of DECIMAL (digits), TIME, TIMESTAMP and TIMESTAMP_LTZ
	// (fractional second digits).
	Precision int
	// Scale of DECIMAL.
	Scale int
	// Elem is the element type of ARRAY.
	Elem *DataType
	// Key and Value are the types of MAP.
	Key, Value *DataType
	// Fields are the fields of ROW.
	Fields []Field
}

// Field is a named field of a ROW type.
type Field struct {
	Name    string
	Type    *DataType
	Comment string
}

// Nullable reports whether the type admits NULL.
func (t *DataType) Nullable() bool { return !t.NotNull }

// WithNotNull returns a copy of t with NotNull set to notNull.
func (t *DataType) WithNotNull(notNull bool) *DataType {
	c := *t
	c.NotNull = notNull
	return &c
}

// String is the canonical Flink spelling of the type: STRING for
// VARCHAR(2147483647), DECIMAL(10, 2), TIMESTAMP_LTZ(3), ARRAY<INT NOT NULL>,
// ROW<`a` INT, `b` STRING 'description'>, with " NOT NULL" where it
// applies. parse.Type reads it back to an equal type.
func (t *DataType) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t *DataType) write(b *strings.Builder) {
	switch t.Kind {
	case Varchar, Varbinary:
		// Flink's names for the longest: STRING and BYTES.
		if t.Length == MaxLength {
			b.WriteString(map[Kind]string{Varchar: "STRING", Varbinary: "BYTES"}[t.Kind])
		} else {
			fmt.Fprintf(b, "%s(%d)", t.Kind, t.Length)
		}
	case Char, Binary:
		fmt.Fprintf(b, "%s(%d)", t.Kind, t.Length)
	case Decimal:
		fmt.Fprintf(b, "DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Boolean, TinyInt, SmallInt, Int, BigInt, Float, Double, Date:
		b.WriteString(t.Kind.String())
	case Time, Timestamp, TimestampLTZ:
		fmt.Fprintf(b, "%s(%d)", t.Kind, t.Precision)
	case Array:
		b.WriteString("ARRAY<")
		t.Elem.write(b)
		b.WriteString(">")
	case Map:
		b.WriteString("MAP<")
		t.Key.write(b)
		b.WriteString(", ")
		t.Value.write(b)
		b.WriteString(">")
	case Row:
		b.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(QuoteIdent(f.Name))
			b.WriteString(" ")
			f.Type.write(b)
			// Flink writes a field's description as a bare string.
			if f.Comment != "" {
				b.WriteString(" ")
				b.WriteString(QuoteString(f.Comment))
			}
		}
		b.WriteString(">")
	default:
		fmt.Fprintf(b, "UNKNOWN(%d)", int(t.Kind))
	}
	if t.NotNull {
		b.WriteString(" NOT NULL")
	}
}

// Equal reports whether t and u are the same type, nullability included.
func (t *DataType) Equal(u *DataType) bool { return t.String() == u.String() }

// plainArrowTypes are the Arrow types of the kinds that take no
// parameters.
var plainArrowTypes = map[Kind]arrow.DataType{
	Char:      arrow.BinaryTypes.String,
	Varchar:   arrow.BinaryTypes.String,
	Boolean:   arrow.FixedWidthTypes.Boolean,
	Varbinary: arrow.BinaryTypes.Binary,
	TinyInt:   arrow.PrimitiveTypes.Int8,
	SmallInt:  arrow.PrimitiveTypes.Int16,
	Int:       arrow.PrimitiveTypes.Int32,
	BigInt:    arrow.PrimitiveTypes.Int64,
	Float:     arrow.PrimitiveTypes.Float32,
	Double:    arrow.PrimitiveTypes.Float64,
	Date:      arrow.FixedWidthTypes.Date32,
}

// ArrowType maps t onto Arrow:
//
//	CHAR, VARCHAR, STRING        utf8
//	BOOLEAN                      bool
//	BINARY(n)                    fixed_size_binary(n)
//	VARBINARY, BYTES             binary
//	DECIMAL(p, s)                decimal128(p, s)
//	TINYINT..BIGINT              int8, int16, int32, int64
//	FLOAT, DOUBLE                float32, float64
//	DATE                         date32 (days since the epoch)
//	TIME(p)                      time32[s] p=0, time32[ms] p<=3, time64[us] p<=6, time64[ns]
//	TIMESTAMP(p)                 timestamp[unit] without a time zone (wall-clock time)
//	TIMESTAMP_LTZ(p)             timestamp[unit, UTC] (an instant)
//	ARRAY<T>                     list<T>
//	MAP<K, V>                    map<K, V>
//	ROW<...>                     struct<...>
//
// where a timestamp's unit is s for p=0, ms for p<=3, us for p<=6, ns above.
func (t *DataType) ArrowType() arrow.DataType {
	if at, ok := plainArrowTypes[t.Kind]; ok {
		return at
	}
	switch t.Kind {
	case Binary:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length}
	case Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case Time:
		switch {
		case t.Precision == 0:
			return arrow.FixedWidthTypes.Time32s
		case t.Precision <= 3:
			return arrow.FixedWidthTypes.Time32ms
		case t.Precision <= 6:
			return arrow.FixedWidthTypes.Time64us
		default:
			return arrow.FixedWidthTypes.Time64ns
		}
	case Timestamp:
		return &arrow.TimestampType{Unit: TimeUnit(t.Precision)}
	case TimestampLTZ:
		return &arrow.TimestampType{Unit: TimeUnit(t.Precision), TimeZone: "UTC"}
	case Array:
		return arrow.ListOfField(arrow.Field{Name: "element", Type: t.Elem.ArrowType(), Nullable: t.Elem.Nullable()})
	case Map:
		m := arrow.MapOf(t.Key.ArrowType(), t.Value.ArrowType())
		m.SetItemNullable(t.Value.Nullable())
		return m
	case Row:
		fs := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = arrow.Field{Name: f.Name, Type: f.Type.ArrowType(), Nullable: f.Type.Nullable()}
		}
		return arrow.StructOf(fs...)
	}
	panic(fmt.Sprintf("table: no Arrow type for kind %d", t.Kind))
}

// TimeUnit is the Arrow unit that holds fractional seconds of precision p.
func TimeUnit(p int) arrow.TimeUnit {
	switch {
	case p == 0:
		return arrow.Second
	case p <= 3:
		return arrow.Millisecond
	case p <= 6:
		return arrow.Microsecond
	default:
		return arrow.Nanosecond
	}
}

// QuoteIdent writes an identifier in backticks, doubling backticks inside.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// QuoteString writes a SQL string literal, doubling single quotes inside.
func QuoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// Convenience constructors for the types Go code names most often.
func StringType() *DataType  { return &DataType{Kind: Varchar, Length: MaxLength} }
func BytesType() *DataType   { return &DataType{Kind: Varbinary, Length: MaxLength} }
func IntType() *DataType     { return &DataType{Kind: Int} }
func BigIntType() *DataType  { return &DataType{Kind: BigInt} }
func BooleanType() *DataType { return &DataType{Kind: Boolean} }
func DoubleType() *DataType  { return &DataType{Kind: Double} }
func DecimalType(p, s int) *DataType {
	return &DataType{Kind: Decimal, Precision: p, Scale: s}
}
func TimestampLTZType(p int) *DataType { return &DataType{Kind: TimestampLTZ, Precision: p} }
func MapType(k, v *DataType) *DataType { return &DataType{Kind: Map, Key: k, Value: v} }

// String is the kind's name in messages: CHAR, DECIMAL, TIMESTAMP_LTZ, ...
func (k Kind) String() string {
	if int(k) >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("KIND(%d)", int(k))
}

var kindNames = [...]string{
	Char: "CHAR", Varchar: "VARCHAR", Boolean: "BOOLEAN", Binary: "BINARY", Varbinary: "VARBINARY",
	Decimal: "DECIMAL", TinyInt: "TINYINT", SmallInt: "SMALLINT", Int: "INT", BigInt: "BIGINT",
	Float: "FLOAT", Double: "DOUBLE", Date: "DATE", Time: "TIME", Timestamp: "TIMESTAMP",
	TimestampLTZ: "TIMESTAMP_LTZ", Array: "ARRAY", Map: "MAP", Row: "ROW",
}

// Validate checks that t and every type inside it is well formed: lengths
// from 1 to MaxLength, DECIMAL precision 1 to 38 and scale 0 to the
// precision, time precision 0 to 9, element, key and value types present,
// ROW field names present and unique ignoring case.
func (t *DataType) Validate() error {
	return t.validate(0)
}

func (t *DataType) validate(depth int) error {
	if depth > MaxTypeDepth {
		return fmt.Errorf("type nested deeper than %d levels", MaxTypeDepth)
	}
	if err := t.CheckParams(); err != nil {
		return err
	}
	switch t.Kind {
	case Array:
		return t.Elem.validate(depth + 1)
	case Map:
		if err := t.Key.validate(depth + 1); err != nil {
			return err
		}
		return t.Value.validate(depth + 1)
	case Row:
		for _, f := range t.Fields {
			if err := f.Type.validate(depth + 1); err != nil {
				return fmt.Errorf("field '%s': %w", f.Name, err)
			}
		}
	}
	return nil
}

// CheckParams checks t's own parameters, not those of the types inside it.
func (t *DataType) CheckParams() error {
	switch t.Kind {
	case Char, Varchar, Binary, Varbinary:
		if t.Length < 1 || t.Length > MaxLength {
			return fmt.Errorf("%s length must be between 1 and %d, got %d", t.Kind, MaxLength, t.Length)
		}
	case Decimal:
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision {
			return fmt.Errorf("DECIMAL precision must be between 1 and %d, got %d", MaxDecimalPrecision, t.Precision)
		}
		if t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("DECIMAL scale must be between 0 and the precision %d, got %d", t.Precision, t.Scale)
		}
	case Time, Timestamp, TimestampLTZ:
		if t.Precision < 0 || t.Precision > MaxTimePrecision {
			return fmt.Errorf("%s precision must be between 0 and %d, got %d", t.Kind, MaxTimePrecision, t.Precision)
		}
	case Array:
		if t.Elem == nil {
			return fmt.Errorf("ARRAY has no element type")
		}
	case Map:
		if t.Key == nil || t.Value == nil {
			return fmt.Errorf("MAP needs a key and a value type")
		}
	case Row:
		for i, f := range t.Fields {
			if f.Name == "" {
				return fmt.Errorf("ROW field %d has no name", i+1)
			}
			if f.Type == nil {
				return fmt.Errorf("ROW field '%s' has no type", f.Name)
			}
			for _, g := range t.Fields[:i] {
				if strings.EqualFold(f.Name, g.Name) {
					return fmt.Errorf("duplicate field '%s' in ROW (field names ignore case)", f.Name)
				}
			}
		}
	case Boolean, TinyInt, SmallInt, Int, BigInt, Float, Double, Date:
	default:
		return fmt.Errorf("unknown type kind %d", int(t.Kind))
	}
	return nil
}

// CanHold reports whether a column of type t can hold every value of type v
// without loss, which is what a metadata column needs of the key it reads.
// The rule is kept small, so that every connector can honour it:
//
//   - the same kind, or a wider integer (TINYINT < SMALLINT < INT < BIGINT);
//   - VARCHAR/VARBINARY at least as long (STRING holds any VARCHAR, BYTES any
//     VARBINARY), CHAR and BINARY of the same length;
//   - DECIMAL with as many integer digits and at least the scale;
//   - TIME, TIMESTAMP and TIMESTAMP_LTZ at least as precise; an instant
//     (TIMESTAMP_LTZ) never goes into a wall-clock TIMESTAMP, which would need
//     a time zone to be chosen;
//   - ARRAY, MAP and ROW whose parts can hold the value's parts (ROW fields
//     matched by position, names equal ignoring case);
//   - a NOT NULL column only for a NOT NULL value.
func (t *DataType) CanHold(v *DataType) bool {
	if t.NotNull && !v.NotNull {
		return false
	}
	if isInteger(t.Kind) && isInteger(v.Kind) {
		return t.Kind >= v.Kind
	}
	if t.Kind != v.Kind {
		return false
	}
	switch t.Kind {
	case Char, Binary:
		return t.Length == v.Length
	case Varchar, Varbinary:
		return t.Length >= v.Length
	case Decimal:
		return t.Scale >= v.Scale && t.Precision-t.Scale >= v.Precision-v.Scale
	case Time, Timestamp, TimestampLTZ:
		return t.Precision >= v.Precision
	case Array:
		return t.Elem.CanHold(v.Elem)
	case Map:
		return t.Key.CanHold(v.Key) && t.Value.CanHold(v.Value)
	case Row:
		if len(t.Fields) != len(v.Fields) {
			return false
		}
		for i := range t.Fields {
			if !strings.EqualFold(t.Fields[i].Name, v.Fields[i].Name) || !t.Fields[i].Type.CanHold(v.Fields[i].Type) {
				return false
			}
		}
	}
	return true
}

// TinyInt..BigInt are declared in order of width.
func isInteger(k Kind) bool { return k >= TinyInt && k <= BigInt }
