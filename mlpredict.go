package kshare

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kshare/kshare/mlpredict"
	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// This file reads SELECT ... FROM ML_PREDICT(TABLE t, MODEL m,
// DESCRIPTOR(c, ...) [, [CONFIG =>] MAP['key', 'value', ...]]), as Flink
// SQL writes a call of a model: the engine checks the call and has the
// planner read a table of t's columns followed by m's OUTPUT columns,
// whose source (package mlpredict) passes t's rows through the model. The
// planner sees an ordinary table, as with PEEK.

// predictCall is one ML_PREDICT as written: where it is in the statement
// (the offsets of its first and last byte) and its arguments.
type predictCall struct {
	start, end int
	table      string
	model      string
	features   []string
	config     []options.KV
}

// predictUsage is the shape every syntax error of ML_PREDICT points to.
const predictUsage = "write ML_PREDICT(TABLE <table>, MODEL <model>, DESCRIPTOR(<column>, ...)[, MAP['<key>', '<value>', ...]])"

func predictSyntax(format string, args ...any) error {
	return &query.Error{Kind: query.ErrSyntax, Msg: "ML_PREDICT: " + fmt.Sprintf(format, args...) + "; " + predictUsage}
}

// predictSpan finds ML_PREDICT( in a SELECT and reads its arguments; nil
// when the statement has none. A statement with two is refused: a query
// reads one table.
func predictSpan(sql string) (*predictCall, error) {
	toks := tokens(sql)
	var call *predictCall
	for i := 0; i+1 < len(toks); i++ {
		if !toks[i].IsWord("ML_PREDICT") || !toks[i+1].IsSymbol("(") {
			continue
		}
		if call != nil {
			return nil, &query.Error{Kind: query.ErrUnsupported, Msg: "ML_PREDICT: a query calls one model over one table; this one has two ML_PREDICT calls"}
		}
		c, n, err := readPredict(toks[i:])
		if err != nil {
			return nil, err
		}
		// TABLE(ML_PREDICT(...)), as Flink's window functions are written,
		// is the same call.
		if j := i + n; i >= 2 && toks[i-2].IsWord("TABLE") && toks[i-1].IsSymbol("(") && j < len(toks) && toks[j].IsSymbol(")") {
			c.start, c.end = toks[i-2].Start, toks[j].End
		}
		call = c
	}
	return call, nil
}

// tokens are the tokens of sql, comments left out, up to the first the
// lexer cannot read (the planner reports that one).
func tokens(sql string) []parse.Token {
	lx := parse.NewLexer(sql)
	var toks []parse.Token
	for {
		t, err := lx.Next()
		if err != nil || t.Kind == parse.EOF {
			return toks
		}
		if t.Kind != parse.Comment {
			toks = append(toks, t)
		}
	}
}

// readPredict reads the call that toks start with (ML_PREDICT, '('): n is
// the number of its tokens.
func readPredict(toks []parse.Token) (c *predictCall, n int, err error) {
	c = &predictCall{start: toks[0].Start}
	p := &tokenReader{toks: toks, i: 2}
	name := func(word string) (string, error) {
		if !p.word(word) {
			return "", predictSyntax("expected %s <name>, got %s", word, p.describe())
		}
		t, ok := p.ident()
		if !ok {
			return "", predictSyntax("expected the name after %s, got %s", word, p.describe())
		}
		return t, nil
	}
	if c.table, err = name("TABLE"); err != nil {
		return nil, 0, err
	}
	if !p.symbol(",") {
		return nil, 0, predictSyntax("expected ',' after TABLE %s, got %s", types.QuoteIdent(c.table), p.describe())
	}
	if c.model, err = name("MODEL"); err != nil {
		return nil, 0, err
	}
	if !p.symbol(",") || !p.word("DESCRIPTOR") || !p.symbol("(") {
		return nil, 0, predictSyntax("expected DESCRIPTOR(<column>, ...) after MODEL %s, got %s", types.QuoteIdent(c.model), p.describe())
	}
	for {
		col, ok := p.ident()
		if !ok {
			return nil, 0, predictSyntax("expected a column name in DESCRIPTOR, got %s", p.describe())
		}
		c.features = append(c.features, col)
		if p.symbol(")") {
			break
		}
		if !p.symbol(",") {
			return nil, 0, predictSyntax("expected ',' or ')' in DESCRIPTOR, got %s", p.describe())
		}
	}
	if p.symbol(",") {
		if p.word("CONFIG") && !(p.symbol("=") && p.symbol(">")) {
			return nil, 0, predictSyntax("expected => after CONFIG, got %s", p.describe())
		}
		if c.config, err = readMap(p); err != nil {
			return nil, 0, err
		}
	}
	if !p.symbol(")") {
		return nil, 0, predictSyntax("expected ')' to end ML_PREDICT, got %s", p.describe())
	}
	c.end = p.toks[p.i-1].End
	return c, p.i, nil
}

