package query

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kshare/kshare/table"
)

// parseCastType reads the target of a CAST, spelled as Flink spells it. Only
// scalar types are targets: a cast to ARRAY, MAP or ROW would need a cast of
// every element, which kshare does not do.
func parseCastType(src string) (*table.DataType, error) {
	all, err := scan(src)
	if err != nil {
		return nil, err
	}
	var toks []token
	for _, t := range all {
		if t.kind != tComment {
			toks = append(toks, t)
		}
	}
	p := &typeParser{src: src, toks: toks}
	t, err := p.parse()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, errorf(ErrSyntax, "unexpected %q after type %s in CAST(... AS %s)", p.toks[p.i].text, t, src)
	}
	return t, nil
}

type typeParser struct {
	src  string
	toks []token
	i    int
}

func (p *typeParser) peekWord(w string) bool {
	return p.i < len(p.toks) && p.toks[p.i].word(w)
}

func (p *typeParser) acceptWords(ws ...string) bool {
	if p.i+len(ws) > len(p.toks) {
		return false
	}
	for k, w := range ws {
		if !p.toks[p.i+k].word(w) {
			return false
		}
	}
	p.i += len(ws)
	return true
}

// params reads an optional (n) or (n, m); it returns nil when there is none.
func (p *typeParser) params() ([]int, error) {
	if p.i >= len(p.toks) || !p.toks[p.i].punct("(") {
		return nil, nil
	}
	p.i++
	var out []int
	for {
		if p.i >= len(p.toks) || p.toks[p.i].kind != tNumber {
			return nil, errorf(ErrSyntax, "expected a number in the parameters of type %s", p.src)
		}
		n, err := strconv.Atoi(p.toks[p.i].text)
		if err != nil {
			return nil, errorf(ErrSyntax, "bad type parameter %q in %s", p.toks[p.i].text, p.src)
		}
		out = append(out, n)
		p.i++
		if p.i < len(p.toks) && p.toks[p.i].punct(",") {
			p.i++
			continue
		}
		if p.i < len(p.toks) && p.toks[p.i].punct(")") {
			p.i++
			return out, nil
		}
		return nil, errorf(ErrSyntax, "expected , or ) in the parameters of type %s", p.src)
	}
}

const castTargets = "CHAR, VARCHAR, STRING, BOOLEAN, BINARY, VARBINARY, BYTES, DECIMAL, TINYINT, SMALLINT, " +
	"INT, BIGINT, FLOAT, DOUBLE, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ"

