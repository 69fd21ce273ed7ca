package expr

// This file holds the JSON functions, so that a raw STRING table can be
// queried as JSON: JSON_VALUE, JSON_EXISTS and JSON_QUERY with Flink's
// defaults (NULL ON EMPTY, NULL ON ERROR; JSON_EXISTS is FALSE on error).
// Paths are $ followed by .name, ['name'], [index] and wildcard (.* and
// [*]) steps, optionally after lax or strict (without, strict, as in
// Flink); a constant path is read when the query is planned. A path with a
// wildcard finds the JSON array of every value it reaches, as Flink's
// (Jayway's JsonPath) does. JSON_VALUE(s, path RETURNING type) is JSON_VALUE's text read
// as the type by TRY_CAST (the rewrite does that), so a value that is not
// one is NULL, as in Flink.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/types"
)

func init() {
	register(
		&funcDef{name: "JSON_VALUE", args: []argKind{strArg, strArg, anyArg}, min: 2, variadic: true,
			sig:   "JSON_VALUE(STRING, path [RETURNING type] [{NULL | ERROR | DEFAULT expr} ON EMPTY] [{NULL | ERROR | DEFAULT expr} ON ERROR])",
			desc:  "the scalar at the path as text (or as the RETURNING type); NULL (or as ON EMPTY / ON ERROR say) if absent, not a scalar or not JSON",
			build: buildJSONValue},
		&funcDef{name: "JSON_QUERY", args: []argKind{strArg, strArg},
			desc: "the object or array at the path as JSON text; NULL if absent, a scalar or not JSON",
			ret:  nullableType(types.StringType()), prep: compilePath, eval: jsonFunc(jsonQuery)},
		&funcDef{name: "JSON_EXISTS", args: []argKind{strArg, strArg},
			desc: "whether the path finds a value; FALSE if the text is not JSON",
			ret:  fixedType(types.BooleanType()), prep: compilePath, eval: jsonFunc(jsonExists)},
	)
}

// jsonStep is one step of a path: a member name, an array index, or a
// wildcard (.* or [*]: every member of an object, every element of an
// array).
type jsonStep struct {
	name  string
	index int
	isIdx bool
	wild  bool
}

// jsonPath is a parsed path. A path with a wildcard is indefinite: it finds
// the JSON array of every value it reaches, as Jayway's JsonPath (Flink's)
// does.
type jsonPath struct {
	steps []jsonStep
	// lax: the path said lax. Without a mode a path is strict, as in
	// Flink (SqlJsonUtils): an indefinite path whose steps before the
	// first wildcard find nothing finds nothing when strict, and an empty
	// array when lax.
	lax        bool
	indefinite bool
}

