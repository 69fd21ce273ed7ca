package ddltest

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/format/raw"
	"github.com/kshare/kshare/kafka"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/sinks/sinkspec"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Connector is the kafka-sharegroup connector's declarations, with a
// source that validates its options and never connects.
type Connector struct{}

func (Connector) Name() string                  { return "kafka-sharegroup" }
func (Connector) Options() *options.Set         { return sharegroup.Options }
func (Connector) Metadata() []table.MetadataKey { return sharegroup.Metadata }
func (Connector) NewSource(b *table.Bound) (flow.Source, error) {
	if err := sharegroup.Validate(b.Options); err != nil {
		return nil, err
	}
	return fakeSource{}, nil
}

type fakeSource struct{}

func (fakeSource) Open(context.Context, flow.OpenOptions) (flow.Stream, error) {
	return nil, errors.New("fake source: no broker")
}

// WriteOnly is a write-only connector's declarations (Decl) under its
// name (Kind): it takes no 'format', as package sinks' connectors.
type WriteOnly struct {
	Kind string
	Decl *options.Set
}

func (c WriteOnly) Name() string                              { return c.Kind }
func (c WriteOnly) Options() *options.Set                     { return c.Decl }
func (WriteOnly) Metadata() []table.MetadataKey               { return nil }
func (WriteOnly) TakesNoFormat()                              {}
func (WriteOnly) NewSource(*table.Bound) (flow.Source, error) { return fakeSource{}, nil }

// Keyed is a write-only connector that takes a PRIMARY KEY, as 'jdbc'
// does.
type Keyed struct{ WriteOnly }

// TakesPrimaryKey marks Keyed as a table.KeyedConnector.
func (Keyed) TakesPrimaryKey() {}

// Files is the 'filesystem' connector's declarations: it writes only, and
// takes one of its own formats.
type Files struct{}

func (Files) Name() string                                { return sinkspec.Filesystem }
func (Files) Options() *options.Set                       { return sinkspec.FilesystemOptions }
func (Files) Metadata() []table.MetadataKey               { return nil }
func (Files) Formats() []string                           { return sinkspec.FilesystemFormats }
func (Files) OwnFormats() []string                        { return sinkspec.FilesystemOwnFormats }
func (Files) NewSource(*table.Bound) (flow.Source, error) { return fakeSource{}, nil }

// Format is a format's declarations (Decl) under its name (Kind), whose
// decoder checks the columns with Check, if set, and decodes nothing.
type Format struct {
	Kind  string
	Decl  *options.Set
	Check func([]types.Column) error
}

func (f Format) Name() string          { return f.Kind }
func (f Format) Options() *options.Set { return f.Decl }
func (f Format) NewDecoder(cols []types.Column, _ options.Values) (table.Decoder, error) {
	if f.Check != nil {
		if err := f.Check(cols); err != nil {
			return nil, err
		}
	}
	return fakeDecoder{}, nil
}

type fakeDecoder struct{}

func (fakeDecoder) Decode([]byte, []array.Builder) (int, error) { return 0, errors.New("fake decoder") }

// Registry is a registry of its own holding the fakes: the connector
// 'kafka-sharegroup' and the formats 'json' and 'raw'; and the connector
// 'kafka' and 'upsert-kafka' themselves, whose NewSource does no I/O; and
// the write-only 'print', 'blackhole', 'filesystem' and 'jdbc'.
func Registry() *table.Registry {
	r := table.NewRegistry()
	r.RegisterConnector(Connector{})
	r.RegisterConnector(kafka.Connector)
	r.RegisterConnector(kafka.UpsertConnector)
	r.RegisterConnector(WriteOnly{Kind: sinkspec.Print, Decl: sinkspec.PrintOptions})
	r.RegisterConnector(WriteOnly{Kind: sinkspec.Blackhole, Decl: sinkspec.BlackholeOptions})
	r.RegisterConnector(Files{})
	r.RegisterConnector(Keyed{WriteOnly{Kind: sinkspec.JDBC, Decl: sinkspec.JDBCOptions}})
	r.RegisterFormat(Format{Kind: "json", Decl: json.Options})
	r.RegisterFormat(Format{Kind: "raw", Decl: raw.Options, Check: raw.CheckColumns})
	return r
}