func (p *typeParser) parse() (*table.DataType, error) {
	if p.i >= len(p.toks) || p.toks[p.i].kind != tWord {
		return nil, errorf(ErrSyntax, "expected a type in CAST(... AS %s); types: %s", p.src, castTargets)
	}
	name := strings.ToUpper(p.toks[p.i].text)
	p.i++
	one := func(def, lo, hi int, what string) (int, error) {
		ps, err := p.params()
		if err != nil {
			return 0, err
		}
		switch len(ps) {
		case 0:
			return def, nil
		case 1:
			if ps[0] < lo || ps[0] > hi {
				return 0, errorf(ErrType, "%s of %s must be between %d and %d, got %d", what, name, lo, hi, ps[0])
			}
			return ps[0], nil
		}
		return 0, errorf(ErrSyntax, "%s takes one parameter, got %d", name, len(ps))
	}
	switch name {
	case "CHAR", "CHARACTER":
		if p.acceptWords("VARYING") {
			n, err := one(1, 1, table.MaxLength, "length")
			return &table.DataType{Kind: table.Varchar, Length: n}, err
		}
		n, err := one(1, 1, table.MaxLength, "length")
		return &table.DataType{Kind: table.Char, Length: n}, err
	case "VARCHAR":
		n, err := one(1, 1, table.MaxLength, "length")
		return &table.DataType{Kind: table.Varchar, Length: n}, err
	case "STRING":
		return table.StringType(), nil
	case "BOOLEAN":
		return table.BooleanType(), nil
	case "BINARY":
		n, err := one(1, 1, table.MaxLength, "length")
		return &table.DataType{Kind: table.Binary, Length: n}, err
	case "VARBINARY":
		n, err := one(1, 1, table.MaxLength, "length")
		return &table.DataType{Kind: table.Varbinary, Length: n}, err
	case "BYTES":
		return table.BytesType(), nil
	case "DECIMAL", "DEC", "NUMERIC":
		ps, err := p.params()
		if err != nil {
			return nil, err
		}
		prec, scale := table.DefaultDecimalPrecision, 0
		switch len(ps) {
		case 0:
		case 1:
			prec = ps[0]
		case 2:
			prec, scale = ps[0], ps[1]
		default:
			return nil, errorf(ErrSyntax, "DECIMAL takes at most two parameters, got %d", len(ps))
		}
		if prec < 1 || prec > table.MaxDecimalPrecision {
			return nil, errorf(ErrType, "precision of DECIMAL must be between 1 and %d, got %d", table.MaxDecimalPrecision, prec)
		}
		if scale < 0 || scale > prec {
			return nil, errorf(ErrType, "scale of DECIMAL(%d, %d) must be between 0 and the precision %d", prec, scale, prec)
		}
		return table.DecimalType(prec, scale), nil
	case "TINYINT":
		return &table.DataType{Kind: table.TinyInt}, nil
	case "SMALLINT":
		return &table.DataType{Kind: table.SmallInt}, nil
	case "INT", "INTEGER":
		return table.IntType(), nil
	case "BIGINT":
		return table.BigIntType(), nil
	case "FLOAT":
		return &table.DataType{Kind: table.Float}, nil
	case "DOUBLE":
		p.acceptWords("PRECISION")
		return table.DoubleType(), nil
	case "DATE":
		return &table.DataType{Kind: table.Date}, nil
	case "TIME":
		n, err := one(table.DefaultTimePrecision, 0, table.MaxTimePrecision, "precision")
		p.acceptWords("WITHOUT", "TIME", "ZONE")
		return &table.DataType{Kind: table.Time, Precision: n}, err
	case "TIMESTAMP":
		n, err := one(table.DefaultTimestampPrecision, 0, table.MaxTimePrecision, "precision")
		if err != nil {
			return nil, err
		}
		if p.acceptWords("WITH", "LOCAL", "TIME", "ZONE") {
			return &table.DataType{Kind: table.TimestampLTZ, Precision: n}, nil
		}
		if p.peekWord("WITH") {
			return nil, unsupportedCast("TIMESTAMP WITH TIME ZONE")
		}
		p.acceptWords("WITHOUT", "TIME", "ZONE")
		return &table.DataType{Kind: table.Timestamp, Precision: n}, nil
	case "TIMESTAMP_LTZ":
		n, err := one(table.DefaultTimestampPrecision, 0, table.MaxTimePrecision, "precision")
		return &table.DataType{Kind: table.TimestampLTZ, Precision: n}, err
	case "ARRAY", "MAP", "ROW", "MULTISET", "INTERVAL", "RAW":
		return nil, unsupportedCast(name)
	}
	return nil, errorf(ErrSyntax, "unknown type %s in CAST(... AS %s); types: %s", name, p.src, castTargets)
}

func unsupportedCast(what string) *Error {
	return errorf(ErrUnsupported, "CAST to %s is not supported; CAST targets: %s", what, castTargets)
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
func isNumeric(t *table.DataType) bool {
	return isExact(t) || isApprox(t)
}
func isChar(t *table.DataType) bool { return t.Kind == table.Char || t.Kind == table.Varchar }
func isBin(t *table.DataType) bool  { return t.Kind == table.Binary || t.Kind == table.Varbinary }
func isTimestamp(t *table.DataType) bool {
	return t.Kind == table.Timestamp || t.Kind == table.TimestampLTZ
}

func intRank(k table.Kind) int {
	switch k {
	case table.TinyInt:
		return 1
	case table.SmallInt:
		return 2
	case table.Int:
		return 3
	case table.BigInt:
		return 4
	}
	return 0
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
	if !isNumeric(l) || !isNumeric(r) {
		return nil, errorf(ErrType, "operator %s needs numeric operands, got %s and %s", op, tn(l), tn(r))
	}
	notNull := l.NotNull && r.NotNull
	if op == "%" && (isApprox(l) || isApprox(r)) {
		return nil, errorf(ErrType, "operator %% needs exact numeric operands (TINYINT, SMALLINT, INT, BIGINT, DECIMAL), got %s and %s", tn(l), tn(r))
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
	case isNumeric(l) && isNumeric(r):
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
	case isChar(l) && isChar(r):
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
