package table

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kshare/kshare/options"
)

// maxTypeDepth bounds the nesting of ARRAY, MAP and ROW types: deep enough
// for any schema a person writes, shallow enough that a hostile script
// cannot exhaust the stack.
const maxTypeDepth = 1000

// Parse reads a script of statements separated by ';' (a ';' inside quotes,
// backticks or comments does not count). It returns each statement typed:
// *CreateTable, *DropTable, *ShowTables, *Describe, *ShowCreateTable,
// *Select (the text of a SELECT, untouched), *SetOption and *Reset.
//
// On error it returns no statements and a *SyntaxError, or SyntaxErrors
// when it passed several clauses that Flink accepts and kshare does not
// before it stopped; each says where (line and column) and what was
// expected, and wraps ErrSyntax, ErrUnsupported or ErrInvalidDefinition.
func Parse(src string) ([]Statement, error) {
	p := &parser{lx: lexer{src: src}, src: src}
	var out []Statement
	for {
		for p.isSymbol(p.peek(), ";") {
			p.advance()
		}
		t := p.peek()
		if t.kind == tokEOF {
			break
		}
		if t.kind == tokError {
			return nil, p.fatal(t.err)
		}
		st, err := p.statement()
		if err != nil {
			return nil, p.fatal(err)
		}
		if st != nil {
			out = append(out, st)
		}
		if t := p.peek(); t.kind != tokEOF && !p.isSymbol(t, ";") {
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

const tokError tokKind = -1

type parser struct {
	lx   lexer
	src  string
	buf  []token
	errs SyntaxErrors // unsupported clauses passed so far
	// prevEnd is where the last token consumed ends: the end of a SELECT's
	// or a SET value's text, comments after it left out.
	prevEnd int
	// lexErr is the lexer's error, carried by a tokError token so that it
	// is reported only when the parser reaches it.
	lexErr *SyntaxError
}

// fatal adds err to the problems collected so far and returns them all.
func (p *parser) fatal(err *SyntaxError) error {
	if len(p.errs) == 0 {
		return err
	}
	return append(p.errs, err)
}

func (p *parser) peekN(n int) token {
	for len(p.buf) <= n {
		if p.lexErr != nil {
			p.buf = append(p.buf, token{kind: tokError, start: len(p.src), end: len(p.src)})
			continue
		}
		t, err := p.lx.next()
		if err != nil {
			p.lexErr = err.(*SyntaxError)
			t = token{kind: tokError, start: len(p.src), end: len(p.src)}
		}
		p.buf = append(p.buf, t)
	}
	t := p.buf[n]
	if t.kind == tokError {
		t.err = p.lexErr
	}
	return t
}

func (p *parser) peek() token { return p.peekN(0) }

func (p *parser) advance() token {
	t := p.peek()
	if t.kind != tokEOF && t.kind != tokError {
		p.buf = p.buf[1:]
		p.prevEnd = t.end
	}
	return t
}

func (p *parser) isKeyword(t token, kw string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.val, kw)
}

func (p *parser) isSymbol(t token, s string) bool {
	return t.kind == tokSymbol && t.val == s
}

// errorf makes a problem at t; at a token the lexer could not read, the
// lexer's problem is the one to report.
func (p *parser) errorf(t token, kind error, format string, args ...any) *SyntaxError {
	if t.kind == tokError {
		return t.err
	}
	line, col := position(p.src, t.start)
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...), Kind: kind}
}

// refuse records a clause that kshare does not support; parsing goes on so
// that one run reports every such clause.
func (p *parser) refuse(t token, format string, args ...any) {
	p.errs = append(p.errs, p.errorf(t, ErrUnsupported, format, args...))
}

// invalid records a definition problem (a duplicate column, a bad type
// parameter); parsing goes on, since the text itself reads well.
func (p *parser) invalid(t token, format string, args ...any) {
	p.errs = append(p.errs, p.errorf(t, ErrInvalidDefinition, format, args...))
}

