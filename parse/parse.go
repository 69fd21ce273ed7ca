package parse

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Parse reads a script of statements separated by ';' (a ';' inside quotes,
// backticks or comments does not count). It returns each statement typed:
// *table.CreateTable, *table.DropTable, *table.ShowTables, *table.ShowFunctions, *table.Describe, *table.ShowCreateTable,
// *table.Select (the text of a SELECT, untouched), *table.SetOption and *table.Reset,
// the model statements (*table.CreateModel, *table.DropModel, *table.ShowModels,
// *table.DescribeModel, *table.ShowCreateModel) and the statements about the
// cluster of table/cluster.go.
//
// On error it returns no statements and a *SyntaxError, or SyntaxErrors
// when it passed several clauses that Flink accepts and kshare does not
// before it stopped; each says where (line and column) and what was
// expected, and wraps ErrSyntax, ErrUnsupported or ErrInvalidDefinition.
func Parse(src string) ([]table.Statement, error) {
	p := &parser{lx: NewLexer(src), src: src}
	var out []table.Statement
	for {
		for p.isSymbol(p.peek(), ";") {
			p.advance()
		}
		t := p.peek()
		if t.Kind == EOF {
			break
		}
		if t.Kind == tokError {
			return nil, p.fatal(p.lexErr)
		}
		st, err := p.statement()
		if err != nil {
			return nil, p.fatal(err)
		}
		if st != nil {
			out = append(out, st)
		}
		if t := p.peek(); t.Kind != EOF && !p.isSymbol(t, ";") {
			return nil, p.fatal(p.errorf(t, ErrSyntax, "expected ';' or the end of the script after the statement, got %s", describe(t)))
		}
	}
	if len(p.errs) == 1 {
		return nil, p.errs[0]
	}
	if len(p.errs) > 1 {
		return nil, p.errs
	}
	return out, nil
}

// tokError is the kind of the place where the lexer failed: the parser
// reports the lexer's error only when it gets there.
const tokError Kind = -1

type parser struct {
	lx   *Lexer
	src  string
	buf  []Token
	errs SyntaxErrors // unsupported clauses passed so far
	// prevEnd is where the last Token consumed ends: the end of a SELECT's
	// or a SET value's text, comments after it left out.
	prevEnd int
	// lexErr is the lexer's error, carried by a tokError Token so that it
	// is reported only when the parser reaches it.
	lexErr *SyntaxError
	// keyAt is where the PRIMARY KEY constraint starts, for the problems
	// with its columns found once they are all read.
	keyAt Token
}

// fatal adds err to the problems collected so far and returns them all.
func (p *parser) fatal(err *SyntaxError) error {
	if len(p.errs) == 0 {
		return err
	}
	return append(p.errs, err)
}

func (p *parser) peekN(n int) Token {
	for len(p.buf) <= n {
		if p.lexErr != nil {
			p.buf = append(p.buf, Token{Kind: tokError, Start: len(p.src), End: len(p.src)})
			continue
		}
		t, err := p.lx.Next()
		if err != nil {
			p.lexErr = err.(*SyntaxError)
			t = Token{Kind: tokError, Start: len(p.src), End: len(p.src)}
		}
		p.buf = append(p.buf, t)
	}
	return p.buf[n]
}

func (p *parser) peek() Token { return p.peekN(0) }

func (p *parser) advance() Token {
	t := p.peek()
	if t.Kind != EOF && t.Kind != tokError {
		p.buf = p.buf[1:]
		p.prevEnd = t.End
	}
	return t
}

func (p *parser) isKeyword(t Token, kw string) bool {
	return t.Kind == Ident && strings.EqualFold(t.Val, kw)
}

func (p *parser) isSymbol(t Token, s string) bool {
	return t.Kind == Symbol && t.Val == s
}

// errorf makes a problem at t; at a Token the lexer could not read, the
// lexer's problem is the one to report.
func (p *parser) errorf(t Token, kind error, format string, args ...any) *SyntaxError {
	if t.Kind == tokError {
		return p.lexErr
	}
	line, col := Position(p.src, t.Start)
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...), Kind: kind}
}

// refuse records a clause that kshare does not support; parsing goes on so
// that one run reports every such clause.
func (p *parser) refuse(t Token, format string, args ...any) {
	p.errs = append(p.errs, p.errorf(t, ErrUnsupported, format, args...))
}

// invalid records a definition problem (a duplicate column, a bad type
// parameter); parsing goes on, since the text itself reads well.
func (p *parser) invalid(t Token, format string, args ...any) {
	p.errs = append(p.errs, p.errorf(t, ErrInvalidDefinition, format, args...))
}

func (p *parser) expectKeyword(kw, after string) *SyntaxError {
	return p.expect(p.isKeyword(p.peek(), kw), kw, after)
}

func (p *parser) expectSymbol(s, after string) *SyntaxError {
	return p.expect(p.isSymbol(p.peek(), s), "'"+s+"'", after)
}

// expect consumes the next token if it is what was wanted (found), or
// says what came instead of want.
func (p *parser) expect(found bool, want, after string) *SyntaxError {
	t := p.peek()
	if !found {
		return p.errorf(t, ErrSyntax, "expected %s%s, got %s", want, after, describe(t))
	}
	p.advance()
	return nil
}