// parseJSONPath reads $(.name | .* | ['name'] | [n] | [*])*, after an
// optional mode.
func parseJSONPath(p string) (*jsonPath, error) {
	s := strings.TrimSpace(p)
	path := &jsonPath{}
	for _, mode := range []string{"lax ", "strict "} {
		if strings.HasPrefix(strings.ToLower(s), mode) {
			s = strings.TrimSpace(s[len(mode):])
			path.lax = mode == "lax "
		}
	}
	if !strings.HasPrefix(s, "$") {
		return nil, Errorf(ErrEval, "JSON path %s must start with $", types.QuoteString(p))
	}
	s = s[1:]
	bad := func(why string) (*jsonPath, error) {
		return nil, Errorf(ErrEval, "bad JSON path %s: %s (kshare reads $, .name, ['name'], [index], .* and [*])", types.QuoteString(p), why)
	}
	for s != "" {
		switch {
		case strings.HasPrefix(s, ".*"), strings.HasPrefix(s, "[*]"):
			path.steps = append(path.steps, jsonStep{wild: true})
			path.indefinite = true
			if s[0] == '.' {
				s = s[2:]
			} else {
				s = s[3:]
			}
		case s[0] == '.':
			k := 1
			for k < len(s) && s[k] != '.' && s[k] != '[' {
				k++
			}
			name := s[1:k]
			if name == "" {
				return bad("a member name is missing")
			}
			path.steps = append(path.steps, jsonStep{name: name})
			s = s[k:]
		case strings.HasPrefix(s, "['"):
			end := strings.Index(s[2:], "']")
			if end < 0 {
				return bad("['name'] is not closed")
			}
			path.steps = append(path.steps, jsonStep{name: s[2 : 2+end]})
			s = s[2+end+2:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			n, err := strconv.Atoi(strings.TrimSpace(s[1:max(end, 1)]))
			if end < 0 || err != nil || n < 0 {
				return bad("an index is not a number of 0 or more, or *")
			}
			path.steps = append(path.steps, jsonStep{index: n, isIdx: true})
			s = s[end+1:]
		default:
			return bad("unexpected " + strconv.Quote(s[:1]))
		}
	}
	return path, nil
}

func compilePath(c *call) error {
	lit, ok := c.args[1].(*literal)
	if !ok || !lit.val.IsValid() {
		return nil
	}
	p, err := parseJSONPath(lit.val.String())
	c.state = p
	return err
}

// find follows the path through doc; ok is false if it finds nothing or doc
// is not JSON. An indefinite path finds the array of what it reaches, which
// may be empty: a step after a wildcard that finds nothing drops that
// branch only.
func (p *jsonPath) find(doc []byte) (json.RawMessage, bool) {
	if !json.Valid(doc) {
		return nil, false
	}
	cur := []json.RawMessage{doc}
	wild := false
	for _, st := range p.steps {
		var next []json.RawMessage
		for _, v := range cur {
			next = st.apply(v, next)
		}
		if len(next) == 0 && !wild && !st.wild {
			if p.lax && p.indefinite {
				return json.RawMessage("[]"), true
			}
			return nil, false
		}
		wild = wild || st.wild
		cur = next
	}
	if !p.indefinite {
		return cur[0], true
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for k, v := range cur {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return b.Bytes(), true
}

// apply appends what the step finds in v to out.
func (st jsonStep) apply(v json.RawMessage, out []json.RawMessage) []json.RawMessage {
	switch {
	case st.wild:
		return appendChildren(v, out)
	case st.isIdx:
		var arr []json.RawMessage
		if json.Unmarshal(v, &arr) != nil || st.index >= len(arr) {
			return out
		}
		return append(out, arr[st.index])
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil {
		return out
	}
	if m, ok := obj[st.name]; ok {
		out = append(out, m)
	}
	return out
}

// appendChildren appends the members of an object (in their order) or the
// elements of an array; a scalar has none.
func appendChildren(v json.RawMessage, out []json.RawMessage) []json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(v))
	open, err := dec.Token()
	if err != nil {
		return out
	}
	d, ok := open.(json.Delim)
	if !ok {
		return out
	}
	for dec.More() {
		if d == '{' {
			if _, err := dec.Token(); err != nil { // the member's name
				return out
			}
		}
		var m json.RawMessage
		if dec.Decode(&m) != nil {
			return out
		}
		out = append(out, m)
	}
	return out
}

// jsonFunc runs f on each row's document and path.
func jsonFunc[B array.Builder](f func(b B, v json.RawMessage, found bool)) func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *EvalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		docs, paths := as[0].(*array.String), as[1].(*array.String)
		fixed, _ := c.state.(*jsonPath)
		return rowsOf(ec, c, as, func(b B, i int) error {
			p := fixed
			if p == nil {
				var err error
				if p, err = parseJSONPath(paths.Value(i)); err != nil {
					return err
				}
			}
			v, ok := p.find([]byte(docs.Value(i)))
			f(b, v, ok)
			return nil
		})
	}
}

func jsonQuery(b *array.StringBuilder, v json.RawMessage, found bool) {
	v = bytes.TrimSpace(v)
	if !found || len(v) == 0 || v[0] != '{' && v[0] != '[' {
		b.AppendNull()
		return
	}
	var out bytes.Buffer
	_ = json.Compact(&out, v)
	b.BinaryBuilder.Append(out.Bytes())
}

