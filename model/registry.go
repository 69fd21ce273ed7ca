package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/errlist"
	"github.com/kshare/kshare/internal/named"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// A Provider makes models of one kind ('provider' = 'name'). It registers
// itself with Register in an init function, as a connector does.
type Provider interface {
	// Name is the value of the 'provider' key.
	Name() string
	// Options are the keys the provider takes besides Common, which every
	// model takes.
	Options() *options.Set
	// Check says whether the provider can read def's INPUT columns and
	// fill its OUTPUT columns with the options v (parsed against Options
	// and Common), with no I/O; several problems are joined (errors.Join)
	// and each is reported.
	Check(def *table.ModelDefinition, v options.Values) error
	// NewCaller makes what calls a bound model. It performs no I/O beyond
	// making sure that what it calls exists (a program on PATH).
	NewCaller(b *Bound, o OpenOptions) (Caller, error)
}

// A Caller calls a model once for one row: the part of a model that a
// provider writes. The Predictor built on it bounds, paces and retries the
// calls, and reads the answers into the OUTPUT columns.
type Caller interface {
	// Call runs the model on one row and returns the answer: a JSON
	// object whose fields are the OUTPUT columns, read as the json format
	// reads a row (a missing field is NULL, an unknown one ignored). It is
	// called from many goroutines at once. ctx ends at the model's
	// 'timeout'. Its error says what went wrong without any secret (no
	// API key, no URL query) and is classified with RetryAfter,
	// RowFailure or Fatal; an error left unclassified is worth retrying.
	Call(ctx context.Context, in Input) (json.RawMessage, error)
	// Close releases what the caller holds (a program's copies). It is
	// called once, after every Call returned.
	Close() error
}

// Input is one row handed to a Caller.
type Input struct {
	// Batch holds the row, whose columns are the model's INPUT columns in
	// order, at Row. It is valid until the Call returns; read it only.
	Batch arrow.RecordBatch
	Row   int
	// JSON is the row as the json format writes it: an object of the
	// INPUT columns, without a newline.
	JSON []byte
	// Usage, when not nil, is where a Caller that learns what the call
	// cost (the tokens an OpenAI server counts) says so. It counts in the
	// metrics and paces 'tokens-per-minute'.
	Usage *Usage
}

// OpenOptions are what a Predictor gets from the one who opens it.
type OpenOptions struct {
	// Alloc allocates the OUTPUT batches; nil means
	// memory.DefaultAllocator.
	Alloc memory.Allocator
	// Logger receives what a provider logs (a program's standard error);
	// nil means slog.Default().
	Logger *slog.Logger
}

