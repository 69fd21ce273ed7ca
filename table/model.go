package table

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// This file holds models as the catalog keeps them: CREATE MODEL's
// definition, the interface through which a provider checks one, and the
// catalog's models beside its tables. Package model has the providers and
// calls them; this package cannot import it (model reads table's types).

// KeyProvider is the key of a model's WITH clause that names its provider,
// as 'connector' names a table's connector.
const KeyProvider = "provider"

// ModelDefinition is a model as CREATE MODEL declares it: the columns it
// reads (Input, the features ML_PREDICT's DESCRIPTOR picks) and the columns
// it fills (Output), and its provider's options.
type ModelDefinition struct {
	Name        string
	IfNotExists bool
	Input       []types.Column
	Output      []types.Column
	Comment     string
	// Options are the WITH clause's pairs, in the order written.
	Options []options.KV
}

// Option returns the value of the WITH clause key (exact match) and whether
// it was given.
func (d *ModelDefinition) Option(key string) (string, bool) {
	for _, kv := range d.Options {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// DDL is the canonical CREATE MODEL text of d, which parses back to an
// equal definition (IF NOT EXISTS left out). The value of every key for
// which mask returns true is written as Masked; a nil mask shows every
// value.
func (d *ModelDefinition) DDL(mask func(key string) bool) string {
	var b strings.Builder
	d.write(&b, false, mask)
	return b.String()
}

// String is the DDL of d with the values of keys whose names look secret
// (options.LooksSecret, 'api-key' among them) masked, so that a definition
// can be logged without knowing its provider.
func (d *ModelDefinition) String() string { return d.DDL(options.LooksSecret) }

func (d *ModelDefinition) write(b *strings.Builder, ifNotExists bool, mask func(string) bool) {
	b.WriteString("CREATE MODEL ")
	if ifNotExists {
		b.WriteString("IF NOT EXISTS ")
	}
	b.WriteString(types.QuoteIdent(d.Name))
	for _, part := range []struct {
		word string
		cols []types.Column
	}{{"INPUT", d.Input}, {"OUTPUT", d.Output}} {
		b.WriteString("\n" + part.word + " (\n")
		for i, c := range part.cols {
			b.WriteString("  " + c.String())
			if i < len(part.cols)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString(")")
	}
	if d.Comment != "" {
		b.WriteString("\nCOMMENT " + types.QuoteString(d.Comment))
	}
	writeWith(b, d.Options, mask)
}

// Clone returns a copy of d that shares nothing mutable with it.
func (d *ModelDefinition) Clone() *ModelDefinition {
	c := *d
	c.Input = slices.Clone(d.Input)
	c.Output = slices.Clone(d.Output)
	c.Options = slices.Clone(d.Options)
	return &c
}

// Equal reports whether d and o define the same model: name, columns,
// comment, options in order, and IF NOT EXISTS.
func (d *ModelDefinition) Equal(o *ModelDefinition) bool {
	return d.Name == o.Name && d.IfNotExists == o.IfNotExists && d.Comment == o.Comment &&
		slices.EqualFunc(d.Input, o.Input, types.Column.Equal) && slices.EqualFunc(d.Output, o.Output, types.Column.Equal) &&
		slices.Equal(d.Options, o.Options)
}

// Validate checks what parse.Parse checks of a model definition built in
// Go: a name, at least one INPUT and one OUTPUT column, names unique
// (ignoring case) within each list, every type well formed, and plain
// columns only (a type and a comment: no METADATA, no expression). Every
// problem wraps ErrInvalidDefinition.
func (d *ModelDefinition) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, options.Errorf(ErrInvalidDefinition, "", format, args...))
	}
	if d.Name == "" {
		bad("the model has no name")
	}
	for _, part := range []struct {
		word string
		cols []types.Column
	}{{"INPUT", d.Input}, {"OUTPUT", d.Output}} {
		if len(part.cols) == 0 {
			bad("model '%s' needs at least one %s column", options.Cut(d.Name), part.word)
		}
		s := types.Schema{Columns: part.cols}
		for i, c := range part.cols {
			switch {
			case c.Name == "":
				bad("%s column %d has no name", part.word, i+1)
			case s.Index(c.Name) < i:
				bad("duplicate %s column '%s' (column names ignore case)", part.word, options.Cut(c.Name))
			}
			if c.Type == nil {
				bad("%s column '%s' has no type", part.word, options.Cut(c.Name))
			} else if err := c.Type.Validate(); err != nil {
				bad("%s column '%s': %v", part.word, options.Cut(c.Name), err)
			}
			if c.Metadata || c.MetadataKey != "" || c.Virtual || c.Expr != "" {
				bad("%s column '%s' must be a plain column (a name, a type and a COMMENT)", part.word, options.Cut(c.Name))
			}
		}
	}
	return errors.Join(errs...)
}

