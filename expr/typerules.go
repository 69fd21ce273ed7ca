package expr

import (
	"fmt"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/types"
)

// castType reads the target of a CAST with the type parser every table
// uses (parse.TypeAt), where it stands in the statement. Only scalar types
// are targets: a cast to ARRAY, MAP or ROW would need a cast of every
// element, which kshare does not do.
func castType(src string, spec CastSpec) (*types.DataType, error) {
	t, err := parse.TypeAt(src, spec.Start, spec.End)
	if err != nil {
		return nil, FromParse(err, "CAST(... AS "+spec.Type+") at ")
	}
	switch t.Kind {
	case types.Array, types.Map, types.Row:
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

func isInt(t *types.DataType) bool {
	switch t.Kind {
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		return true
	}
	return false
}

func isApprox(t *types.DataType) bool { return t.Kind == types.Float || t.Kind == types.Double }
func isExact(t *types.DataType) bool  { return isInt(t) || t.Kind == types.Decimal }
func IsNumeric(t *types.DataType) bool {
	return isExact(t) || isApprox(t)
}
func IsChar(t *types.DataType) bool { return t.Kind == types.Char || t.Kind == types.Varchar }
func isBin(t *types.DataType) bool  { return t.Kind == types.Binary || t.Kind == types.Varbinary }
func isTimestamp(t *types.DataType) bool {
	return t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ
}

// intRank orders the integer kinds by width (TINYINT 1 to BIGINT 4), 0 for
// any other kind: table declares them in that order.
func intRank(k types.Kind) int {
	if k < types.TinyInt || k > types.BigInt {
		return 0
	}
	return int(k-types.TinyInt) + 1
}

// decimalOf is the DECIMAL that holds every value of an exact type, as Flink
// widens integers in decimal arithmetic.
func decimalOf(t *types.DataType) (p, s int) {
	switch t.Kind {
	case types.TinyInt:
		return 3, 0
	case types.SmallInt:
		return 5, 0
	case types.Int:
		return 10, 0
	case types.BigInt:
		return 19, 0
	}
	return t.Precision, t.Scale
}

// adjustDecimal fits a derived precision into DECIMAL's 38 digits the way
// Flink does: integer digits win, but at least 6 fractional digits (or all of
// them, if fewer) survive.
func adjustDecimal(p, s int) (int, int) {
	if p <= types.MaxDecimalPrecision {
		return max(p, 1), s
	}
	intDigits := p - s
	minScale := min(s, 6)
	s = max(types.MaxDecimalPrecision-intDigits, minScale)
	return types.MaxDecimalPrecision, s
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
func arithType(op string, l, r *types.DataType) (*types.DataType, error) {
	if !IsNumeric(l) || !IsNumeric(r) {
		return nil, Errorf(ErrType, "operator %s needs numeric operands, got %s and %s", op, TypeName(l), TypeName(r))
	}
	notNull := l.NotNull && r.NotNull
	if op == "%" && (isApprox(l) || isApprox(r)) {
		return nil, Errorf(ErrType, "operator %% needs exact numeric operands (TINYINT, SMALLINT, INT, BIGINT, DECIMAL), got %s and %s", TypeName(l), TypeName(r))
	}
	switch {
	case isApprox(l) || isApprox(r):
		if l.Kind == types.Double || r.Kind == types.Double {
			return &types.DataType{Kind: types.Double, NotNull: notNull}, nil
		}
		return &types.DataType{Kind: types.Float, NotNull: notNull}, nil
	case isInt(l) && isInt(r):
		if op == "%" {
			return &types.DataType{Kind: r.Kind, NotNull: notNull}, nil
		}
		k := l.Kind
		if intRank(r.Kind) > intRank(k) {
			k = r.Kind
		}
		return &types.DataType{Kind: k, NotNull: notNull}, nil
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
	return &types.DataType{Kind: types.Decimal, Precision: p, Scale: s, NotNull: notNull}, nil
}

// compareType is the type both sides of a comparison are cast to before they
// are compared. ok is false when Flink would refuse the comparison. Decimals
// are compared exactly by their own kernel, so for them the result only says
// "numeric".
func compareType(l, r *types.DataType) (*types.DataType, bool) {
	switch {
	case IsNumeric(l) && IsNumeric(r):
		switch {
		case l.Kind == types.Float && r.Kind == types.Float:
			return &types.DataType{Kind: types.Float}, true
		case isApprox(l) || isApprox(r):
			return types.DoubleType(), true
		case isInt(l) && isInt(r):
			if intRank(r.Kind) > intRank(l.Kind) {
				return &types.DataType{Kind: r.Kind}, true
			}
			return &types.DataType{Kind: l.Kind}, true
		}
		return &types.DataType{Kind: types.Decimal}, true
	case IsChar(l) && IsChar(r):
		return types.StringType(), true
	case isBin(l) && isBin(r):
		if l.Kind == types.Binary && r.Kind == types.Binary && l.Length == r.Length {
			return l.WithNotNull(false), true
		}
		return types.BytesType(), true
	case l.Kind == types.Boolean && r.Kind == types.Boolean:
		return types.BooleanType(), true
	case l.Kind == types.Date && r.Kind == types.Date:
		return &types.DataType{Kind: types.Date}, true
	case l.Kind == types.Time && r.Kind == types.Time:
		return &types.DataType{Kind: types.Time, Precision: max(l.Precision, r.Precision)}, true
	case l.Kind == r.Kind && isTimestamp(l):
		return &types.DataType{Kind: l.Kind, Precision: max(l.Precision, r.Precision)}, true
	case isTimestamp(l) && isTimestamp(r):
		// TIMESTAMP against TIMESTAMP_LTZ: the wall-clock time is read in
		// the session time zone (UTC), Flink's implicit cast.
		return &types.DataType{Kind: types.TimestampLTZ, Precision: max(l.Precision, r.Precision)}, true
	case l.Kind == types.Date && isTimestamp(r):
		return &types.DataType{Kind: r.Kind, Precision: r.Precision}, true
	case r.Kind == types.Date && isTimestamp(l):
		return &types.DataType{Kind: l.Kind, Precision: l.Precision}, true
	}
	return nil, false
}

// comparable reports whether values of t can be ordered and tested for
// equality at all (nested types cannot).
func comparableKind(t *types.DataType) bool {
	switch t.Kind {
	case types.Array, types.Map, types.Row:
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
func commonType(a, b *types.DataType) (*types.DataType, bool) {
	a, b = a.WithNotNull(false), b.WithNotNull(false)
	switch {
	case a.Equal(b):
		return a, true
	case IsNumeric(a) && IsNumeric(b):
		switch {
		case isApprox(a) || isApprox(b):
			return types.DoubleType(), true // FLOAT with FLOAT was equal
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
		return types.DecimalType(p, s), true
	case IsChar(a) && IsChar(b):
		return &types.DataType{Kind: types.Varchar, Length: max(a.Length, b.Length)}, true
	case isBin(a) && isBin(b):
		return &types.DataType{Kind: types.Varbinary, Length: max(a.Length, b.Length)}, true
	case !comparableKind(a) || !comparableKind(b):
		return nil, false
	}
	return compareType(a, b)
}