func jsonExists(b *array.BooleanBuilder, _ json.RawMessage, found bool) {
	b.Append(found)
}

// jsonValue is JSON_VALUE: the scalar at the path, read as its type (STRING
// unless RETURNING says); where there is none, what its ON EMPTY and ON
// ERROR clauses say, as Flink decides between them (SqlJsonUtils): a JSON
// null, and in lax mode a missing value, text that is not JSON or one that
// is not a scalar, is empty; in strict mode (a path without a mode) those
// are errors, and so is a value that is not of the RETURNING type.
type jsonValue struct {
	exprBase
	doc, path       Node
	onEmpty, onErr  jsonBehavior
	empties, errors Node // the DEFAULTs as planned, of type t
}

// jsonBehavior is one ON EMPTY or ON ERROR clause.
type jsonBehavior struct {
	what string // NULL, ERROR or DEFAULT
	def  Node   // DEFAULT's expression, as written
}

func (n *jsonValue) Operands() []Node {
	ops := []Node{n.doc, n.path}
	for _, d := range []Node{n.empties, n.errors} {
		if d != nil {
			ops = append(ops, d)
		}
	}
	return ops
}

func buildJSONValue(p *Compiler, args []Node, src string) (Node, error) {
	n := &jsonValue{exprBase: exprBase{t: types.StringType(), src: src}, doc: args[0], path: args[1],
		onEmpty: jsonBehavior{what: "NULL"}, onErr: jsonBehavior{what: "NULL"}}
	if !strArg.ok(n.path.Type()) {
		return nil, Errorf(ErrType, "argument 2 of JSON_VALUE must be STRING, got %s (%s)", TypeName(n.path.Type()), src)
	}
	if lit, ok := n.path.(*literal); ok && lit.val.IsValid() {
		if _, err := parseJSONPath(lit.val.String()); err != nil {
			return nil, err
		}
	}
	rest := args[2:]
	for len(rest) > 0 {
		lit, ok := rest[0].(*literal)
		clause := ""
		if ok && lit.val.IsValid() {
			clause = lit.val.String()
		}
		on, what, _ := strings.Cut(strings.TrimPrefix(clause, "ON "), " ")
		if len(rest) < 2 || on != "EMPTY" && on != "ERROR" {
			return nil, Errorf(ErrSyntax, "JSON_VALUE takes a string and a path, then RETURNING type, ON EMPTY and ON ERROR clauses (%s)", src)
		}
		b := jsonBehavior{what: what}
		if what == "DEFAULT" {
			b.def = rest[1]
		}
		if on == "EMPTY" {
			n.onEmpty = b
		} else {
			n.onErr = b
		}
		rest = rest[2:]
	}
	return n, n.returning(types.StringType())
}

// returning makes t the result type (RETURNING t), the DEFAULTs cast to it.
func (n *jsonValue) returning(t *types.DataType) error {
	n.t = t.WithNotNull(false)
	n.empties, n.errors = nil, nil
	for _, c := range []struct {
		b   jsonBehavior
		out *Node
		on  string
	}{{n.onEmpty, &n.empties, "EMPTY"}, {n.onErr, &n.errors, "ERROR"}} {
		if c.b.def == nil {
			continue
		}
		if c.b.def.Type() != nil && !castable(c.b.def.Type(), n.t) {
			return Errorf(ErrType, "the DEFAULT ON %s of JSON_VALUE is %s (%s), which cannot be cast to %s (%s)", c.on, TypeName(c.b.def.Type()), c.b.def.Text(), TypeName(n.t), n.src)
		}
		d, err := convert(c.b.def, n.t)
		if err != nil {
			return err
		}
		*c.out = d
	}
	return nil
}

// jsonOutcome is what JSON_VALUE found on a row: a value, or why none.
type jsonOutcome byte

const (
	jsonFound     jsonOutcome = iota
	jsonNull                  // JSON null: empty
	jsonMissing               // the path finds nothing: empty when lax, else an error
	jsonNotJSON               // likewise
	jsonNotScalar             // likewise
	jsonBadType               // not of the RETURNING type: an error
)

