package parse

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Type reads a Flink SQL type name, NOT NULL or NULL included, as a column
// of CREATE TABLE declares it: INT, DECIMAL(10, 2), TIMESTAMP(3) WITH LOCAL
// TIME ZONE, ARRAY<ROW<a INT, b STRING>>. It is the one reader of type
// names: CREATE TABLE, CAST and the format tests all use it. The error is
// a *SyntaxError (or SyntaxErrors) with the place in src.
func Type(src string) (*types.DataType, error) { return TypeAt(src, 0, len(src)) }

// TypeAt reads the type name src[start:end] as Type does, with the places
// of its errors in src: a CAST's target is read where it stands in the
// statement.
func TypeAt(src string, start, end int) (*types.DataType, error) {
	src = src[:end]
	p := &parser{lx: &Lexer{src: src, pos: start}, src: src}
	dt, err := p.dataType(0)
	if err != nil {
		return nil, p.fatal(err)
	}
	if t := p.peek(); t.Kind != EOF {
		return nil, p.fatal(p.errorf(t, ErrSyntax, "expected the end of the type %s, got %s", dt, describe(t)))
	}
	switch len(p.errs) {
	case 0:
		return dt, nil
	case 1:
		return nil, p.errs[0]
	}
	return nil, p.errs
}

// typeNames are the type names Parse knows, for "unknown type" messages.
var typeNames = []string{
	"ARRAY", "BIGINT", "BINARY", "BOOLEAN", "BYTES", "CHAR", "DATE", "DEC", "DECIMAL", "DOUBLE",
	"FLOAT", "INT", "INTEGER", "MAP", "NUMERIC", "ROW", "SMALLINT", "STRING", "TIME", "TIMESTAMP",
	"TIMESTAMP_LTZ", "TINYINT", "VARBINARY", "VARCHAR",
}

// lengthKinds are the types that take a length, (n), 1 when it is left
// out.
var lengthKinds = map[string]types.Kind{
	"CHAR": types.Char, "CHARACTER": types.Char, "VARCHAR": types.Varchar,
	"BINARY": types.Binary, "VARBINARY": types.Varbinary,
}

// innerType reads the symbol sym (after says where it belongs, for the
// error) and then a type nested in the one at depth: ARRAY's element, MAP's
// key and value.
func (p *parser) innerType(sym, after string, depth int) (*types.DataType, *SyntaxError) {
	if err := p.expectSymbol(sym, after); err != nil {
		return nil, err
	}
	return p.dataType(depth + 1)
}

// dataType reads a Flink SQL type, NOT NULL or NULL included.
func (p *parser) dataType(depth int) (*types.DataType, *SyntaxError) {
	t := p.peek()
	if depth > types.MaxTypeDepth {
		return nil, p.errorf(t, ErrInvalidDefinition, "type nested deeper than %d levels", types.MaxTypeDepth)
	}
	if t.Kind != Ident {
		return nil, p.errorf(t, ErrSyntax, "expected a type, got %s", describe(t))
	}
	p.advance()
	var dt *types.DataType
	var err *SyntaxError
	switch name := strings.ToUpper(t.Val); name {
	case "CHAR", "CHARACTER", "VARCHAR", "BINARY", "VARBINARY":
		dt = &types.DataType{Kind: lengthKinds[name]}
		if dt.Kind == types.Char && p.acceptKeywords("VARYING") {
			dt.Kind = types.Varchar
		}
		dt.Length, err = p.optInt(1)
	case "STRING":
		dt = types.StringType()
	case "BOOLEAN":
		dt = types.BooleanType()
	case "BYTES":
		dt = types.BytesType()
	case "DECIMAL", "DEC", "NUMERIC":
		dt = &types.DataType{Kind: types.Decimal, Precision: types.DefaultDecimalPrecision}
		if p.isSymbol(p.peek(), "(") {
			p.advance()
			if dt.Precision, err = p.integer(); err != nil {
				return nil, err
			}
			if p.isSymbol(p.peek(), ",") {
				p.advance()
				if dt.Scale, err = p.integer(); err != nil {
					return nil, err
				}
			}
			err = p.expectSymbol(")", " after the parameters of "+name)
		}
	case "TINYINT":
		dt = &types.DataType{Kind: types.TinyInt}
	case "SMALLINT":
		dt = &types.DataType{Kind: types.SmallInt}
	case "INT", "INTEGER":
		dt = types.IntType()
	case "BIGINT":
		dt = types.BigIntType()
	case "FLOAT":
		dt = &types.DataType{Kind: types.Float}
	case "DOUBLE":
		p.acceptKeywords("PRECISION")
		dt = types.DoubleType()
	case "DATE":
		dt = &types.DataType{Kind: types.Date}
	case "TIME":
		dt = &types.DataType{Kind: types.Time}
		dt.Precision, err = p.optInt(types.DefaultTimePrecision)
		if err == nil && p.isKeyword(p.peek(), "WITH") && p.isKeyword(p.peekN(1), "TIME") {
			return nil, p.errorf(p.peek(), ErrUnsupported, "TIME WITH TIME ZONE is not supported (nor by Flink); use TIME(p)")
		}
		p.acceptKeywords("WITHOUT", "TIME", "ZONE")
	case "TIMESTAMP":
		dt = &types.DataType{Kind: types.Timestamp}
		if dt.Precision, err = p.optInt(types.DefaultTimestampPrecision); err != nil {
			return nil, err
		}
		switch {
		case p.acceptKeywords("WITHOUT", "TIME", "ZONE"):
		case p.acceptKeywords("WITH", "LOCAL", "TIME", "ZONE"):
			dt.Kind = types.TimestampLTZ
		case p.isKeyword(p.peek(), "WITH") && p.isKeyword(p.peekN(1), "TIME"):
			return nil, p.errorf(p.peek(), ErrUnsupported, "TIMESTAMP WITH TIME ZONE is not supported (nor by Flink); use TIMESTAMP_LTZ(p) for an instant or TIMESTAMP(p) for a wall-clock time")
		}
	case "TIMESTAMP_LTZ":
		dt = &types.DataType{Kind: types.TimestampLTZ}
		dt.Precision, err = p.optInt(types.DefaultTimestampPrecision)
	case "ARRAY":
		dt = &types.DataType{Kind: types.Array}
		if dt.Elem, err = p.innerType("<", " after ARRAY (ARRAY<INT>)", depth); err != nil {
			return nil, err
		}
		err = p.expectSymbol(">", " to close ARRAY<")
	case "MAP":
		dt = &types.DataType{Kind: types.Map}
		if dt.Key, err = p.innerType("<", " after MAP (MAP<STRING, INT>)", depth); err != nil {
			return nil, err
		}
		if dt.Value, err = p.innerType(",", " between the key and value types of MAP", depth); err != nil {
			return nil, err
		}
		err = p.expectSymbol(">", " to close MAP<")
	case "ROW":
		dt = &types.DataType{Kind: types.Row}
		err = p.rowFields(dt, depth)
	case "MULTISET", "INTERVAL", "RAW", "VARIANT", "NULL", "SYMBOL", "DESCRIPTOR", "STRUCTURED":
		return nil, p.errorf(t, ErrUnsupported, "type %s is not supported (supported: %s)", name, strings.Join(typeNames, ", "))
	default:
		msg := fmt.Sprintf("unknown type %s (known: %s)", describe(t), strings.Join(typeNames, ", "))
		if near := options.Closest(name, typeNames); near != "" {
			msg = fmt.Sprintf("unknown type %s (did you mean '%s'? known: %s)", describe(t), near, strings.Join(typeNames, ", "))
		}
		return nil, p.errorf(t, ErrSyntax, "%s", msg)
	}
	if err != nil {
		return nil, err
	}
	// A ROW's fields were checked as they were read, with their places.
	if dt.Kind != types.Row {
		if e := dt.CheckParams(); e != nil {
			p.invalid(t, "%s", e.Error())
		}
	}
	switch n := p.peek(); {
	case p.isKeyword(n, "NOT"):
		if !p.isKeyword(p.peekN(1), "NULL") {
			return nil, p.errorf(p.peekN(1), ErrSyntax, "expected NULL after NOT, got %s", describe(p.peekN(1)))
		}
		p.advance()
		p.advance()
		dt.NotNull = true
	case p.isKeyword(n, "NULL"):
		p.advance()
	}
	return dt, nil
}

