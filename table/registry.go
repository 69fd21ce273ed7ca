package table

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/kshare/kshare/options"
)

// A Registry holds connectors and formats by name. Components register in
// the default registry (RegisterConnector, RegisterFormat) from init; a
// separate Registry serves tests and embedders that want only their own
// components. It is safe for concurrent use.
type Registry struct {
	mu         sync.RWMutex
	connectors map[string]Connector
	formats    map[string]Format
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{connectors: map[string]Connector{}, formats: map[string]Format{}}
}

// Default is the registry that RegisterConnector, RegisterFormat, the
// Lookup functions, Bind and NewCatalog use.
var Default = NewRegistry()

// RegisterConnector makes c available under c.Name() in the default
// registry. It panics on a nil connector, an empty name or a name
// registered twice, since each is a programming error found at start-up.
func RegisterConnector(c Connector) { Default.RegisterConnector(c) }

// RegisterFormat makes f available under f.Name() in the default registry;
// it panics as RegisterConnector does.
func RegisterFormat(f Format) { Default.RegisterFormat(f) }

// RegisterConnector makes c available under c.Name(); it panics as the
// package's RegisterConnector does.
func (r *Registry) RegisterConnector(c Connector) {
	if c == nil {
		panic("table: RegisterConnector of nil connector")
	}
	register(r, r.connectors, c.Name(), c, "RegisterConnector", "connector")
}

// RegisterFormat makes f available under f.Name(); it panics as the
// package's RegisterConnector does.
func (r *Registry) RegisterFormat(f Format) {
	if f == nil {
		panic("table: RegisterFormat of nil format")
	}
	register(r, r.formats, f.Name(), f, "RegisterFormat", "format")
}

// register adds v to m under name; call names the caller for the panic of
// an empty name, what the kind of thing for that of a name taken.
func register[T any](r *Registry, m map[string]T, name string, v T, call, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == "" {
		panic(fmt.Sprintf("table: %s of a %s with an empty name", call, what))
	}
	if _, dup := m[name]; dup {
		panic(fmt.Sprintf("table: %s %q registered twice", what, name))
	}
	m[name] = v
}

// ErrUnknownConnector and ErrUnknownFormat are returned (wrapped) for a
// 'connector' or 'format' value that nothing registered.
var (
	ErrUnknownConnector = errors.New("unknown connector")
	ErrUnknownFormat    = errors.New("unknown format")
)

// LookupConnector finds a connector of the default registry by name.
func LookupConnector(name string) (Connector, error) { return Default.LookupConnector(name) }

// LookupFormat finds a format of the default registry by name.
func LookupFormat(name string) (Format, error) { return Default.LookupFormat(name) }

// Connectors lists the default registry's connectors by name.
func Connectors() []Connector { return Default.Connectors() }

// Formats lists the default registry's formats by name.
func Formats() []Format { return Default.Formats() }

// LookupConnector finds a connector by name (exactly: 'connector' values are
// case-sensitive, as in Flink). The error of an unknown name wraps
// ErrUnknownConnector and lists the known ones.
func (r *Registry) LookupConnector(name string) (Connector, error) {
	return lookup(r, r.connectors, name, ErrUnknownConnector)
}

// LookupFormat finds a format by name, as LookupConnector does.
func (r *Registry) LookupFormat(name string) (Format, error) {
	return lookup(r, r.formats, name, ErrUnknownFormat)
}

// lookup finds name in m; the error of an unknown name wraps kind and
// lists the names m has.
func lookup[T any](r *Registry, m map[string]T, name string, kind error) (T, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if v, ok := m[name]; ok {
		return v, nil
	}
	var zero T
	return zero, unknown(kind, name, sortedKeys(m))
}

func unknown(kind error, name string, known []string) error {
	list := strings.Join(known, ", ")
	if len(known) == 0 {
		list = "none registered"
	}
	if near := options.Closest(name, known); near != "" {
		return fmt.Errorf("%w '%s' (did you mean '%s'? known: %s)", kind, options.Cut(name), near, list)
	}
	return fmt.Errorf("%w '%s' (known: %s)", kind, options.Cut(name), list)
}

// Connectors lists the registry's connectors by name.
func (r *Registry) Connectors() []Connector {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedValues(r.connectors)
}

// Formats lists the registry's formats by name.
func (r *Registry) Formats() []Format {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedValues(r.formats)
}

func sortedKeys[T any](m map[string]T) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedValues[T any](m map[string]T) []T {
	keys := sortedKeys(m)
	out := make([]T, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}