// A ModelBinder checks model definitions against their providers, with
// no I/O: the provider that 'provider' names, its options, and whether it
// can read the INPUT columns and fill the OUTPUT ones. Package model's
// Registry is one; a Catalog is given one with SetModelBinder.
type ModelBinder interface {
	// BindModel checks def and returns it bound; the error names the
	// model and lists every problem found.
	BindModel(def *ModelDefinition) (BoundModel, error)
}

// A BoundModel is a model definition that its provider accepted. Package
// model's *model.Bound is one; ML_PREDICT (package mlpredict) opens it
// to predict.
type BoundModel interface {
	// Definition is the definition bound. It must not be changed.
	Definition() *ModelDefinition
	// Secret reports whether key is a secret option of the model's
	// provider (or a key that no provider declares and that looks like
	// one): its value is never shown.
	Secret(key string) bool
}

// Model is a model in the catalog. A Model is immutable.
type Model struct {
	Bound BoundModel
}

// Name is the model's name as declared.
func (m *Model) Name() string { return m.Bound.Definition().Name }

// Def is the model's definition.
func (m *Model) Def() *ModelDefinition { return m.Bound.Definition() }

// DDL is the model's canonical CREATE MODEL text with the values of its
// secret options masked.
func (m *Model) DDL() string { return m.Def().DDL(m.Bound.Secret) }

// Catalog errors about models; each message names the model.
var (
	// ErrModelExists is returned by CREATE MODEL for a name already taken.
	ErrModelExists = errors.New("model already exists")
	// ErrNoModel is returned by DROP MODEL, DESCRIBE MODEL, SHOW CREATE
	// MODEL and LookupModel for a name not taken.
	ErrNoModel = errors.New("no such model")
	// ErrNoModelBinder is returned by CREATE MODEL in a catalog without a
	// ModelBinder.
	ErrNoModelBinder = errors.New("no model providers")
)

// SetModelBinder gives the catalog the binder that CREATE MODEL checks
// definitions with. Call it before the catalog is used: kshare.New gives
// every engine's catalog package model's default registry.
func (c *Catalog) SetModelBinder(b ModelBinder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.binder = b
}

// LookupModel finds a model by name, ignoring case. An absent model is an
// error wrapping ErrNoModel.
func (c *Catalog) LookupModel(name string) (*Model, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if m, ok := c.models[foldName(name)]; ok {
		return m, nil
	}
	return nil, c.noModel(name)
}

// noModel needs c.mu held.
func (c *Catalog) noModel(name string) error {
	var names []string
	for _, m := range c.models {
		names = append(names, m.Name())
	}
	return notFound(ErrNoModel, "model", name, names)
}

// Models returns the models sorted by name, ignoring case.
func (c *Catalog) Models() []*Model {
	c.mu.RLock()
	out := make([]*Model, 0, len(c.models))
	for _, m := range c.models {
		out = append(out, m)
	}
	c.mu.RUnlock()
	sortByName(out, (*Model).Name)
	return out
}