// acceptKeywords consumes kws if the next tokens are exactly they.
func (p *parser) acceptKeywords(kws ...string) bool {
	for i, kw := range kws {
		if !p.isKeyword(p.peekN(i), kw) {
			return false
		}
	}
	for range kws {
		p.advance()
	}
	return true
}

func (p *parser) atEnd() bool {
	t := p.peek()
	return t.Kind == EOF || p.isSymbol(t, ";")
}

// listNext reads what follows an item of a list: a ',' (more is true) or
// closer, which ends the list; anything else is an error that says what
// the item was.
func (p *parser) listNext(closer, item string) (more bool, err *SyntaxError) {
	t := p.peek()
	switch {
	case p.isSymbol(t, ","):
		p.advance()
		return true, nil
	case p.isSymbol(t, closer):
		p.advance()
		return false, nil
	}
	return false, p.errorf(t, ErrSyntax, "expected ',' or '%s' after %s, got %s", closer, item, describe(t))
}

// skipStatement passes the rest of a statement that was refused.
func (p *parser) skipStatement() *SyntaxError {
	for !p.atEnd() {
		if t := p.advance(); t.Kind == tokError {
			return p.lexErr
		}
	}
	return nil
}

// skipElement passes the rest of a refused column or constraint: up to the
// ',' or ')' that ends it, keeping count of parentheses.
func (p *parser) skipElement() *SyntaxError {
	depth := 0
	for {
		t := p.peek()
		switch {
		case t.Kind == tokError:
			return p.lexErr
		case t.Kind == EOF || p.isSymbol(t, ";"):
			return nil
		case depth == 0 && (p.isSymbol(t, ",") || p.isSymbol(t, ")")):
			return nil
		case p.isSymbol(t, "("):
			depth++
		case p.isSymbol(t, ")"):
			depth--
		}
		p.advance()
	}
}

// skipGroup passes a parenthesized group, nested ones included.
func (p *parser) skipGroup(after string) *SyntaxError {
	if err := p.expectSymbol("(", after); err != nil {
		return err
	}
	depth := 1
	for depth > 0 {
		t := p.advance()
		switch {
		case t.Kind == tokError:
			return p.lexErr
		case t.Kind == EOF:
			return p.errorf(t, ErrSyntax, "expected ')', got %s", describe(t))
		case p.isSymbol(t, "("):
			depth++
		case p.isSymbol(t, ")"):
			depth--
		}
	}
	return nil
}

// statementKinds are the statements Parse reads, by their first words, in
// the order messages list them. A new statement is one entry here and its
// parse method. Where entries share a first word, the words after it
// (then) pick one: the entry whose then the statement goes on with, the
// longest such, wins over one without.
var statementKinds = []struct {
	words []string // first word, upper case, and its synonyms
	then  []string // the words that must follow, upper case
	forms string   // the statement's forms, for messages
	parse func(*parser) (table.Statement, *SyntaxError)
}{
	{[]string{"CREATE"}, nil, "CREATE TABLE, CREATE MODEL", (*parser).create},
	{[]string{"ALTER"}, nil, "ALTER TABLE", (*parser).alter},
	{[]string{"ALTER"}, []string{"SHARE", "GROUP"}, "ALTER SHARE GROUP", (*parser).alterShareGroup},
	{[]string{"DROP"}, nil, "DROP TABLE, DROP MODEL", (*parser).drop},
	{[]string{"DROP"}, []string{"SHARE", "GROUP"}, "DROP SHARE GROUP", (*parser).dropShareGroup},
	{[]string{"SHOW"}, nil, "SHOW TABLES, SHOW CREATE TABLE", (*parser).show},
	{[]string{"SHOW"}, []string{"MODELS"}, "SHOW MODELS", (*parser).showModels},
	{[]string{"SHOW"}, []string{"CREATE", "MODEL"}, "SHOW CREATE MODEL", (*parser).showCreateModel},
	{[]string{"SHOW"}, []string{"FUNCTIONS"}, "SHOW FUNCTIONS", (*parser).showFunctions},
	{[]string{"SHOW"}, []string{"TOPICS"}, "SHOW TOPICS", (*parser).showTopics},
	{[]string{"SHOW"}, []string{"SHARE", "GROUPS"}, "SHOW SHARE GROUPS", (*parser).showShareGroups},
	{[]string{"DESCRIBE", "DESC"}, nil, "DESCRIBE", (*parser).describeTable},
	{[]string{"DESCRIBE", "DESC"}, []string{"MODEL"}, "DESCRIBE MODEL", (*parser).describeModel},
	{[]string{"DESCRIBE", "DESC"}, []string{"TOPIC"}, "DESCRIBE TOPIC", (*parser).describeTopic},
	{[]string{"CREATE"}, []string{"TOPIC"}, "CREATE TOPIC", (*parser).createTopic},
	{[]string{"DROP"}, []string{"TOPIC"}, "DROP TOPIC", (*parser).dropTopic},
	{[]string{"DESCRIBE", "DESC"}, []string{"SHARE", "GROUP"}, "DESCRIBE SHARE GROUP", (*parser).describeShareGroup},
	{[]string{"SELECT"}, nil, "SELECT", (*parser).query},
	{[]string{"INSERT"}, nil, "INSERT INTO", (*parser).insert},
	{[]string{"SHOW"}, []string{"JOBS"}, "SHOW JOBS", (*parser).showJobs},
	{[]string{"STOP"}, []string{"JOB"}, "STOP JOB", (*parser).stopJob},
	{[]string{"SET"}, nil, "SET", (*parser).set},
	{[]string{"RESET"}, nil, "RESET", (*parser).reset},
}