func (p *parser) expectKeyword(kw, after string) *SyntaxError {
	t := p.peek()
	if !p.isKeyword(t, kw) {
		return p.errorf(t, ErrSyntax, "expected %s%s, got %s", kw, after, describe(t))
	}
	p.advance()
	return nil
}

func (p *parser) expectSymbol(s, after string) *SyntaxError {
	t := p.peek()
	if !p.isSymbol(t, s) {
		return p.errorf(t, ErrSyntax, "expected '%s'%s, got %s", s, after, describe(t))
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
	return t.kind == tokEOF || p.isSymbol(t, ";")
}

// skipStatement passes the rest of a statement that was refused.
func (p *parser) skipStatement() *SyntaxError {
	for !p.atEnd() {
		if t := p.advance(); t.kind == tokError {
			return t.err
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
		case t.kind == tokError:
			return t.err
		case t.kind == tokEOF || p.isSymbol(t, ";"):
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
		case t.kind == tokError:
			return t.err
		case t.kind == tokEOF:
			return p.errorf(t, ErrSyntax, "expected ')', got %s", describe(t))
		case p.isSymbol(t, "("):
			depth++
		case p.isSymbol(t, ")"):
			depth--
		}
	}
	return nil
}

const statements = "CREATE TABLE, ALTER TABLE, DROP TABLE, SHOW TABLES, SHOW CREATE TABLE, DESCRIBE, SELECT, SET, RESET"

func (p *parser) statement() (Statement, *SyntaxError) {
	t := p.peek()
	if t.kind != tokIdent {
		return nil, p.errorf(t, ErrSyntax, "expected a statement (%s), got %s", statements, describe(t))
	}
	switch strings.ToUpper(t.val) {
	case "CREATE":
		return p.create()
	case "DROP":
		return p.drop()
	case "SHOW":
		return p.show()
	case "DESCRIBE", "DESC":
		p.advance()
		name, err := p.tableName()
		if err != nil {
			return nil, err
		}
		return &Describe{Name: name}, nil
	case "SELECT":
		for !p.atEnd() {
			if t := p.advance(); t.kind == tokError {
				return nil, t.err
			}
		}
		return &Select{SQL: p.src[t.start:p.prevEnd]}, nil
	case "SET":
		return p.set()
	case "RESET":
		return p.reset()
	case "ALTER":
		return p.alter()
	case "INSERT", "UPDATE", "DELETE", "TRUNCATE", "USE", "EXPLAIN", "WITH", "VALUES", "LOAD", "UNLOAD",
		"EXECUTE", "BEGIN", "END", "ADD", "REMOVE", "ANALYZE", "CALL":
		p.refuse(t, "%s is not supported (statements: %s)", strings.ToUpper(t.val), statements)
		return nil, p.skipStatement()
	}
	return nil, p.errorf(t, ErrSyntax, "expected a statement (%s), got %s", statements, describe(t))
}

// tableName reads a table's name, plain or in backticks. A qualified name
// (catalog.db.table) is refused, and its last part used so that parsing
// can go on.
func (p *parser) tableName() (string, *SyntaxError) {
	t := p.peek()
	if t.kind != tokIdent && t.kind != tokQIdent {
		return "", p.errorf(t, ErrSyntax, "expected a table name, got %s", describe(t))
	}
	p.advance()
	name := t.val
	if p.isSymbol(p.peek(), ".") {
		p.refuse(t, "qualified table names ('db.orders') are not supported; name the table alone ('orders')")
		for p.isSymbol(p.peek(), ".") {
			p.advance()
			n := p.peek()
			if n.kind != tokIdent && n.kind != tokQIdent {
				return "", p.errorf(n, ErrSyntax, "expected a name after '.', got %s", describe(n))
			}
			p.advance()
			name = n.val
		}
	}
	return name, nil
}

func (p *parser) create() (Statement, *SyntaxError) {
	p.advance() // CREATE
	if t := p.peek(); p.isKeyword(t, "OR") {
		p.refuse(t, "CREATE OR REPLACE is not supported: a table is immutable; DROP TABLE it and CREATE TABLE it again")
		return nil, p.skipStatement()
	}
	// Every table lives in the session's catalog, so TEMPORARY changes
	// nothing; it is accepted because Flink scripts say it often.
	p.acceptKeywords("TEMPORARY")
	if t := p.peek(); !p.isKeyword(t, "TABLE") {
		if t.kind == tokIdent {
			switch up := strings.ToUpper(t.val); up {
			case "VIEW", "FUNCTION", "CATALOG", "DATABASE", "MODEL", "SYSTEM":
				p.refuse(t, "CREATE %s is not supported; kshare creates tables only", up)
				return nil, p.skipStatement()
			}
		}
		return nil, p.errorf(t, ErrSyntax, "expected TABLE after CREATE, got %s", describe(t))
	}
	p.advance()
	def := &Definition{}
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
	return &CreateTable{Def: def}, nil
}

func (p *parser) columns(def *Definition) *SyntaxError {
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
		if err := p.element(def, func(c token, name string) {
			line, col := position(p.src, c.start)
			if i := def.Schema.Index(name); i >= 0 {
				f := first[i]
				p.invalid(c, "duplicate column '%s' (column names ignore case; the first is at line %d, column %d)", cut(name, options.MaxQuoted), f.line, f.col)
				return
			}
			first[len(def.Schema.Columns)] = seen{line, col}
		}); err != nil {
			return err
		}
		t = p.peek()
		if p.isSymbol(t, ",") {
			p.advance()
			continue
		}
		if p.isSymbol(t, ")") {
			p.advance()
			return nil
		}
		return p.errorf(t, ErrSyntax, "expected ',' or ')' after a column, got %s", describe(t))
	}
}