// readMap reads MAP['key', 'value', ...].
func readMap(p *tokenReader) ([]options.KV, error) {
	if !p.word("MAP") || !p.symbol("[") {
		return nil, predictSyntax("expected MAP['<key>', '<value>', ...] after DESCRIPTOR(...), got %s", p.describe())
	}
	var vals []string
	for {
		if p.i < len(p.toks) && p.toks[p.i].Kind == parse.String {
			vals = append(vals, p.toks[p.i].Val)
			p.i++
		} else {
			return nil, predictSyntax("expected a string literal in MAP[...], got %s", p.describe())
		}
		if p.symbol("]") {
			break
		}
		if !p.symbol(",") {
			return nil, predictSyntax("expected ',' or ']' in MAP[...], got %s", p.describe())
		}
	}
	if len(vals)%2 != 0 {
		return nil, predictSyntax("MAP[...] has %d entries; it takes pairs of a key and its value", len(vals))
	}
	var kvs []options.KV
	for i := 0; i < len(vals); i += 2 {
		kvs = append(kvs, options.KV{Key: vals[i], Value: vals[i+1]})
	}
	return kvs, nil
}

// tokenReader steps through tokens.
type tokenReader struct {
	toks []parse.Token
	i    int
}

func (p *tokenReader) word(w string) bool {
	if p.i < len(p.toks) && p.toks[p.i].IsWord(w) {
		p.i++
		return true
	}
	return false
}

func (p *tokenReader) symbol(s string) bool {
	if p.i < len(p.toks) && p.toks[p.i].IsSymbol(s) {
		p.i++
		return true
	}
	return false
}

func (p *tokenReader) ident() (string, bool) {
	if p.i < len(p.toks) && (p.toks[p.i].Kind == parse.Ident || p.toks[p.i].Kind == parse.QuotedIdent) {
		p.i++
		return p.toks[p.i-1].Val, true
	}
	return "", false
}

// describe names the token at hand for messages.
func (p *tokenReader) describe() string {
	if p.i >= len(p.toks) {
		return "the end of the statement"
	}
	return fmt.Sprintf("'%s'", options.Cut(p.toks[p.i].Val))
}

// flinkPredictKeys are keys of Flink's ML_PREDICT configuration that
// kshare has no use for, and why.
var flinkPredictKeys = map[string]string{
	"async":       "kshare always calls the model asynchronously",
	"output-mode": "kshare hands out results in the order their calls finish",
}