// refusedStatements are the first words of Flink statements kshare does
// not run; Parse names them rather than calling them a syntax error.
var refusedStatements = []string{"UPDATE", "DELETE", "TRUNCATE", "USE", "EXPLAIN", "WITH", "VALUES", "LOAD", "UNLOAD",
	"EXECUTE", "BEGIN", "END", "ADD", "REMOVE", "ANALYZE", "CALL"}

// statements lists the statements for messages.
var statements = func() string {
	forms := make([]string, len(statementKinds))
	for i, k := range statementKinds {
		forms[i] = k.forms
	}
	return strings.Join(forms, ", ")
}()

// Statements lists the forms of the statements Parse reads (CREATE TABLE,
// SHOW TOPICS, ...), in the order messages list them, for help texts.
func Statements() []string { return strings.Split(statements, ", ") }

// IsCommand reports whether word (in any case) starts a statement that is
// not a query: one Parse reads (CREATE, SHOW, SET, ...) or one it names and
// refuses (INSERT, USE, ...). SELECT, WITH and VALUES start queries. The
// query package refuses a command with a pointer to where it runs.
func IsCommand(word string) bool {
	w := strings.ToUpper(word)
	switch w {
	case "SELECT", "WITH", "VALUES":
		return false
	}
	for _, k := range statementKinds {
		if slices.Contains(k.words, w) {
			return true
		}
	}
	return slices.Contains(refusedStatements, w)
}

func (p *parser) statement() (table.Statement, *SyntaxError) {
	t := p.peek()
	if t.Kind != Ident {
		return nil, p.errorf(t, ErrSyntax, "expected a statement (%s), got %s", statements, describe(t))
	}
	w := strings.ToUpper(t.Val)
	var parse func(*parser) (table.Statement, *SyntaxError)
	longest := -1
	for _, k := range statementKinds {
		if slices.Contains(k.words, w) && len(k.then) > longest && p.followedBy(k.then) {
			parse, longest = k.parse, len(k.then)
		}
	}
	if parse != nil {
		return parse(p)
	}
	if slices.Contains(refusedStatements, w) {
		p.refuse(t, "%s is not supported (statements: %s)", w, statements)
		return nil, p.skipStatement()
	}
	return nil, p.errorf(t, ErrSyntax, "expected a statement (%s), got %s", statements, describe(t))
}

func (p *parser) describeTable() (table.Statement, *SyntaxError) {
	p.advance() // DESCRIBE or DESC
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	return &table.Describe{Name: name}, nil
}

// query reads a SELECT to its end and hands on its text, untouched, for
// the query package.
func (p *parser) query() (table.Statement, *SyntaxError) {
	start := p.peek().Start
	for !p.atEnd() {
		if t := p.advance(); t.Kind == tokError {
			return nil, p.lexErr
		}
	}
	return &table.Select{SQL: p.src[start:p.prevEnd]}, nil
}

// insert reads INSERT INTO t SELECT ...; the SELECT's text is handed on,
// untouched, as query's is.
func (p *parser) insert() (table.Statement, *SyntaxError) {
	p.advance() // INSERT
	if t := p.peek(); p.isKeyword(t, "OVERWRITE") {
		p.refuse(t, "INSERT OVERWRITE is not supported: a Kafka topic is appended to, never overwritten; use INSERT INTO")
		return nil, p.skipStatement()
	}
	if err := p.expectKeyword("INTO", " after INSERT"); err != nil {
		return nil, err
	}
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	switch t := p.peek(); {
	case p.isSymbol(t, "("):
		p.refuse(t, "INSERT INTO %s (columns) is not supported: the SELECT gives every column of the table, in order", types.QuoteIdent(name))
		return nil, p.skipStatement()
	case p.isKeyword(t, "VALUES"):
		p.refuse(t, "INSERT INTO ... VALUES is not supported: INSERT INTO %s SELECT ... FROM a table", types.QuoteIdent(name))
		return nil, p.skipStatement()
	case !p.isKeyword(t, "SELECT"):
		return nil, p.errorf(t, ErrSyntax, "expected SELECT after INSERT INTO %s, got %s", types.QuoteIdent(name), describe(t))
	}
	q, err := p.query()
	if err != nil {
		return nil, err
	}
	return &table.Insert{Table: name, Select: q.(*table.Select).SQL}, nil
}

// tableName reads a table's name, plain or in backticks. A qualified name
// (catalog.db.table) is refused, and its last part used so that parsing
// can go on.
func (p *parser) tableName() (string, *SyntaxError) { return p.objectName("table", "orders") }