// element reads one entry of the column list: a column, or a constraint or
// WATERMARK, which are refused. declared is told of each column's name
// before it is added, to find duplicates.
func (p *parser) element(def *Definition, declared func(t token, name string)) *SyntaxError {
	t := p.peek()
	switch {
	case p.isKeyword(t, "WATERMARK") && p.isKeyword(p.peekN(1), "FOR"):
		p.refuse(t, "WATERMARK is not supported: kshare has no event time; remove the WATERMARK clause")
		return p.skipElement()
	case p.isKeyword(t, "PRIMARY") && p.isKeyword(p.peekN(1), "KEY"),
		p.isKeyword(t, "CONSTRAINT") && p.isKeyword(p.peekN(2), "PRIMARY"):
		p.refuse(t, "PRIMARY KEY ... NOT ENFORCED is not supported: a share group is a queue and has no upsert key; remove the constraint")
		return p.skipElement()
	}
	if t.kind != tokIdent && t.kind != tokQIdent {
		return p.errorf(t, ErrSyntax, "expected a column name, got %s", describe(t))
	}
	p.advance()
	if p.isKeyword(p.peek(), "AS") {
		p.refuse(t, "computed column '%s' (AS expression) is not supported; declare a physical or METADATA column and compute in the SELECT", cut(t.val, options.MaxQuoted))
		return p.skipElement()
	}
	col := Column{Name: t.val}
	typ, err := p.dataType(0)
	if err != nil {
		return err
	}
	col.Type = typ
	if p.acceptKeywords("METADATA") {
		col.Metadata = true
		if p.acceptKeywords("FROM") {
			k := p.peek()
			if k.kind != tokString {
				return p.errorf(k, ErrSyntax, "expected a metadata key in quotes after FROM (FROM 'timestamp'), got %s", describe(k))
			}
			p.advance()
			if k.val == "" {
				p.invalid(k, "column '%s': the metadata key after FROM must not be empty", cut(col.Name, options.MaxQuoted))
			}
			col.MetadataKey = k.val
		}
		col.Virtual = p.acceptKeywords("VIRTUAL")
	} else if v := p.peek(); p.isKeyword(v, "VIRTUAL") {
		return p.errorf(v, ErrSyntax, "VIRTUAL applies to metadata columns: write '%s %s METADATA VIRTUAL'", col.Name, typ)
	}
	if c := p.peek(); p.isKeyword(c, "PRIMARY") || p.isKeyword(c, "CONSTRAINT") {
		p.refuse(c, "PRIMARY KEY ... NOT ENFORCED is not supported: a share group is a queue and has no upsert key; remove the constraint")
		return p.skipElement()
	}
	if p.acceptKeywords("COMMENT") {
		c := p.peek()
		if c.kind != tokString {
			return p.errorf(c, ErrSyntax, "expected a comment in quotes after COMMENT, got %s", describe(c))
		}
		p.advance()
		col.Comment = c.val
	}
	declared(t, col.Name)
	def.Schema.Columns = append(def.Schema.Columns, col)
	return nil
}

