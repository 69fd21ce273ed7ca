package table

import (
	"errors"

	"github.com/kshare/kshare/internal/named"
)

// A Registry holds connectors and formats by name. Components register in
// the default registry (RegisterConnector, RegisterFormat) from init; a
// separate Registry serves tests and embedders that want only their own
// components. It is safe for concurrent use.
type Registry struct {
	connectors named.Set[Connector]
	formats    named.Set[Format]
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

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
	r.connectors.Add(c.Name(), c, "table: connector")
}

// RegisterFormat makes f available under f.Name(); it panics as the
// package's RegisterConnector does.
func (r *Registry) RegisterFormat(f Format) {
	if f == nil {
		panic("table: RegisterFormat of nil format")
	}
	r.formats.Add(f.Name(), f, "table: format")
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
	return r.connectors.Get(name, ErrUnknownConnector)
}

// LookupFormat finds a format by name, as LookupConnector does.
func (r *Registry) LookupFormat(name string) (Format, error) {
	return r.formats.Get(name, ErrUnknownFormat)
}

// Connectors lists the registry's connectors by name.
func (r *Registry) Connectors() []Connector { return r.connectors.Values() }

// Formats lists the registry's formats by name.
func (r *Registry) Formats() []Format { return r.formats.Values() }