// objectName reads the name of a table or a model (what), plain or in
// backticks, as tableName says; example is a name for messages.
func (p *parser) objectName(what, example string) (string, *SyntaxError) {
	t := p.peek()
	if t.Kind != Ident && t.Kind != QuotedIdent {
		return "", p.errorf(t, ErrSyntax, "expected a %s name, got %s", what, describe(t))
	}
	p.advance()
	name := t.Val
	if p.isSymbol(p.peek(), ".") {
		p.refuse(t, "qualified %s names ('db.%s') are not supported; name the %s alone ('%s')", what, example, what, example)
		for p.isSymbol(p.peek(), ".") {
			p.advance()
			n := p.peek()
			if n.Kind != Ident && n.Kind != QuotedIdent {
				return "", p.errorf(n, ErrSyntax, "expected a name after '.', got %s", describe(n))
			}
			p.advance()
			name = n.Val
		}
	}
	return name, nil
}

func (p *parser) create() (table.Statement, *SyntaxError) {
	p.advance() // CREATE
	if t := p.peek(); p.isKeyword(t, "OR") {
		p.refuse(t, "CREATE OR REPLACE is not supported: a table is immutable; DROP TABLE it and CREATE TABLE it again")
		return nil, p.skipStatement()
	}
	// Every table and model lives in the session's catalog, so TEMPORARY
	// changes nothing; it is accepted because Flink scripts say it often.
	p.acceptKeywords("TEMPORARY")
	if t := p.peek(); p.isKeyword(t, "MODEL") {
		return p.createModel()
	}
	if t := p.peek(); !p.isKeyword(t, "TABLE") {
		if t.Kind == Ident {
			switch up := strings.ToUpper(t.Val); up {
			case "VIEW", "FUNCTION", "CATALOG", "DATABASE", "SYSTEM":
				p.refuse(t, "CREATE %s is not supported; kshare creates tables and models only", up)
				return nil, p.skipStatement()
			}
		}
		return nil, p.errorf(t, ErrSyntax, "expected TABLE or MODEL after CREATE, got %s", describe(t))
	}
	p.advance()
	def := &table.Definition{}
	if p.acceptKeywords("IF", "NOT", "EXISTS") {
		def.IfNotExists = true
	}
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	def.Name = name
	if err := p.columns(def); err != nil {
		return nil, err
	}
	if err := p.tableClauses(def); err != nil {
		return nil, err
	}
	return &table.CreateTable{Def: def}, nil
}

func (p *parser) columns(def *table.Definition) *SyntaxError {
	t := p.peek()
	if p.isKeyword(t, "LIKE") || p.isKeyword(t, "AS") || p.isKeyword(t, "WITH") {
		return p.errorf(t, ErrSyntax, "expected '(' and the columns of table '%s', got %s", cut(def.Name, options.MaxQuoted), describe(t))
	}
	if err := p.expectSymbol("(", " and the columns of table '"+def.Name+"'"); err != nil {
		return err
	}
	type seen struct{ line, col int }
	first := map[int]seen{} // column index -> where it was declared
	elements := 0
	for {
		t := p.peek()
		if p.isSymbol(t, ")") && elements == 0 {
			p.invalid(t, "table '%s' needs at least one column", cut(def.Name, options.MaxQuoted))
			p.advance()
			return nil
		}
		elements++
		if err := p.element(def, func(c Token, name string) {
			line, col := Position(p.src, c.Start)
			if i := def.Index(name); i >= 0 {
				f := first[i]
				p.invalid(c, "duplicate column '%s' (column names ignore case; the first is at line %d, column %d)", cut(name, options.MaxQuoted), f.line, f.col)
				return
			}
			first[len(def.Schema.Columns)+len(def.Computed)] = seen{line, col}
		}); err != nil {
			return err
		}
		end := p.peek()
		if more, err := p.listNext(")", "a column"); !more {
			if err == nil && len(def.Schema.Columns) == 0 && len(def.Computed) > 0 {
				// Computed columns are computed from the others.
				p.invalid(end, "table '%s' needs at least one physical or METADATA column; its computed columns are computed from those", cut(def.Name, options.MaxQuoted))
			}
			if err == nil {
				// A table constraint may come before the columns it
				// names, so the key is checked once all are read.
				for _, m := range def.KeyProblems() {
					p.invalid(p.keyAt, "%s", m)
				}
			}
			return err
		}
	}
}