// createModel binds st's definition and adds it, as CREATE TABLE adds a
// table: an existing model is left alone with IF NOT EXISTS, without
// checking the new definition, as in Flink.
func (c *Catalog) createModel(st *CreateModel) (*Result, error) {
	def := st.Def
	exists := func(name string) *Result {
		return &Result{Message: fmt.Sprintf("model '%s' already exists; nothing changed", options.Cut(name))}
	}
	if def.IfNotExists {
		if m, err := c.LookupModel(def.Name); err == nil {
			return exists(m.Name()), nil
		}
	}
	c.mu.RLock()
	binder := c.binder
	c.mu.RUnlock()
	if binder == nil {
		return nil, fmt.Errorf("%w: model '%s' cannot be checked; this catalog has no ModelBinder (package model's registry: kshare.New gives it)", ErrNoModelBinder, options.Cut(def.Name))
	}
	// The catalog keeps its own copy, so that the caller's later changes
	// cannot reach it.
	def = def.Clone()
	def.IfNotExists = false
	b, err := binder.BindModel(def)
	if err != nil {
		return nil, err
	}
	key := foldName(def.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.models[key]; ok {
		if st.Def.IfNotExists {
			return exists(old.Name()), nil
		}
		return nil, options.Errorf(ErrModelExists, old.Name(), "model '%s' already exists; DROP MODEL %s and CREATE it again to change it",
			options.Cut(old.Name()), options.Cut(types.QuoteIdent(old.Name())))
	}
	c.models[key] = &Model{Bound: b}
	return &Result{Message: fmt.Sprintf("model '%s' created", options.Cut(def.Name))}, nil
}

func (c *Catalog) dropModel(st *DropModel) (*Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := foldName(st.Name)
	m, ok := c.models[key]
	switch {
	case !ok && st.IfExists:
		return &Result{Message: fmt.Sprintf("model '%s' does not exist; nothing dropped", options.Cut(st.Name))}, nil
	case !ok:
		return nil, c.noModel(st.Name)
	}
	delete(c.models, key)
	return &Result{Message: fmt.Sprintf("model '%s' dropped", options.Cut(m.Name()))}, nil
}

// DescribeModelColumns are the columns of DESCRIBE MODEL's result.
var DescribeModelColumns = []string{"name", "type", "null", "is input", "comment"}

// execModel runs the model statements; ok is false for any other.
func (c *Catalog) execModel(st Statement) (res *Result, ok bool, err error) {
	switch st := st.(type) {
	case *CreateModel:
		res, err = c.createModel(st)
	case *DropModel:
		res, err = c.dropModel(st)
	case *ShowModels:
		res = &Result{Columns: []string{"model name"}, Rows: [][]string{}}
		for _, m := range c.Models() {
			res.Rows = append(res.Rows, []string{m.Name()})
		}
	case *DescribeModel:
		m, lerr := c.LookupModel(st.Name)
		if lerr != nil {
			return nil, true, lerr
		}
		res = &Result{Columns: DescribeModelColumns, Rows: [][]string{}}
		def := m.Def()
		for _, part := range []struct {
			input string
			cols  []types.Column
		}{{"TRUE", def.Input}, {"FALSE", def.Output}} {
			for _, col := range part.cols {
				null := "TRUE"
				if !col.Type.Nullable() {
					null = "FALSE"
				}
				res.Rows = append(res.Rows, []string{col.Name, col.Type.WithNotNull(false).String(), null, part.input, col.Comment})
			}
		}
	case *ShowCreateModel:
		m, lerr := c.LookupModel(st.Name)
		if lerr != nil {
			return nil, true, lerr
		}
		res = &Result{Columns: []string{"create model"}, Rows: [][]string{{m.DDL()}}}
	default:
		return nil, false, nil
	}
	return res, true, err
}