func (p *parser) tableClauses(def *Definition) *SyntaxError {
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
			if c.kind != tokString {
				return p.errorf(c, ErrSyntax, "expected a comment in quotes after COMMENT, got %s", describe(c))
			}
			p.advance()
			def.Comment = c.val
		case p.isKeyword(t, "WITH"):
			if with {
				return p.errorf(t, ErrSyntax, "WITH is given twice")
			}
			with = true
			p.advance()
			if err := p.withOptions(def); err != nil {
				return err
			}
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
				if n.kind == tokError {
					return n.err
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

func (p *parser) withOptions(def *Definition) *SyntaxError {
	if err := p.expectSymbol("(", " after WITH"); err != nil {
		return err
	}
	def.Options = []options.KV{}
	if p.isSymbol(p.peek(), ")") {
		p.advance()
		return nil
	}
	for {
		k := p.peek()
		if k.kind != tokString {
			return p.errorf(k, ErrSyntax, "expected an option key in quotes ('connector'), got %s", describe(k))
		}
		p.advance()
		if err := p.expectSymbol("=", " after option key "+QuoteString(cut(k.val, 40))); err != nil {
			return err
		}
		v := p.peek()
		if v.kind != tokString {
			return p.errorf(v, ErrSyntax, "expected the value of option %s in quotes (every value is a string: '4', 'true'), got %s", QuoteString(cut(k.val, 40)), describe(v))
		}
		p.advance()
		def.Options = append(def.Options, options.KV{Key: k.val, Value: v.val})
		t := p.peek()
		if p.isSymbol(t, ",") {
			p.advance()
			continue
		}
		if p.isSymbol(t, ")") {
			p.advance()
			return nil
		}
		return p.errorf(t, ErrSyntax, "expected ',' or ')' after an option, got %s", describe(t))
	}
}

// alter reads ALTER TABLE name SET ('key' = 'value', ...) and ALTER TABLE
// name RESET ('key', ...), Flink's statements for a table's options. Other
// changes (columns, renames) are refused: a table's columns are its
// definition, and a new one is a new table.
func (p *parser) alter() (Statement, *SyntaxError) {
	if ok, err := p.verbTable("ALTER"); !ok {
		return nil, err
	}
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	st := &AlterTable{Name: name}
	t := p.peek()
	switch {
	case p.isKeyword(t, "SET"):
		p.advance()
		def := &Definition{}
		if err := p.withOptions(def); err != nil {
			return nil, err
		}
		if len(def.Options) == 0 {
			return nil, p.errorf(t, ErrSyntax, "ALTER TABLE ... SET needs at least one option: SET ('key' = 'value')")
		}
		st.Set = def.Options
	case p.isKeyword(t, "RESET"):
		p.advance()
		if err := p.expectSymbol("(", " after RESET"); err != nil {
			return nil, err
		}
		for {
			k := p.peek()
			if k.kind != tokString || k.val == "" {
				return nil, p.errorf(k, ErrSyntax, "expected an option key in quotes ('scan.on-decode-error'), got %s", describe(k))
			}
			p.advance()
			st.Reset = append(st.Reset, k.val)
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
		if t.kind == tokIdent {
			p.refuse(t, "ALTER TABLE ... %s is not supported; ALTER TABLE changes options with SET ('key' = 'value') and RESET ('key'); for other changes DROP TABLE it and CREATE TABLE it again", strings.ToUpper(t.val))
			return nil, p.skipStatement()
		}
		return nil, p.errorf(t, ErrSyntax, "expected SET or RESET after ALTER TABLE %s, got %s", QuoteIdent(cut(name, options.MaxQuoted)), describe(t))
	}
	return st, nil
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
	if t.kind == tokIdent {
		switch up := strings.ToUpper(t.val); up {
		case "VIEW", "FUNCTION", "CATALOG", "DATABASE", "MODEL":
			p.refuse(t, "%s %s is not supported; kshare has tables only", verb, up)
			return false, p.skipStatement()
		}
	}
	return false, p.errorf(t, ErrSyntax, "expected TABLE after %s, got %s", verb, describe(t))
}

func (p *parser) drop() (Statement, *SyntaxError) {
	if ok, err := p.verbTable("DROP"); !ok {
		return nil, err
	}
	st := &DropTable{IfExists: p.acceptKeywords("IF", "EXISTS")}
	name, err := p.tableName()
	if err != nil {
		return nil, err
	}
	st.Name = name
	return st, nil
}

func (p *parser) show() (Statement, *SyntaxError) {
	p.advance() // SHOW
	t := p.peek()
	switch {
	case p.isKeyword(t, "TABLES"):
		p.advance()
		return &ShowTables{}, nil
	case p.isKeyword(t, "CREATE"):
		p.advance()
		if n := p.peek(); !p.isKeyword(n, "TABLE") {
			return nil, p.errorf(n, ErrSyntax, "expected TABLE after SHOW CREATE, got %s", describe(n))
		}
		p.advance()
		name, err := p.tableName()
		if err != nil {
			return nil, err
		}
		return &ShowCreateTable{Name: name}, nil
	case t.kind == tokIdent:
		p.refuse(t, "SHOW %s is not supported (SHOW TABLES, SHOW CREATE TABLE are)", strings.ToUpper(t.val))
		return nil, p.skipStatement()
	}
	return nil, p.errorf(t, ErrSyntax, "expected TABLES or CREATE TABLE after SHOW, got %s", describe(t))
}

// set reads SET 'key' = 'value', the legacy SET key = value (the key and
// value are the text as written), and SET alone, which lists the options.
func (p *parser) set() (Statement, *SyntaxError) {
	p.advance() // SET
	if p.atEnd() {
		return &SetOption{}, nil
	}
	key, err := p.settingKey("SET")
	if err != nil {
		return nil, err
	}
	if err := p.expectSymbol("=", " after the key of SET"); err != nil {
		return nil, err
	}
	v := p.peek()
	if p.atEnd() {
		return nil, p.errorf(v, ErrSyntax, "expected a value after '=', got %s", describe(v))
	}
	if v.kind == tokString && p.isEnd(p.peekN(1)) {
		p.advance()
		return &SetOption{Key: key, Value: v.val}, nil
	}
	for !p.atEnd() {
		if t := p.advance(); t.kind == tokError {
			return nil, t.err
		}
	}
	return &SetOption{Key: key, Value: p.src[v.start:p.prevEnd]}, nil
}

func (p *parser) isEnd(t token) bool { return t.kind == tokEOF || p.isSymbol(t, ";") }

// settingKey reads the key of SET or RESET: a quoted one, or the text up to
// '=' (or the end of the statement) as written.
func (p *parser) settingKey(stmt string) (string, *SyntaxError) {
	k := p.peek()
	if k.kind == tokString {
		if k.val == "" {
			return "", p.errorf(k, ErrSyntax, "expected an option key after %s, got an empty string", stmt)
		}
		p.advance()
		return k.val, nil
	}
	if k.kind == tokError {
		return "", k.err
	}
	end := k.end
	for {
		t := p.peek()
		if p.isEnd(t) || p.isSymbol(t, "=") {
			break
		}
		if t.kind == tokError {
			return "", t.err
		}
		p.advance()
		end = t.end
	}
	if end == k.end && p.isSymbol(k, "=") {
		return "", p.errorf(k, ErrSyntax, "expected an option key after %s, got '='", stmt)
	}
	return p.src[k.start:end], nil
}

func (p *parser) reset() (Statement, *SyntaxError) {
	p.advance() // RESET
	if p.atEnd() {
		return &Reset{}, nil
	}
	key, err := p.settingKey("RESET")
	if err != nil {
		return nil, err
	}
	return &Reset{Key: key}, nil
}

// typeNames are the type names Parse knows, for "unknown type" messages.
var typeNames = []string{
	"ARRAY", "BIGINT", "BINARY", "BOOLEAN", "BYTES", "CHAR", "DATE", "DEC", "DECIMAL", "DOUBLE",
	"FLOAT", "INT", "INTEGER", "MAP", "NUMERIC", "ROW", "SMALLINT", "STRING", "TIME", "TIMESTAMP",
	"TIMESTAMP_LTZ", "TINYINT", "VARBINARY", "VARCHAR",
}

// dataType reads a Flink SQL type, NOT NULL or NULL included.
func (p *parser) dataType(depth int) (*DataType, *SyntaxError) {
	t := p.peek()
	if depth > maxTypeDepth {
		return nil, p.errorf(t, ErrInvalidDefinition, "type nested deeper than %d levels", maxTypeDepth)
	}
	if t.kind != tokIdent {
		return nil, p.errorf(t, ErrSyntax, "expected a type, got %s", describe(t))
	}
	p.advance()
	var dt *DataType
	var err *SyntaxError
	switch name := strings.ToUpper(t.val); name {
	case "CHAR", "CHARACTER":
		dt = &DataType{Kind: Char}
		dt.Length, err = p.optInt(1)
	case "VARCHAR":
		dt = &DataType{Kind: Varchar}
		dt.Length, err = p.optInt(1)
	case "STRING":
		dt = StringType()
	case "BOOLEAN":
		dt = BooleanType()
	case "BINARY":
		dt = &DataType{Kind: Binary}
		dt.Length, err = p.optInt(1)
	case "VARBINARY":
		dt = &DataType{Kind: Varbinary}
		dt.Length, err = p.optInt(1)
	case "BYTES":
		dt = BytesType()
	case "DECIMAL", "DEC", "NUMERIC":
		dt = &DataType{Kind: Decimal, Precision: DefaultDecimalPrecision}
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
		dt = &DataType{Kind: TinyInt}
	case "SMALLINT":
		dt = &DataType{Kind: SmallInt}
	case "INT", "INTEGER":
		dt = IntType()
	case "BIGINT":
		dt = BigIntType()
	case "FLOAT":
		dt = &DataType{Kind: Float}
	case "DOUBLE":
		p.acceptKeywords("PRECISION")
		dt = DoubleType()
	case "DATE":
		dt = &DataType{Kind: Date}
	case "TIME":
		dt = &DataType{Kind: Time}
		dt.Precision, err = p.optInt(DefaultTimePrecision)
		if err == nil && p.isKeyword(p.peek(), "WITH") && p.isKeyword(p.peekN(1), "TIME") {
			return nil, p.errorf(p.peek(), ErrUnsupported, "TIME WITH TIME ZONE is not supported (nor by Flink); use TIME(p)")
		}
		p.acceptKeywords("WITHOUT", "TIME", "ZONE")
	case "TIMESTAMP":
		dt = &DataType{Kind: Timestamp}
		if dt.Precision, err = p.optInt(DefaultTimestampPrecision); err != nil {
			return nil, err
		}
		switch {
		case p.acceptKeywords("WITHOUT", "TIME", "ZONE"):
		case p.acceptKeywords("WITH", "LOCAL", "TIME", "ZONE"):
			dt.Kind = TimestampLTZ
		case p.isKeyword(p.peek(), "WITH") && p.isKeyword(p.peekN(1), "TIME"):
			return nil, p.errorf(p.peek(), ErrUnsupported, "TIMESTAMP WITH TIME ZONE is not supported (nor by Flink); use TIMESTAMP_LTZ(p) for an instant or TIMESTAMP(p) for a wall-clock time")
		}
	case "TIMESTAMP_LTZ":
		dt = &DataType{Kind: TimestampLTZ}
		dt.Precision, err = p.optInt(DefaultTimestampPrecision)
	case "ARRAY":
		dt = &DataType{Kind: Array}
		if err = p.expectSymbol("<", " after ARRAY (ARRAY<INT>)"); err != nil {
			return nil, err
		}
		if dt.Elem, err = p.dataType(depth + 1); err != nil {
			return nil, err
		}
		err = p.expectSymbol(">", " to close ARRAY<")
	case "MAP":
		dt = &DataType{Kind: Map}
		if err = p.expectSymbol("<", " after MAP (MAP<STRING, INT>)"); err != nil {
			return nil, err
		}
		if dt.Key, err = p.dataType(depth + 1); err != nil {
			return nil, err
		}
		if err = p.expectSymbol(",", " between the key and value types of MAP"); err != nil {
			return nil, err
		}
		if dt.Value, err = p.dataType(depth + 1); err != nil {
			return nil, err
		}
		err = p.expectSymbol(">", " to close MAP<")
	case "ROW":
		dt = &DataType{Kind: Row}
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
	if dt.Kind != Row {
		if e := dt.checkParams(); e != nil {
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
func (p *parser) rowFields(dt *DataType, depth int) *SyntaxError {
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
	dt.Fields = []Field{}
	if p.isSymbol(p.peek(), closer) {
		p.advance()
		return nil
	}
	for {
		n := p.peek()
		if n.kind != tokIdent && n.kind != tokQIdent {
			return p.errorf(n, ErrSyntax, "expected a field name in ROW, got %s", describe(n))
		}
		p.advance()
		if a := p.peek(); p.isSymbol(a, ",") || p.isSymbol(a, closer) {
			return p.errorf(n, ErrSyntax, "expected a field name and its type in ROW (ROW<`name` %s>), got only %s", cut(n.val, 40), describe(n))
		}
		for _, f := range dt.Fields {
			if strings.EqualFold(f.Name, n.val) {
				p.invalid(n, "duplicate field '%s' in ROW (field names ignore case)", cut(n.val, options.MaxQuoted))
				break
			}
		}
		ft, err := p.dataType(depth + 1)
		if err != nil {
			return err
		}
		f := Field{Name: n.val, Type: ft}
		if p.acceptKeywords("COMMENT") && p.peek().kind != tokString {
			c := p.peek()
			return p.errorf(c, ErrSyntax, "expected a description in quotes after COMMENT, got %s", describe(c))
		}
		if c := p.peek(); c.kind == tokString {
			p.advance()
			f.Comment = c.val
		}
		dt.Fields = append(dt.Fields, f)
		t := p.peek()
		if p.isSymbol(t, ",") {
			p.advance()
			continue
		}
		if p.isSymbol(t, closer) {
			p.advance()
			return nil
		}
		return p.errorf(t, ErrSyntax, "expected ',' or '%s' after a field of ROW, got %s", closer, describe(t))
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
	if t.kind != tokNumber {
		return 0, p.errorf(t, ErrSyntax, "expected a number, got %s", describe(t))
	}
	p.advance()
	n, err := strconv.Atoi(t.val)
	if err != nil || n > MaxLength {
		return 0, p.errorf(t, ErrInvalidDefinition, "number %s is too large (at most %d)", cut(t.val, 40), MaxLength)
	}
	return n, nil
}

// cut shortens s to at most n bytes for messages (options.CutTo).
func cut(s string, n int) string { return options.CutTo(s, n) }