// element reads one entry of the column list: a column (physical,
// METADATA or computed), a WATERMARK, or a constraint, which is refused.
// declared is told of each column's name before it is added, to find
// duplicates.
func (p *parser) element(def *table.Definition, declared func(t Token, name string)) *SyntaxError {
	t := p.peek()
	switch {
	case p.isKeyword(t, "WATERMARK") && p.isKeyword(p.peekN(1), "FOR"):
		return p.watermark(def)
	case p.isKeyword(t, "PRIMARY") && p.isKeyword(p.peekN(1), "KEY"),
		p.isKeyword(t, "CONSTRAINT") && isConstraintKind(p, p.peekN(2)):
		return p.primaryKey(def, "")
	}
	if t.Kind != Ident && t.Kind != QuotedIdent {
		return p.errorf(t, ErrSyntax, "expected a column name, got %s", describe(t))
	}
	p.advance()
	if a := p.peek(); p.isKeyword(a, "AS") {
		p.advance()
		col := types.Column{Name: t.Val}
		expr, err := p.expression(a, "AS in computed column '"+cut(t.Val, options.MaxQuoted)+"'")
		if err != nil {
			return err
		}
		col.Expr = expr
		if err := p.columnComment(&col); err != nil {
			return err
		}
		declared(t, col.Name)
		def.Computed = append(def.Computed, table.Computed{Column: col, Pos: len(def.Schema.Columns) + len(def.Computed)})
		return nil
	}
	col := types.Column{Name: t.Val}
	typ, err := p.dataType(0)
	if err != nil {
		return err
	}
	col.Type = typ
	if p.acceptKeywords("METADATA") {
		col.Metadata = true
		if p.acceptKeywords("FROM") {
			k := p.peek()
			if k.Kind != String {
				return p.errorf(k, ErrSyntax, "expected a metadata key in quotes after FROM (FROM 'timestamp'), got %s", describe(k))
			}
			p.advance()
			if k.Val == "" {
				p.invalid(k, "column '%s': the metadata key after FROM must not be empty", cut(col.Name, options.MaxQuoted))
			}
			col.MetadataKey = k.Val
		}
		col.Virtual = p.acceptKeywords("VIRTUAL")
	} else if v := p.peek(); p.isKeyword(v, "VIRTUAL") {
		return p.errorf(v, ErrSyntax, "VIRTUAL applies to metadata columns: write '%s %s METADATA VIRTUAL'", col.Name, typ)
	}
	if c := p.peek(); p.isKeyword(c, "PRIMARY") || p.isKeyword(c, "CONSTRAINT") {
		if err := p.primaryKey(def, col.Name); err != nil {
			return err
		}
	}
	if err := p.columnComment(&col); err != nil {
		return err
	}
	declared(t, col.Name)
	def.Schema.Columns = append(def.Schema.Columns, col)
	return nil
}

// primaryKey reads [CONSTRAINT name] PRIMARY KEY [(columns)] NOT ENFORCED:
// on the column named column when that is not empty (no column list),
// else as a table constraint. Whether the key's columns exist and are
// physical is checked once every column is read (columns).
func (p *parser) primaryKey(def *table.Definition, column string) *SyntaxError {
	start := p.peek()
	k := &table.PrimaryKey{}
	if p.acceptKeywords("CONSTRAINT") {
		n := p.peek()
		if n.Kind != Ident && n.Kind != QuotedIdent {
			return p.errorf(n, ErrSyntax, "expected a constraint name after CONSTRAINT, got %s", describe(n))
		}
		p.advance()
		k.Name = n.Val
	}
	if t := p.peek(); !p.acceptKeywords("PRIMARY", "KEY") {
		if p.isKeyword(t, "UNIQUE") || p.isKeyword(t, "CHECK") || p.isKeyword(t, "FOREIGN") {
			p.refuse(t, "%s constraints are not supported; Flink and kshare have PRIMARY KEY (...) NOT ENFORCED only", strings.ToUpper(t.Val))
			return p.skipElement()
		}
		return p.errorf(t, ErrSyntax, "expected PRIMARY KEY after CONSTRAINT %s, got %s", types.QuoteIdent(cut(k.Name, options.MaxQuoted)), describe(t))
	}
	if column != "" {
		k.Columns = []string{column}
	} else {
		if err := p.expectSymbol("(", " and the key's columns after PRIMARY KEY"); err != nil {
			return err
		}
		for {
			c := p.peek()
			if c.Kind != Ident && c.Kind != QuotedIdent {
				return p.errorf(c, ErrSyntax, "expected a column name in PRIMARY KEY (...), got %s", describe(c))
			}
			p.advance()
			k.Columns = append(k.Columns, c.Val)
			if more, err := p.listNext(")", "a PRIMARY KEY column"); err != nil {
				return err
			} else if !more {
				break
			}
		}
	}
	example := "PRIMARY KEY (" + strings.Join(quoteAll(k.Columns), ", ") + ") NOT ENFORCED"
	if column != "" {
		example = types.QuoteIdent(cut(column, options.MaxQuoted)) + " ... PRIMARY KEY NOT ENFORCED"
	}
	switch e := p.peek(); {
	case p.acceptKeywords("NOT", "ENFORCED"):
	case p.isKeyword(e, "ENFORCED"):
		p.advance()
		p.invalid(e, "PRIMARY KEY ... ENFORCED is not supported: Flink requires NOT ENFORCED, since it does not own the data and never checks that keys are unique; write %s", example)
	default:
		p.invalid(start, "PRIMARY KEY needs NOT ENFORCED: Flink requires it, since it does not own the data and never checks that keys are unique; write %s", example)
	}
	if def.PrimaryKey != nil {
		p.invalid(start, "a table has one PRIMARY KEY; this one is the second")
		return nil
	}
	def.PrimaryKey = k
	p.keyAt = start
	return nil
}

// isConstraintKind reports whether t begins a constraint after CONSTRAINT
// name, so that a column named constraint still reads as a column.
func isConstraintKind(p *parser, t Token) bool {
	for _, kw := range []string{"PRIMARY", "UNIQUE", "CHECK", "FOREIGN"} {
		if p.isKeyword(t, kw) {
			return true
		}
	}
	return false
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = types.QuoteIdent(cut(n, options.MaxQuoted))
	}
	return out
}