// rowFields reads ROW<name T, ...> or ROW(name T, ...); a field may have a
// description, as a string after its type (Flink's form) or after COMMENT.
func (p *parser) rowFields(dt *types.DataType, depth int) *SyntaxError {
	open := p.peek()
	closer := ""
	switch {
	case p.isSymbol(open, "<"):
		closer = ">"
	case p.isSymbol(open, "("):
		closer = ")"
	default:
		return p.errorf(open, ErrSyntax, "expected '<' or '(' after ROW (ROW<a INT, b STRING>), got %s", describe(open))
	}
	p.advance()
	dt.Fields = []types.Field{}
	if p.isSymbol(p.peek(), closer) {
		p.advance()
		return nil
	}
	for {
		n := p.peek()
		if n.Kind != Ident && n.Kind != QuotedIdent {
			return p.errorf(n, ErrSyntax, "expected a field name in ROW, got %s", describe(n))
		}
		p.advance()
		if a := p.peek(); p.isSymbol(a, ",") || p.isSymbol(a, closer) {
			return p.errorf(n, ErrSyntax, "expected a field name and its type in ROW (ROW<`name` %s>), got only %s", cut(n.Val, 40), describe(n))
		}
		for _, f := range dt.Fields {
			if strings.EqualFold(f.Name, n.Val) {
				p.invalid(n, "duplicate field '%s' in ROW (field names ignore case)", cut(n.Val, options.MaxQuoted))
				break
			}
		}
		ft, err := p.dataType(depth + 1)
		if err != nil {
			return err
		}
		f := types.Field{Name: n.Val, Type: ft}
		if p.acceptKeywords("COMMENT") && p.peek().Kind != String {
			c := p.peek()
			return p.errorf(c, ErrSyntax, "expected a description in quotes after COMMENT, got %s", describe(c))
		}
		if c := p.peek(); c.Kind == String {
			p.advance()
			f.Comment = c.Val
		}
		dt.Fields = append(dt.Fields, f)
		if more, err := p.listNext(closer, "a field of ROW"); !more {
			return err
		}
	}
}

// optInt reads an optional "(n)", returning def when there is none.
func (p *parser) optInt(def int) (int, *SyntaxError) {
	if !p.isSymbol(p.peek(), "(") {
		return def, nil
	}
	p.advance()
	n, err := p.integer()
	if err != nil {
		return 0, err
	}
	return n, p.expectSymbol(")", " after the type's parameter")
}

func (p *parser) integer() (int, *SyntaxError) {
	t := p.peek()
	if t.Kind != Number {
		return 0, p.errorf(t, ErrSyntax, "expected a number, got %s", describe(t))
	}
	if strings.Trim(t.Val, "0123456789") != "" {
		return 0, p.errorf(t, ErrSyntax, "expected a whole number, got %s", describe(t))
	}
	p.advance()
	n, err := strconv.Atoi(t.Val)
	if err != nil || n > types.MaxLength {
		return 0, p.errorf(t, ErrInvalidDefinition, "number %s is too large (at most %d)", cut(t.Val, 40), types.MaxLength)
	}
	return n, nil
}