// predictTable checks call against the catalog and returns the table the
// planner reads in its place: the input table's columns followed by the
// model's OUTPUT columns, read through the model.
func (e *Engine) predictTable(call *predictCall) (*table.Table, error) {
	t, err := e.cat.Lookup(call.table)
	if err != nil {
		return nil, fmt.Errorf("ML_PREDICT: %w", err)
	}
	tname := options.Cut(t.Name())
	if t.Source == nil {
		return nil, fmt.Errorf("ML_PREDICT: table '%s' (connector '%s') cannot be read", tname, t.Bound.Connector.Name())
	}
	m, err := e.cat.LookupModel(call.model)
	if err != nil {
		return nil, fmt.Errorf("ML_PREDICT: %w", err)
	}
	mb, ok := m.Bound.(*model.Bound)
	if !ok {
		return nil, fmt.Errorf("ML_PREDICT: model '%s' was not bound by a model provider registry, so it cannot be called", options.Cut(m.Name()))
	}
	mname := options.Cut(m.Name())
	def := m.Def()
	if len(call.features) != len(def.Input) {
		return nil, &query.Error{Kind: query.ErrType, Msg: fmt.Sprintf("ML_PREDICT: DESCRIPTOR names %s of table '%s', and model '%s' takes %s (%s); name a column of the table for each, in this order",
			count(len(call.features), "column"), tname, mname, count(len(def.Input), "INPUT column"), columnList(def.Input))}
	}
	src := t.Bound.Def.Schema.Columns
	features := make([]int, len(call.features))
	for i, f := range call.features {
		k := slices.IndexFunc(src, func(c types.Column) bool { return strings.EqualFold(c.Name, f) })
		if k < 0 {
			if j := t.Bound.Def.Index(f); j >= 0 {
				return nil, &query.Error{Kind: query.ErrUnsupported, Msg: fmt.Sprintf("ML_PREDICT: DESCRIPTOR column '%s' is a computed column of table '%s'; a model reads the table's physical and metadata columns",
					options.Cut(f), tname)}
			}
			return nil, &query.Error{Kind: query.ErrUnknownColumn, Msg: fmt.Sprintf("ML_PREDICT: DESCRIPTOR column '%s' is not a column of table '%s' (its columns: %s)",
				options.Cut(f), tname, columnList(t.Bound.Def.Columns()))}
		}
		in := def.Input[i]
		if got := src[k].Type; !got.WithNotNull(false).Equal(in.Type.WithNotNull(false)) {
			want := in.Type.WithNotNull(false)
			return nil, &query.Error{Kind: query.ErrType, Msg: fmt.Sprintf("ML_PREDICT: DESCRIPTOR column %d ('%s' of table '%s') is %s, and model '%s' takes INPUT column '%s' as %s; name a column of type %s there, or declare the model's INPUT column '%s' as %s",
				i+1, options.Cut(src[k].Name), tname, got.WithNotNull(false), mname, options.Cut(in.Name), want, want, options.Cut(in.Name), got.WithNotNull(false))}
		}
		features[i] = k
	}
	all := t.Bound.Def.Columns()
	for _, out := range def.Output {
		if slices.ContainsFunc(all, func(c types.Column) bool { return strings.EqualFold(c.Name, out.Name) }) {
			return nil, &query.Error{Kind: query.ErrUnsupported, Msg: fmt.Sprintf("ML_PREDICT: OUTPUT column '%s' of model '%s' has the name of a column of table '%s'; name the model's OUTPUT column otherwise",
				options.Cut(out.Name), mname, tname)}
		}
	}
	if len(call.config) > 0 {
		if mb, err = e.withRuntime(mb, call.config); err != nil {
			return nil, err
		}
	}
	d := t.Bound.Def.Clone()
	d.Schema.Columns = append(d.Schema.Columns, def.Output...)
	b := *t.Bound
	b.Def = d
	return &table.Table{Bound: &b, Source: &mlpredict.Source{Table: t.Name(), Input: t.Source, Model: mb, Features: features}}, nil
}

// withRuntime is mb with the options of ML_PREDICT's MAP: the keys every
// model takes (model.Common: how calls are bounded), checked as CREATE
// MODEL checks them. The provider's own keys say what the model is, and
// stay as created.
func (e *Engine) withRuntime(mb *model.Bound, config []options.KV) (*model.Bound, error) {
	def := mb.Def.Clone()
	name := options.Cut(def.Name)
	seen := map[string]bool{}
	for _, kv := range config {
		o, ok := model.Common.Lookup(kv.Key)
		if !ok {
			msg := fmt.Sprintf("ML_PREDICT: MAP key '%s' is not an option a query may set for model '%s'; the MAP sets '%s'",
				options.Cut(kv.Key), name, strings.Join(model.Common.Keys(), "', '"))
			if why, ok := flinkPredictKeys[kv.Key]; ok {
				msg += "; leave '" + kv.Key + "' out: " + why
			} else if _, ok := mb.Provider.Options().Lookup(kv.Key); ok {
				msg += fmt.Sprintf("; '%s' is part of the model's definition: DROP MODEL %s and CREATE it again to change it", options.Cut(kv.Key), types.QuoteIdent(def.Name))
			}
			return nil, &query.Error{Kind: query.ErrUnsupported, Msg: msg}
		}
		if seen[o.Key] {
			return nil, predictSyntax("MAP key '%s' is given twice", o.Key)
		}
		seen[o.Key] = true
		def.Options = slices.DeleteFunc(def.Options, func(old options.KV) bool {
			c, ok := model.Common.Lookup(old.Key)
			return ok && c.Key == o.Key
		})
		def.Options = append(def.Options, options.KV{Key: o.Key, Value: kv.Value})
	}
	b, err := e.models.Bind(def)
	if err != nil {
		return nil, fmt.Errorf("ML_PREDICT MAP: %w", err)
	}
	return b, nil
}

// count is "1 column", "2 columns".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