// columnComment reads a column's COMMENT 'text', if there is one.
func (p *parser) columnComment(col *types.Column) *SyntaxError {
	if !p.acceptKeywords("COMMENT") {
		return nil
	}
	c := p.peek()
	if c.Kind != String {
		return p.errorf(c, ErrSyntax, "expected a comment in quotes after COMMENT, got %s", describe(c))
	}
	p.advance()
	col.Comment = c.Val
	return nil
}

// expression reads the text of an expression in the column list, up to the
// ',' or ')' that ends its entry or a COMMENT, keeping count of
// parentheses. The query package checks it when the table is bound.
func (p *parser) expression(at Token, what string) (string, *SyntaxError) {
	start, depth := p.peek().Start, 0
	for {
		t := p.peek()
		switch {
		case t.Kind == tokError:
			return "", p.lexErr
		case t.Kind == EOF || p.isSymbol(t, ";"),
			depth == 0 && (p.isSymbol(t, ",") || p.isSymbol(t, ")") || p.isKeyword(t, "COMMENT")):
			if t.Start == start {
				return "", p.errorf(t, ErrSyntax, "expected an expression after %s, got %s", what, describe(t))
			}
			return p.src[start:p.prevEnd], nil
		case p.isSymbol(t, "("):
			depth++
		case p.isSymbol(t, ")"):
			depth--
		}
		p.advance()
	}
}

// watermark reads WATERMARK FOR column AS expr, where expr is the column
// itself or the column minus an INTERVAL: the bounded delay of Flink's
// watermarks, the one strategy kshare has.
func (p *parser) watermark(def *table.Definition) *SyntaxError {
	w := p.advance() // WATERMARK
	p.advance()      // FOR
	c := p.peek()
	if c.Kind != Ident && c.Kind != QuotedIdent {
		return p.errorf(c, ErrSyntax, "expected a column name after WATERMARK FOR, got %s", describe(c))
	}
	p.advance()
	if err := p.expectKeyword("AS", " and the watermark expression after WATERMARK FOR "+types.QuoteIdent(cut(c.Val, options.MaxQuoted))); err != nil {
		return err
	}
	first := p.peek()
	expr, err := p.expression(first, "WATERMARK FOR "+types.QuoteIdent(cut(c.Val, options.MaxQuoted))+" AS")
	if err != nil {
		return err
	}
	if def.Watermark != nil {
		p.invalid(w, "a table has one WATERMARK; this one is the second")
		return nil
	}
	delay, ok := watermarkDelay(c.Val, expr)
	if !ok {
		p.invalid(first, "WATERMARK FOR %s: the expression must be the column itself or the column minus an interval (%s - INTERVAL '5' SECOND), got '%s'",
			types.QuoteIdent(cut(c.Val, options.MaxQuoted)), types.QuoteIdent(cut(c.Val, options.MaxQuoted)), cut(expr, options.MaxQuoted))
	}
	def.Watermark = &table.Watermark{Column: c.Val, Expr: expr, Delay: delay}
	return nil
}

