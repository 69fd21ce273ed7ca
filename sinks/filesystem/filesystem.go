package filesystem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sinks/sinkspec"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Connector is the 'filesystem' connector, for a registry of one's own;
// init registers it in table.Default.
var Connector table.Sinker = connector{}

func init() { table.RegisterConnector(Connector) }

type connector struct{}

var (
	_ table.Sinker        = connector{}
	_ table.FormatChooser = connector{}
)

func (connector) Name() string                  { return sinkspec.Filesystem }
func (connector) Options() *options.Set         { return sinkspec.FilesystemOptions }
func (connector) Metadata() []table.MetadataKey { return nil }
func (connector) Formats() []string             { return sinkspec.FilesystemFormats }
func (connector) OwnFormats() []string          { return sinkspec.FilesystemOwnFormats }

func (connector) NewSource(b *table.Bound) (flow.Source, error) {
	return flow.WriteOnly(b.Def.Name, "filesystem", "read its part files with another tool"), nil
}

// alloc holds a parquet part's pages until it is written; tests check it.
var alloc memory.Allocator = memory.DefaultAllocator

// NewSink checks that the format can write the table's columns; the
// directory is checked by Open.
func (connector) NewSink(b *table.Bound) (flow.Sink, error) {
	cols, _ := b.Def.Schema.Physical()
	s := &sink{
		table: options.Cut(b.Def.Name), dir: b.Options.String(sinkspec.OptPath), cols: cols,
		policy: policy{
			fileSize:    b.Options.Bytes(sinkspec.OptFileSize),
			rollover:    b.Options.Duration(sinkspec.OptRolloverInterval),
			check:       b.Options.Duration(sinkspec.OptCheckInterval),
			inactivity:  b.Options.Duration(sinkspec.OptInactivityInterval),
			maxHeldRows: b.Options.Int(sinkspec.OptMaxHeldRows),
		},
	}
	switch {
	case b.Format != nil:
		// A registered format (json): its encoder is checked here, once,
		// and made again for each writer.
		s.format, s.ext = b.Format.Name(), b.Format.Name()
		if _, err := table.NewEncoder(b.Format, cols, b.Options); err != nil {
			return nil, table.Errorf(s.table, "%w", err)
		}
		s.newEncoder = func() (table.Encoder, error) { return table.NewEncoder(b.Format, cols, b.Options) }
	default:
		s.format, s.ext = b.OwnFormat, b.OwnFormat
	}
	return s, nil
}

// sink is a bound filesystem table.
type sink struct {
	table, dir  string
	cols        []types.Column
	format, ext string
	newEncoder  func() (table.Encoder, error) // json's
	policy      policy
}

func (s *sink) Columns() []types.Column { return s.cols }

// Open makes the directory if it is missing, as Flink does, and checks
// that a file can be created in it, so that an INSERT into a path that
// cannot be written fails before anything is read.
func (s *sink) Open(context.Context) (flow.Writer, error) {
	bad := func(err error) error {
		return table.Errorf(s.table, "'path' %s: %w", options.Cut(s.dir), err)
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, bad(errors.New("is a file, or lies under one; name a directory (it is created when missing)"))
		}
		return nil, bad(err)
	}
	probe, err := os.CreateTemp(s.dir, ".kshare-probe-*")
	if err != nil {
		return nil, bad(fmt.Errorf("cannot create files in it: %w", errors.Unwrap(err)))
	}
	probe.Close()
	os.Remove(probe.Name())
	return newWriter(s)
}