func (o OpenOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// A Registry holds providers by name. The built-in ones register in
// Default; a Registry of its own serves tests and embedders that want only
// their own providers. It is a table.ModelBinder, for a catalog's CREATE
// MODEL. It is safe for concurrent use.
type Registry struct {
	providers named.Set[Provider]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Default is the registry Register adds to: the built-in providers
// 'openai', 'http' and 'command' are in it.
var Default = NewRegistry()

// Register makes p available under p.Name() in Default. It panics on a nil
// provider, an empty name or a name registered twice, since each is a
// programming error found at start-up.
func Register(p Provider) { Default.Register(p) }

// Register makes p available under p.Name(); it panics as the package's
// Register does.
func (r *Registry) Register(p Provider) {
	if p == nil {
		panic("model: Register of nil provider")
	}
	r.providers.Add(p.Name(), p, "model: provider")
}

// ErrUnknownProvider is returned (wrapped) for a 'provider' value that
// nothing registered; the message suggests the nearest known name.
var ErrUnknownProvider = errors.New("unknown provider")

// Lookup finds a provider by name (exactly, as 'connector' values are
// found). The error of an unknown name wraps ErrUnknownProvider and lists
// the known ones.
func (r *Registry) Lookup(name string) (Provider, error) {
	return r.providers.Get(name, ErrUnknownProvider)
}

// Providers lists the registry's providers by name.
func (r *Registry) Providers() []Provider { return r.providers.Values() }

// BindError is every problem that binding one model definition found.
// Each problem wraps its kind: options.ErrUnknownOption, ErrMissing,
// ErrInvalid, ErrDuplicate or ErrConflict for the WITH clause,
// ErrUnknownProvider, table.ErrInvalidDefinition, or ErrColumns for
// columns the provider cannot read or fill.
type BindError struct {
	Model    string
	Problems []error
}

func (e *BindError) Error() string {
	return fmt.Sprintf("model '%s': %s", options.Cut(e.Model), errlist.Error(e.Problems))
}

// Unwrap lets errors.Is and errors.As see each problem.
func (e *BindError) Unwrap() []error { return e.Problems }

// ErrColumns is wrapped by a provider's Check for INPUT or OUTPUT columns
// it cannot read or fill (a chat model's OUTPUT of an INT, say).
var ErrColumns = errors.New("columns the provider cannot use")

// Bind checks def against its provider: it finds the provider by the
// 'provider' key, parses the WITH clause against the provider's keys and
// Common, and asks the provider whether it can read the INPUT columns and
// fill the OUTPUT ones. It performs no I/O and reports every problem it
// finds in one *BindError; no message holds a secret option's value.
func (r *Registry) Bind(def *table.ModelDefinition) (*Bound, error) {
	var problems []error
	add := func(err error) { problems = errlist.Flatten(problems, err) }
	schemaOK := true
	if err := def.Validate(); err != nil {
		add(err)
		schemaOK = false
	}
	p := r.provider(def, add)
	b := &Bound{Def: def, Provider: p}
	// Without the provider, the other keys cannot be told apart from
	// typos: the provider's problem is reported alone.
	if p != nil {
		v, err := options.Parse(def.Options, []string{table.KeyProvider}, p.Options(), Common)
		if err != nil {
			add(err)
		} else if b.Options = v; schemaOK {
			if err := p.Check(def, v); err != nil {
				add(err)
			}
		}
	}
	if len(problems) > 0 {
		return nil, &BindError{Model: def.Name, Problems: problems}
	}
	return b, nil
}

// provider finds the provider that def names, reporting a missing, doubled
// or unknown 'provider' through add.
func (r *Registry) provider(def *table.ModelDefinition, add func(error)) Provider {
	var names []string
	for _, kv := range def.Options {
		if kv.Key == table.KeyProvider {
			names = append(names, kv.Value)
		}
	}
	switch {
	case len(names) == 0:
		msg := fmt.Sprintf("missing required option '%s' (known providers: %s)", table.KeyProvider, strings.Join(r.providers.Names(), ", "))
		var keys []string
		for _, kv := range def.Options {
			keys = append(keys, kv.Key)
		}
		if near := options.Closest(table.KeyProvider, keys); near != "" {
			msg += fmt.Sprintf("; is '%s' meant to be '%s'?", options.Cut(near), table.KeyProvider)
		}
		add(options.Errorf(options.ErrMissing, table.KeyProvider, "%s", msg))
		return nil
	case len(names) > 1:
		add(options.Errorf(options.ErrDuplicate, table.KeyProvider, "option '%s' is set twice; keep one", table.KeyProvider))
		return nil
	}
	p, err := r.Lookup(names[0])
	if err != nil {
		add(err)
		return nil
	}
	return p
}

// BindModel is Bind for a catalog: it makes Registry a table.ModelBinder.
func (r *Registry) BindModel(def *table.ModelDefinition) (table.BoundModel, error) {
	b, err := r.Bind(def)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Bound is a model definition its provider accepted, with its options
// parsed: what the catalog keeps for CREATE MODEL. Open it to predict.
type Bound struct {
	Def      *table.ModelDefinition
	Provider Provider
	// Options holds the provider's and Common's options, by canonical key.
	Options options.Values
}

var _ table.BoundModel = (*Bound)(nil)

// Definition is the definition bound.
func (b *Bound) Definition() *table.ModelDefinition { return b.Def }

// Secret reports whether key is a secret option of the model's provider;
// a key that neither the provider nor Common declares is secret when its
// name looks so (options.LooksSecret). A declared key is what its
// declaration says, so that 'max-tokens' is shown though its name holds
// "token".
func (b *Bound) Secret(key string) bool {
	if o, ok := b.Provider.Options().Lookup(key); ok {
		return o.Secret
	}
	if o, ok := Common.Lookup(key); ok {
		return o.Secret
	}
	return options.LooksSecret(key)
}
