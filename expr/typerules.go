package expr

import (
	"fmt"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
)

// castType reads the target of a CAST with the type parser every table
// uses (parse.TypeAt), where it stands in the statement. Only scalar types
// are targets: a cast to ARRAY, MAP or ROW would need a cast of every
// element, which kshare does not do.
func castType(src string, spec CastSpec) (*table.DataType, error) {
	t, err := parse.TypeAt(src, spec.Start, spec.End)
	if err != nil {
		return nil, FromParse(err, "CAST(... AS "+spec.Type+") at ")
	}
	switch t.Kind {
	case table.Array, table.Map, table.Row:
		return nil, unsupportedCast(t.Kind.String())
	}
	return t.WithNotNull(false), nil
}

const castTargets = "CHAR, VARCHAR, STRING, BOOLEAN, BINARY, VARBINARY, BYTES, DECIMAL, TINYINT, SMALLINT, " +
	"INT, BIGINT, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ"

func unsupportedCast(what string) *Error {
	return Errorf(ErrUnsupported, "CAST to %s is not supported; CAST targets: %s", what, castTargets)
}

// Type classes.

func isInt(t *table.DataType) bool {
	switch t.Kind {
	case table.TinyInt, table.SmallInt, table.Int, table.BigInt:
		return true
	}
	return false
}

func isApprox(t *table.DataType) bool { return t.Kind == table.Float || t.Kind == table.Double }
func isExact(t *table.DataType) bool  { return isInt(t) || t.Kind == table.Decimal }
func IsNumeric(t *table.DataType) bool {
	return isExact(t) || isApprox(t)
}
func IsChar(t *table.DataType) bool { return t.Kind == table.Char || t.Kind == table.Varchar }
func isBin(t *table.DataType) bool  { return t.Kind == table.Binary || t.Kind == table.Varbinary }
func isTimestamp(t *table.DataType) bool {
	return t.Kind == table.Timestamp || t.Kind == table.TimestampLTZ
}

// intRank orders the integer kinds by width (TINYINT 1 to BIGINT 4), 0 for
// any other kind: table declares them in that order.
func intRank(k table.Kind) int {
	if k < table.TinyInt || k > table.BigInt {
		return 0
	}
	return int(k-table.TinyInt) + 1
}

// decimalOf is the DECIMAL that holds every value of an exact type, as Flink
// widens integers in decimal arithmetic.
func decimalOf(t *table.DataType) (p, s int) {
	switch t.Kind {
	case table.TinyInt:
		return 3, 0
	case table.SmallInt:
		return 5, 0
	case table.Int:
		return 10, 0
	case table.BigInt:
		return 19, 0
	}
	return t.Precision, t.Scale
}

// adjustDecimal fits a derived precision into DECIMAL's 38 digits the way
// Flink does: integer digits win, but at least 6 fractional digits (or all of
// them, if fewer) survive.
func adjustDecimal(p, s int) (int, int) {
	if p <= table.MaxDecimalPrecision {
		return max(p, 1), s
	}
	intDigits := p - s
	minScale := min(s, 6)
	s = max(table.MaxDecimalPrecision-intDigits, minScale)
	return table.MaxDecimalPrecision, s
}

// arithType is the type of l op r, derived as Flink derives it:
//
//	integer op integer   the wider integer (INT + BIGINT = BIGINT; INT / INT = INT)
//	integer % integer    the type of the divisor, which bounds the result
//	FLOAT or DOUBLE      DOUBLE if either is DOUBLE, else FLOAT
//	DECIMAL              + -: scale max(s1, s2), precision max(p1-s1, p2-s2) + scale + 1
//	                     *:   scale s1 + s2, precision p1 + p2 + 1
//	                     /:   scale max(6, s1 + p2 + 1), precision p1 - s1 + s2 + scale
//	                     %:   scale max(s1, s2), precision min(p1-s1, p2-s2) + scale
//	                     then fitted into 38 digits (adjustDecimal)
//
// with integers taken as DECIMAL(3|5|10|19, 0). The result is NOT NULL only if
// both operands are.
func arithType(op string, l, r *table.DataType) (*table.DataType, error) {
	if !IsNumeric(l) || !IsNumeric(r) {
		return nil, Errorf(ErrType, "operator %s needs numeric operands, got %s and %s", op, TypeName(l), TypeName(r))
	}
	notNull := l.NotNull && r.NotNull
	if op == "%" && (isApprox(l) || isApprox(r)) {
		return nil, Errorf(ErrType, "operator %% needs exact numeric operands (TINYINT, SMALLINT, INT, BIGINT, DECIMAL), got %s and %s", TypeName(l), TypeName(r))
	}
	switch {
	case isApprox(l) || isApprox(r):
		if l.Kind == table.Double || r.Kind == table.Double {
			return &table.DataType{Kind: table.Double, NotNull: notNull}, nil
		}
		return &table.DataType{Kind: table.Float, NotNull: notNull}, nil
	case isInt(l) && isInt(r):
		if op == "%" {
			return &table.DataType{Kind: r.Kind, NotNull: notNull}, nil
		}
		k := l.Kind
		if intRank(r.Kind) > intRank(k) {
			k = r.Kind
		}
		return &table.DataType{Kind: k, NotNull: notNull}, nil
	}
	p1, s1 := decimalOf(l)
	p2, s2 := decimalOf(r)
	var p, s int
	switch op {
	case "+", "-":
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s + 1
	case "*":
		s = s1 + s2
		p = p1 + p2 + 1
	case "/":
		s = max(6, s1+p2+1)
		p = p1 - s1 + s2 + s
	case "%":
		s = max(s1, s2)
		p = min(p1-s1, p2-s2) + s
	default:
		return nil, fmt.Errorf("query: no type rule for operator %s", op)
	}
	p, s = adjustDecimal(p, s)
	return &table.DataType{Kind: table.Decimal, Precision: p, Scale: s, NotNull: notNull}, nil
}

