// Package formattest holds what the format packages' tests share: a small
// parser for column lists written as in DDL, the golden-file runner, a
// printer for record batches, and checks that builders stay aligned.
//
// The type parser here is deliberately tiny and separate from table's DDL
// parser, so that format tests do not move when the DDL grammar does.
package formattest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kshare/kshare/table"
)

// ParseColumns reads "name TYPE [NOT NULL], ..." into columns. Names may be
// backticked. Types are spelled as in Flink DDL.
func ParseColumns(s string) ([]table.Column, error) {
	p := &typeParser{toks: tokenize(s)}
	var cols []table.Column
	if p.peek() == "" {
		return nil, nil
	}
	for {
		name := p.next()
		if name == "" {
			return nil, fmt.Errorf("expected a column name")
		}
		t, err := p.dataType()
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		cols = append(cols, table.Column{Name: unquote(name), Type: t})
		switch p.next() {
		case "":
			return cols, nil
		case ",":
		default:
			return nil, fmt.Errorf("expected ',' after column %s", name)
		}
	}
}

// ParseType reads one type.
func ParseType(s string) (*table.DataType, error) {
	p := &typeParser{toks: tokenize(s)}
	t, err := p.dataType()
	if err == nil && p.peek() != "" {
		err = fmt.Errorf("unexpected %q after the type", p.peek())
	}
	return t, err
}

type typeParser struct {
	toks []string
	pos  int
}

func (p *typeParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *typeParser) next() string {
	t := p.peek()
	if t != "" {
		p.pos++
	}
	return t
}

func (p *typeParser) expect(tok string) error {
	if got := p.next(); got != tok {
		return fmt.Errorf("expected %q, got %q", tok, got)
	}
	return nil
}

// params reads an optional "(a[, b])".
func (p *typeParser) params() ([]int, error) {
	if p.peek() != "(" {
		return nil, nil
	}
	p.next()
	var out []int
	for {
		n, err := strconv.Atoi(p.next())
		if err != nil {
			return nil, fmt.Errorf("expected a number in a type's parameters")
		}
		out = append(out, n)
		switch p.next() {
		case ")":
			return out, nil
		case ",":
		default:
			return nil, fmt.Errorf("expected ',' or ')' in a type's parameters")
		}
	}
}

func (p *typeParser) dataType() (*table.DataType, error) {
	word := strings.ToUpper(p.next())
	var t *table.DataType
	simple := map[string]table.Kind{
		"BOOLEAN": table.Boolean, "TINYINT": table.TinyInt, "SMALLINT": table.SmallInt,
		"INT": table.Int, "INTEGER": table.Int, "BIGINT": table.BigInt, "FLOAT": table.Float,
		"DOUBLE": table.Double, "DATE": table.Date,
	}
	if k, ok := simple[word]; ok {
		t = &table.DataType{Kind: k}
	} else {
		switch word {
		case "STRING":
			t = table.StringType()
		case "BYTES":
			t = table.BytesType()
		case "CHAR", "VARCHAR", "BINARY", "VARBINARY":
			ps, err := p.params()
			if err != nil {
				return nil, err
			}
			kind := map[string]table.Kind{"CHAR": table.Char, "VARCHAR": table.Varchar, "BINARY": table.Binary, "VARBINARY": table.Varbinary}[word]
			t = &table.DataType{Kind: kind, Length: 1}
			if len(ps) > 0 {
				t.Length = ps[0]
			}
		case "DECIMAL":
			ps, err := p.params()
			if err != nil {
				return nil, err
			}
			t = table.DecimalType(table.DefaultDecimalPrecision, 0)
			if len(ps) > 0 {
				t.Precision = ps[0]
			}
			if len(ps) > 1 {
				t.Scale = ps[1]
			}
		case "TIME", "TIMESTAMP", "TIMESTAMP_LTZ":
			ps, err := p.params()
			if err != nil {
				return nil, err
			}
			kind := map[string]table.Kind{"TIME": table.Time, "TIMESTAMP": table.Timestamp, "TIMESTAMP_LTZ": table.TimestampLTZ}[word]
			t = &table.DataType{Kind: kind, Precision: table.DefaultTimestampPrecision}
			if kind == table.Time {
				t.Precision = table.DefaultTimePrecision
			}
			if len(ps) > 0 {
				t.Precision = ps[0]
			}
		case "ARRAY":
			if err := p.expect("<"); err != nil {
				return nil, err
			}
			e, err := p.dataType()
			if err != nil {
				return nil, err
			}
			if err := p.expect(">"); err != nil {
				return nil, err
			}
			t = &table.DataType{Kind: table.Array, Elem: e}
		case "MAP":
			if err := p.expect("<"); err != nil {
				return nil, err
			}
			k, err := p.dataType()
			if err != nil {
				return nil, err
			}
			if err := p.expect(","); err != nil {
				return nil, err
			}
			v, err := p.dataType()
			if err != nil {
				return nil, err
			}
			if err := p.expect(">"); err != nil {
				return nil, err
			}
			t = table.MapType(k, v)
		case "ROW":
			if err := p.expect("<"); err != nil {
				return nil, err
			}
			t = &table.DataType{Kind: table.Row}
			for p.peek() != ">" {
				name := p.next()
				ft, err := p.dataType()
				if err != nil {
					return nil, err
				}
				t.Fields = append(t.Fields, table.Field{Name: unquote(name), Type: ft})
				if p.peek() == "," {
					p.next()
				}
			}
			p.next()
		default:
			return nil, fmt.Errorf("unknown type %q", word)
		}
	}
	if strings.EqualFold(p.peek(), "NOT") {
		p.next()
		if !strings.EqualFold(p.next(), "NULL") {
			return nil, fmt.Errorf("expected NULL after NOT")
		}
		t.NotNull = true
	}
	return t, nil
}

func unquote(name string) string {
	if len(name) >= 2 && name[0] == '`' {
		return strings.ReplaceAll(name[1:len(name)-1], "``", "`")
	}
	return name
}

// tokenize splits on punctuation and spaces, keeping backticked names whole.
func tokenize(s string) []string {
	var toks []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			i++
		case strings.IndexByte("(),<>", c) >= 0:
			toks = append(toks, string(c))
			i++
		case c == '`':
			j := i + 1
			for j < len(s) {
				if s[j] == '`' {
					if j+1 < len(s) && s[j+1] == '`' {
						j += 2
						continue
					}
					break
				}
				j++
			}
			toks = append(toks, s[i:min(j+1, len(s))])
			i = j + 1
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t(),<>`", s[j]) < 0 {
				j++
			}
			toks = append(toks, s[i:j])
			i = j
		}
	}
	return toks
}
