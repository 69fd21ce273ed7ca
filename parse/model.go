package parse

import (
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file reads the statements about models, as Flink declares them:
//
//	CREATE [TEMPORARY] MODEL [IF NOT EXISTS] name
//	  INPUT (col type [COMMENT '...'], ...)
//	  OUTPUT (col type [COMMENT '...'], ...)
//	  [COMMENT '...']
//	  WITH ('provider' = '...', ...)
//	DROP [TEMPORARY] MODEL [IF EXISTS] name
//	SHOW MODELS
//	DESCRIBE MODEL name
//	SHOW CREATE MODEL name

// modelName reads a model's name as tableName reads a table's.
func (p *parser) modelName() (string, *SyntaxError) { return p.objectName("model", "sentiment") }

// createModel reads the rest of CREATE [TEMPORARY] MODEL, from MODEL on.
func (p *parser) createModel() (table.Statement, *SyntaxError) {
	p.advance() // MODEL
	def := &table.ModelDefinition{IfNotExists: p.acceptKeywords("IF", "NOT", "EXISTS")}
	name, err := p.modelName()
	if err != nil {
		return nil, err
	}
	def.Name = name
	for _, part := range []struct {
		word string
		cols *[]types.Column
	}{{"INPUT", &def.Input}, {"OUTPUT", &def.Output}} {
		t := p.peek()
		if !p.isKeyword(t, part.word) {
			// Flink lets some providers infer the columns; kshare's
			// providers are told them.
			return nil, p.errorf(t, ErrSyntax, "expected %s (column TYPE, ...) after CREATE MODEL %s, got %s: a model declares the columns it reads (INPUT) and fills (OUTPUT)",
				part.word, types.QuoteIdent(cut(name, options.MaxQuoted)), describe(t))
		}
		p.advance()
		cols, err := p.modelColumns(name, part.word)
		if err != nil {
			return nil, err
		}
		*part.cols = cols
	}
	if p.acceptKeywords("COMMENT") {
		c := p.peek()
		if c.Kind != String {
			return nil, p.errorf(c, ErrSyntax, "expected a comment in quotes after COMMENT, got %s", describe(c))
		}
		p.advance()
		def.Comment = c.Val
	}
	if p.acceptKeywords("WITH") {
		kvs, err := p.withList()
		if err != nil {
			return nil, err
		}
		def.Options = kvs
	}
	switch t := p.peek(); {
	case p.isKeyword(t, "AS"):
		p.refuse(t, "CREATE MODEL ... AS SELECT (training a model) is not supported; kshare calls models served elsewhere, named by 'provider'")
		return nil, p.skipStatement()
	case !p.atEnd() && def.Options == nil:
		return nil, p.errorf(t, ErrSyntax, "expected COMMENT, WITH ('provider' = ...) or the end of the statement after the columns of model %s, got %s",
			types.QuoteIdent(cut(name, options.MaxQuoted)), describe(t))
	}
	return &table.CreateModel{Def: def}, nil
}

// modelColumns reads the parenthesized columns of a model's INPUT or
// OUTPUT (word): each a name, a type and an optional COMMENT.
func (p *parser) modelColumns(model, word string) ([]types.Column, *SyntaxError) {
	if err := p.expectSymbol("(", " and the columns after "+word); err != nil {
		return nil, err
	}
	cols := []types.Column{}
	if t := p.peek(); p.isSymbol(t, ")") {
		p.advance()
		p.invalid(t, "model '%s' needs at least one %s column", cut(model, options.MaxQuoted), word)
		return cols, nil
	}
	var first []Token // where each column was declared
	for {
		t := p.peek()
		if t.Kind != Ident && t.Kind != QuotedIdent {
			return nil, p.errorf(t, ErrSyntax, "expected a column name in %s, got %s", word, describe(t))
		}
		p.advance()
		col := types.Column{Name: t.Val}
		typ, err := p.dataType(0)
		if err != nil {
			return nil, err
		}
		col.Type = typ
		if err := p.columnComment(&col); err != nil {
			return nil, err
		}
		if i := (&types.Schema{Columns: cols}).Index(col.Name); i >= 0 {
			line, c := Position(p.src, first[i].Start)
			p.invalid(t, "duplicate %s column '%s' (column names ignore case; the first is at line %d, column %d)", word, cut(col.Name, options.MaxQuoted), line, c)
		} else {
			cols = append(cols, col)
			first = append(first, t)
		}
		if more, err := p.listNext(")", "a column of "+word); !more {
			return cols, err
		}
	}
}

// dropModel reads DROP [TEMPORARY] MODEL [IF EXISTS] name.
func (p *parser) dropModel() (table.Statement, *SyntaxError) {
	p.advance() // DROP
	p.acceptKeywords("TEMPORARY")
	p.advance() // MODEL
	st := &table.DropModel{IfExists: p.acceptKeywords("IF", "EXISTS")}
	name, err := p.modelName()
	if err != nil {
		return nil, err
	}
	st.Name = name
	return st, nil
}

func (p *parser) showModels() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	return &table.ShowModels{}, nil
}

func (p *parser) showCreateModel() (table.Statement, *SyntaxError) {
	p.skipWords(2)
	name, err := p.modelName()
	if err != nil {
		return nil, err
	}
	return &table.ShowCreateModel{Name: name}, nil
}

// describeModel reads DESCRIBE MODEL name. DESCRIBE model alone describes
// a table named model.
func (p *parser) describeModel() (table.Statement, *SyntaxError) {
	if p.isEnd(p.peekN(2)) {
		return p.describeTable()
	}
	p.skipWords(1)
	name, err := p.modelName()
	if err != nil {
		return nil, err
	}
	return &table.DescribeModel{Name: name}, nil
}