// compareType is the type both sides of a comparison are cast to before they
// are compared. ok is false when Flink would refuse the comparison. Decimals
// are compared exactly by their own kernel, so for them the result only says
// "numeric".
func compareType(l, r *table.DataType) (*table.DataType, bool) {
	switch {
	case IsNumeric(l) && IsNumeric(r):
		switch {
		case l.Kind == table.Float && r.Kind == table.Float:
			return &table.DataType{Kind: table.Float}, true
		case isApprox(l) || isApprox(r):
			return table.DoubleType(), true
		case isInt(l) && isInt(r):
			if intRank(r.Kind) > intRank(l.Kind) {
				return &table.DataType{Kind: r.Kind}, true
			}
			return &table.DataType{Kind: l.Kind}, true
		}
		return &table.DataType{Kind: table.Decimal}, true
	case IsChar(l) && IsChar(r):
		return table.StringType(), true
	case isBin(l) && isBin(r):
		if l.Kind == table.Binary && r.Kind == table.Binary && l.Length == r.Length {
			return l.WithNotNull(false), true
		}
		return table.BytesType(), true
	case l.Kind == table.Boolean && r.Kind == table.Boolean:
		return table.BooleanType(), true
	case l.Kind == table.Date && r.Kind == table.Date:
		return &table.DataType{Kind: table.Date}, true
	case l.Kind == table.Time && r.Kind == table.Time:
		return &table.DataType{Kind: table.Time, Precision: max(l.Precision, r.Precision)}, true
	case l.Kind == r.Kind && isTimestamp(l):
		return &table.DataType{Kind: l.Kind, Precision: max(l.Precision, r.Precision)}, true
	case isTimestamp(l) && isTimestamp(r):
		// TIMESTAMP against TIMESTAMP_LTZ: the wall-clock time is read in
		// the session time zone (UTC), Flink's implicit cast.
		return &table.DataType{Kind: table.TimestampLTZ, Precision: max(l.Precision, r.Precision)}, true
	case l.Kind == table.Date && isTimestamp(r):
		return &table.DataType{Kind: r.Kind, Precision: r.Precision}, true
	case r.Kind == table.Date && isTimestamp(l):
		return &table.DataType{Kind: l.Kind, Precision: l.Precision}, true
	}
	return nil, false
}

// comparable reports whether values of t can be ordered and tested for
// equality at all (nested types cannot).
func comparableKind(t *table.DataType) bool {
	switch t.Kind {
	case table.Array, table.Map, table.Row:
		return false
	}
	return true
}

// commonType is the type values of a and b both convert to, Flink's
// least-restrictive type for CASE, COALESCE, IF and the like (nullability
// aside): the wider number (integer ranks, DECIMAL with the larger integer
// part and scale, DOUBLE if either is, else FLOAT), a string or binary of the
// longer length (VARCHAR unless both are CHAR of one length: kshare does not
// pad), the later time precision, TIMESTAMP_LTZ for TIMESTAMP with
// TIMESTAMP_LTZ, a timestamp for DATE with one. ok is false when there is
// none.
func commonType(a, b *table.DataType) (*table.DataType, bool) {
	a, b = a.WithNotNull(false), b.WithNotNull(false)
	switch {
	case a.Equal(b):
		return a, true
	case IsNumeric(a) && IsNumeric(b):
		switch {
		case isApprox(a) || isApprox(b):
			return table.DoubleType(), true // FLOAT with FLOAT was equal
		case isInt(a) && isInt(b):
			if intRank(b.Kind) > intRank(a.Kind) {
				return b, true
			}
			return a, true
		}
		p1, s1 := decimalOf(a)
		p2, s2 := decimalOf(b)
		s := max(s1, s2)
		p, s := adjustDecimal(max(p1-s1, p2-s2)+s, s)
		return table.DecimalType(p, s), true
	case IsChar(a) && IsChar(b):
		return &table.DataType{Kind: table.Varchar, Length: max(a.Length, b.Length)}, true
	case isBin(a) && isBin(b):
		return &table.DataType{Kind: table.Varbinary, Length: max(a.Length, b.Length)}, true
	case !comparableKind(a) || !comparableKind(b):
		return nil, false
	}
	return compareType(a, b)
}
