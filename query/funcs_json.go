package query

// This file holds the JSON functions, so that a raw STRING table can be
// queried as JSON: JSON_VALUE, JSON_EXISTS and JSON_QUERY with Flink's
// defaults (lax mode, NULL ON EMPTY, NULL ON ERROR; JSON_EXISTS is FALSE on
// error). Paths are $ followed by .name, ['name'] and [index] steps,
// optionally after lax or strict; a constant path is read when the query
// is planned. JSON_VALUE(s, path RETURNING type) is JSON_VALUE's text read
// as the type by TRY_CAST (the rewrite does that), so a value that is not
// one is NULL, as in Flink.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/table"
)

func init() {
	register(
		&funcDef{name: "JSON_VALUE", args: []argKind{strArg, strArg}, sig: "JSON_VALUE(STRING, path [RETURNING type])",
			desc: "the scalar at the path as text (or as the RETURNING type); NULL if absent, not a scalar or not JSON",
			ret:  nullableType(table.StringType()), prep: compilePath, eval: jsonFunc(jsonValue)},
		&funcDef{name: "JSON_QUERY", args: []argKind{strArg, strArg},
			desc: "the object or array at the path as JSON text; NULL if absent, a scalar or not JSON",
			ret:  nullableType(table.StringType()), prep: compilePath, eval: jsonFunc(jsonQuery)},
		&funcDef{name: "JSON_EXISTS", args: []argKind{strArg, strArg},
			desc: "whether the path finds a value; FALSE if the text is not JSON",
			ret:  fixedType(table.BooleanType()), prep: compilePath, eval: jsonFunc(jsonExists)},
	)
}

// jsonStep is one step of a path: a member name, or an array index.
type jsonStep struct {
	name  string
	index int
	isIdx bool
}

type jsonPath []jsonStep

// parseJSONPath reads $(.name | ['name'] | [n])*, after an optional mode.
func parseJSONPath(p string) (jsonPath, error) {
	s := strings.TrimSpace(p)
	for _, mode := range []string{"lax ", "strict "} {
		if strings.HasPrefix(strings.ToLower(s), mode) {
			s = strings.TrimSpace(s[len(mode):])
		}
	}
	if !strings.HasPrefix(s, "$") {
		return nil, errorf(ErrEval, "JSON path %s must start with $", table.QuoteString(p))
	}
	s = s[1:]
	var path jsonPath
	bad := func(why string) (jsonPath, error) {
		return nil, errorf(ErrEval, "bad JSON path %s: %s (kshare reads $, .name, ['name'] and [index])", table.QuoteString(p), why)
	}
	for s != "" {
		switch {
		case s[0] == '.':
			k := 1
			for k < len(s) && s[k] != '.' && s[k] != '[' {
				k++
			}
			name := s[1:k]
			if name == "" || name == "*" {
				return bad("a member name is missing or a wildcard")
			}
			path = append(path, jsonStep{name: name})
			s = s[k:]
		case strings.HasPrefix(s, "['"):
			end := strings.Index(s[2:], "']")
			if end < 0 {
				return bad("['name'] is not closed")
			}
			path = append(path, jsonStep{name: s[2 : 2+end]})
			s = s[2+end+2:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			n, err := strconv.Atoi(strings.TrimSpace(s[1:max(end, 1)]))
			if end < 0 || err != nil || n < 0 {
				return bad("an index is not a number of 0 or more")
			}
			path = append(path, jsonStep{index: n, isIdx: true})
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

// find follows the path through doc; ok is false if a step finds nothing
// or doc is not JSON.
func (p jsonPath) find(doc []byte) (json.RawMessage, bool) {
	cur := json.RawMessage(doc)
	if !json.Valid(doc) {
		return nil, false
	}
	for _, st := range p {
		if st.isIdx {
			var arr []json.RawMessage
			if json.Unmarshal(cur, &arr) != nil || st.index >= len(arr) {
				return nil, false
			}
			cur = arr[st.index]
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		v, ok := obj[st.name]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// jsonFunc runs f on each row's document and path.
func jsonFunc[B array.Builder](f func(b B, v json.RawMessage, found bool)) func(ec *evalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
	return func(ec *evalCtx, c *call, as []arrow.Array) (arrow.Array, error) {
		docs, paths := as[0].(*array.String), as[1].(*array.String)
		fixed, _ := c.state.(jsonPath)
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

func jsonValue(b *array.StringBuilder, v json.RawMessage, found bool) {
	if !found {
		b.AppendNull()
		return
	}
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0 || v[0] == '{' || v[0] == '[' || string(v) == "null":
		b.AppendNull()
	case v[0] == '"':
		var s string
		_ = json.Unmarshal(v, &s) // valid: the document was
		b.Append(s)
	default:
		b.BinaryBuilder.Append(v) // a number or a boolean, as written
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