// empty reports whether an outcome is ON EMPTY's (else ON ERROR's) in a
// path of that mode.
func (o jsonOutcome) empty(lax bool) bool {
	return o == jsonNull || lax && o != jsonBadType
}

func (o jsonOutcome) String() string {
	return [...]string{"", "the value is JSON null", "the path finds nothing", "the text is not JSON",
		"the value is an object or an array", "the value is not of the RETURNING type"}[o]
}

func (n *jsonValue) Eval(ec *EvalCtx, b arrow.RecordBatch) (arrow.Array, error) {
	as, err := EvalArgs(ec, b, n.doc, n.path)
	if err != nil {
		return nil, err
	}
	defer ReleaseAll(as)
	docs, paths := as[0].(*array.String), as[1].(*array.String)
	rows := int(b.NumRows())
	outcome, lax := make([]jsonOutcome, rows), make([]bool, rows)
	text := array.NewStringBuilder(ec.mem)
	defer text.Release()
	var fixed *jsonPath
	if lit, ok := n.path.(*literal); ok && lit.val.IsValid() {
		fixed, _ = parseJSONPath(lit.val.String())
	}
	for i := 0; i < rows; i++ {
		if docs.IsNull(i) || paths.IsNull(i) {
			text.AppendNull()
			continue
		}
		p := fixed
		if p == nil {
			if p, err = parseJSONPath(paths.Value(i)); err != nil {
				return nil, err
			}
		}
		doc := []byte(docs.Value(i))
		v, found := p.find(doc)
		v = bytes.TrimSpace(v)
		switch {
		case !found && !json.Valid(doc):
			outcome[i] = jsonNotJSON
		case !found:
			outcome[i] = jsonMissing
		case string(v) == "null":
			outcome[i] = jsonNull
		case v[0] == '{' || v[0] == '[':
			outcome[i] = jsonNotScalar
		}
		lax[i] = p.lax
		switch {
		case outcome[i] != jsonFound:
			text.AppendNull()
		case v[0] == '"':
			var s string
			_ = json.Unmarshal(v, &s) // valid: the document was
			text.Append(s)
		default:
			text.BinaryBuilder.Append(v) // a number or a boolean, as written
		}
	}
	ta := text.NewArray()
	defer ta.Release()
	vals, err := castArray(ec, ta, types.StringType(), n.t, true)
	if err != nil {
		return nil, err
	}
	for i := 0; i < rows; i++ {
		if ta.IsValid(i) && vals.IsNull(i) {
			outcome[i] = jsonBadType
		}
	}
	return n.settle(ec, b, vals, outcome, lax)
}

// settle puts the result together: the values found (vals, which it takes
// over), and where there were none what the clauses say.
func (n *jsonValue) settle(ec *EvalCtx, b arrow.RecordBatch, vals arrow.Array, outcome []jsonOutcome, lax []bool) (arrow.Array, error) {
	asm := newAssembly(len(outcome))
	defer asm.release()
	all := asm.all(len(outcome))
	found, rest := asm.split(all, whole, func(i int) bool { return outcome[i] == jsonFound && vals.IsValid(i) })
	asm.add(vals, whole, found, found)
	for _, c := range []struct {
		b     jsonBehavior
		def   Node
		empty bool
		on    string
	}{{n.onEmpty, n.empties, true, "EMPTY"}, {n.onErr, n.errors, false, "ERROR"}} {
		take, _ := asm.split(rest, subset, func(j int) bool {
			o := outcome[rest[j]]
			return o != jsonFound && o.empty(lax[rest[j]]) == c.empty
		})
		if len(take) == 0 {
			continue
		}
		switch c.b.what {
		case "ERROR":
			return nil, Errorf(ErrEval, "%s: %s (ERROR ON %s)", n.src, outcome[take[0]], c.on)
		case "DEFAULT":
			a, sp, err := evalRows(ec, b, c.def, take)
			if err != nil {
				return nil, err
			}
			asm.add(a, sp, take, take)
		}
	}
	return asm.result(ec, n.t.ArrowType())
}