// watermarkDelay reads a watermark expression: col, or col - INTERVAL 'n'
// unit.
func watermarkDelay(col, expr string) (time.Duration, bool) {
	lx := NewLexer(expr)
	var ts []Token
	for {
		t, err := lx.Next()
		if err != nil {
			return 0, false
		}
		if t.Kind == EOF {
			break
		}
		ts = append(ts, t)
	}
	if len(ts) == 0 || (ts[0].Kind != Ident && ts[0].Kind != QuotedIdent) || !strings.EqualFold(ts[0].Val, col) {
		return 0, false
	}
	if len(ts) == 1 {
		return 0, true
	}
	if len(ts) != 5 || ts[1].Kind != Symbol || ts[1].Val != "-" || ts[2].Kind != Ident || !strings.EqualFold(ts[2].Val, "INTERVAL") ||
		ts[3].Kind != String || ts[4].Kind != Ident {
		return 0, false
	}
	d, err := table.ParseInterval(ts[3].Val, ts[4].Val)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

func (p *parser) tableClauses(def *table.Definition) *SyntaxError {
	var comment, with bool
	for !p.atEnd() {
		t := p.peek()
		switch {
		case p.isKeyword(t, "COMMENT"):
			if comment {
				return p.errorf(t, ErrSyntax, "COMMENT is given twice")
			}
			comment = true
			p.advance()
			c := p.peek()
			if c.Kind != String {
				return p.errorf(c, ErrSyntax, "expected a comment in quotes after COMMENT, got %s", describe(c))
			}
			p.advance()
			def.Comment = c.Val
		case p.isKeyword(t, "WITH"):
			if with {
				return p.errorf(t, ErrSyntax, "WITH is given twice")
			}
			with = true
			p.advance()
			kvs, err := p.withList()
			if err != nil {
				return err
			}
			def.Options = kvs
		case p.isKeyword(t, "PARTITIONED"):
			p.advance()
			if err := p.expectKeyword("BY", " after PARTITIONED"); err != nil {
				return err
			}
			p.refuse(t, "PARTITIONED BY is not supported; remove it (a record's Kafka partition is the 'partition' metadata column)")
			if err := p.skipGroup(" after PARTITIONED BY"); err != nil {
				return err
			}
		case p.isKeyword(t, "DISTRIBUTED"):
			p.refuse(t, "DISTRIBUTED BY is not supported; remove it")
			p.advance()
		distributed:
			for !p.atEnd() {
				n := p.peek()
				if p.isKeyword(n, "WITH") || p.isKeyword(n, "COMMENT") || p.isKeyword(n, "LIKE") || p.isKeyword(n, "PARTITIONED") {
					break distributed
				}
				if n.Kind == tokError {
					return p.lexErr
				}
				if p.isSymbol(n, "(") {
					if err := p.skipGroup(""); err != nil {
						return err
					}
					continue
				}
				p.advance()
			}
		case p.isKeyword(t, "LIKE"):
			p.refuse(t, "CREATE TABLE ... LIKE is not supported; write the columns and options out")
			return p.skipStatement()
		case p.isKeyword(t, "AS"):
			p.refuse(t, "CREATE TABLE ... AS SELECT is not supported; create the table, then SELECT from it")
			return p.skipStatement()
		default:
			return p.errorf(t, ErrSyntax, "expected COMMENT, WITH or the end of the statement after the columns of table '%s', got %s", cut(def.Name, options.MaxQuoted), describe(t))
		}
	}
	return nil
}

// withList reads the ('key' = 'value', ...) after WITH (or an ALTER's
// SET): a list, empty but not nil when the parentheses hold nothing.
func (p *parser) withList() ([]options.KV, *SyntaxError) {
	if err := p.expectSymbol("(", " after WITH"); err != nil {
		return nil, err
	}
	kvs := []options.KV{}
	if p.isSymbol(p.peek(), ")") {
		p.advance()
		return kvs, nil
	}
	for {
		k := p.peek()
		if k.Kind != String {
			return nil, p.errorf(k, ErrSyntax, "expected an option key in quotes ('connector'), got %s", describe(k))
		}
		p.advance()
		if err := p.expectSymbol("=", " after option key "+types.QuoteString(cut(k.Val, 40))); err != nil {
			return nil, err
		}
		v := p.peek()
		if v.Kind != String {
			return nil, p.errorf(v, ErrSyntax, "expected the value of option %s in quotes (every value is a string: '4', 'true'), got %s", types.QuoteString(cut(k.Val, 40)), describe(v))
		}
		p.advance()
		kvs = append(kvs, options.KV{Key: k.Val, Value: v.Val})
		if more, err := p.listNext(")", "an option"); !more {
			if err != nil {
				return nil, err
			}
			return kvs, nil
		}
	}
}

// alter reads ALTER TABLE name SET ('key' = 'value', ...) and ALTER TABLE
// name RESET ('key', ...), Flink's statements for a table's options. Other
// changes (columns, renames) are refused: a table's columns are its
// definition, and a new one is a new table.
func (p *parser) alter() (table.Statement, *SyntaxError) {
	if ok, err := p.verbTable("ALTER"); !ok {
		return nil, err
	}
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	st := &table.AlterTable{Name: name}
	t := p.peek()
	switch {
	case p.isKeyword(t, "SET"):
		set, err := p.setList("ALTER TABLE ... SET needs at least one option: SET ('key' = 'value')")
		if err != nil {
			return nil, err
		}
		st.Set = set
	case p.isKeyword(t, "RESET"):
		p.advance()
		if err := p.expectSymbol("(", " after RESET"); err != nil {
			return nil, err
		}
		for {
			k := p.peek()
			if k.Kind != String || k.Val == "" {
				return nil, p.errorf(k, ErrSyntax, "expected an option key in quotes ('scan.on-decode-error'), got %s", describe(k))
			}
			p.advance()
			st.Reset = append(st.Reset, k.Val)
			if n := p.peek(); p.isSymbol(n, ",") {
				p.advance()
				continue
			}
			if err := p.expectSymbol(")", " after the keys of RESET"); err != nil {
				return nil, err
			}
			break
		}
	default:
		if t.Kind == Ident {
			p.refuse(t, "ALTER TABLE ... %s is not supported; ALTER TABLE changes options with SET ('key' = 'value') and RESET ('key'); for other changes DROP TABLE it and CREATE TABLE it again", strings.ToUpper(t.Val))
			return nil, p.skipStatement()
		}
		return nil, p.errorf(t, ErrSyntax, "expected SET or RESET after ALTER TABLE %s, got %s", types.QuoteIdent(cut(name, options.MaxQuoted)), describe(t))
	}
	return st, nil
}

// setList reads SET ('key' = 'value', ...) of an ALTER statement; empty is
// the error for a list with no pair.
func (p *parser) setList(empty string) ([]options.KV, *SyntaxError) {
	t := p.advance() // SET
	kvs, err := p.withList()
	if err != nil {
		return nil, err
	}
	if len(kvs) == 0 {
		return nil, p.errorf(t, ErrSyntax, "%s", empty)
	}
	return kvs, nil
}

// verbTable reads "verb [TEMPORARY] TABLE". When it returns false the
// statement is not about a table: it was refused and passed (err nil, to go
// on) or is a syntax error.
func (p *parser) verbTable(verb string) (bool, *SyntaxError) {
	p.advance() // the verb
	p.acceptKeywords("TEMPORARY")
	t := p.peek()
	if p.isKeyword(t, "TABLE") {
		p.advance()
		return true, nil
	}
	if t.Kind == Ident {
		switch up := strings.ToUpper(t.Val); up {
		case "VIEW", "FUNCTION", "CATALOG", "DATABASE":
			p.refuse(t, "%s %s is not supported; kshare has tables and models only", verb, up)
			return false, p.skipStatement()
		case "MODEL":
			// DROP MODEL is read before verbTable is called.
			p.refuse(t, "%s MODEL is not supported: a model is immutable; DROP MODEL it and CREATE MODEL it again", verb)
			return false, p.skipStatement()
		}
	}
	return false, p.errorf(t, ErrSyntax, "expected TABLE or SHARE GROUP after %s, got %s", verb, describe(t))
}

func (p *parser) drop() (table.Statement, *SyntaxError) {
	if p.isKeyword(p.peekN(1), "MODEL") || (p.isKeyword(p.peekN(1), "TEMPORARY") && p.isKeyword(p.peekN(2), "MODEL")) {
		return p.dropModel()
	}
	if ok, err := p.verbTable("DROP"); !ok {
		return nil, err
	}
	st := &table.DropTable{IfExists: p.acceptKeywords("IF", "EXISTS")}
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	st.Name = name
	return st, nil
}

func (p *parser) showFunctions() (table.Statement, *SyntaxError) {
	p.skipWords(1)
	return &table.ShowFunctions{}, nil
}

func (p *parser) show() (table.Statement, *SyntaxError) {
	p.advance() // SHOW
	t := p.peek()
	switch {
	case p.isKeyword(t, "TABLES"):
		p.advance()
		return &table.ShowTables{}, nil
	case p.isKeyword(t, "CREATE"):
		p.advance()
		if n := p.peek(); !p.isKeyword(n, "TABLE") {
			return nil, p.errorf(n, ErrSyntax, "expected TABLE or MODEL after SHOW CREATE, got %s", describe(n))
		}
		p.advance()
		name, err := p.tableName()
		if err != nil {
			return nil, err
		}
		return &table.ShowCreateTable{Name: name}, nil
	case t.Kind == Ident:
		p.refuse(t, "SHOW %s is not supported (SHOW TABLES, SHOW CREATE TABLE, SHOW MODELS, SHOW CREATE MODEL, SHOW FUNCTIONS, SHOW TOPICS, SHOW SHARE GROUPS are)", strings.ToUpper(t.Val))
		return nil, p.skipStatement()
	}
	return nil, p.errorf(t, ErrSyntax, "expected TABLES, CREATE TABLE, MODELS, CREATE MODEL, FUNCTIONS, TOPICS or SHARE GROUPS after SHOW, got %s", describe(t))
}

// set reads SET 'key' = 'value', the legacy SET key = value (the key and
// value are the text as written), and SET alone, which lists the options.
func (p *parser) set() (table.Statement, *SyntaxError) {
	key, err := p.settingKey("SET")
	if err != nil {
		return nil, err
	}
	if key == "" {
		return &table.SetOption{}, nil
	}
	if err := p.expectSymbol("=", " after the key of SET"); err != nil {
		return nil, err
	}
	v := p.peek()
	if p.atEnd() {
		return nil, p.errorf(v, ErrSyntax, "expected a value after '=', got %s", describe(v))
	}
	if v.Kind == String && p.isEnd(p.peekN(1)) {
		p.advance()
		return &table.SetOption{Key: key, Value: v.Val}, nil
	}
	for !p.atEnd() {
		if t := p.advance(); t.Kind == tokError {
			return nil, p.lexErr
		}
	}
	return &table.SetOption{Key: key, Value: p.src[v.Start:p.prevEnd]}, nil
}

func (p *parser) isEnd(t Token) bool { return t.Kind == EOF || p.isSymbol(t, ";") }

// settingKey reads SET or RESET and the key after it: a quoted one, or the
// text up to '=' (or the end of the statement) as written. The key is ""
// when the statement ends after its word (SET alone lists the settings,
// RESET alone resets them all).
func (p *parser) settingKey(stmt string) (string, *SyntaxError) {
	p.advance() // SET or RESET
	if p.atEnd() {
		return "", nil
	}
	k := p.peek()
	if k.Kind == String {
		if k.Val == "" {
			return "", p.errorf(k, ErrSyntax, "expected an option key after %s, got an empty string", stmt)
		}
		p.advance()
		return k.Val, nil
	}
	if k.Kind == tokError {
		return "", p.lexErr
	}
	end := k.End
	for {
		t := p.peek()
		if p.isEnd(t) || p.isSymbol(t, "=") {
			break
		}
		if t.Kind == tokError {
			return "", p.lexErr
		}
		p.advance()
		end = t.End
	}
	if end == k.End && p.isSymbol(k, "=") {
		return "", p.errorf(k, ErrSyntax, "expected an option key after %s, got '='", stmt)
	}
	return p.src[k.Start:end], nil
}

func (p *parser) reset() (table.Statement, *SyntaxError) {
	key, err := p.settingKey("RESET")
	if err != nil {
		return nil, err
	}
	return &table.Reset{Key: key}, nil
}
