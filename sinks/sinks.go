package sinks

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/sinks/sinkspec"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// The connectors, for a registry of one's own; init registers both in
// table.Default.
var (
	PrintConnector     table.Sinker = connector{name: sinkspec.Print, opts: sinkspec.PrintOptions}
	BlackholeConnector table.Sinker = connector{name: sinkspec.Blackhole, opts: sinkspec.BlackholeOptions}
)

func init() {
	table.RegisterConnector(PrintConnector)
	table.RegisterConnector(BlackholeConnector)
}

// connector is either sink; name tells which.
type connector struct {
	name string
	opts *options.Set
}

var (
	_ table.Sinker         = connector{}
	_ table.FormatFree     = connector{}
	_ flow.ChangelogSink   = (*sink)(nil)
	_ flow.ChangelogWriter = (*writer)(nil)
)

func (c connector) Name() string                { return c.name }
func (c connector) Options() *options.Set       { return c.opts }
func (connector) Metadata() []table.MetadataKey { return nil }
func (connector) TakesNoFormat()                {}
func (c connector) NewSource(b *table.Bound) (flow.Source, error) {
	return flow.WriteOnly(b.Def.Name, c.name, ""), nil
}

// NewSink writes the table's physical columns: neither connector has
// metadata to write.
func (c connector) NewSink(b *table.Bound) (flow.Sink, error) {
	phys, _ := b.Def.Schema.Physical()
	s := &sink{cols: phys}
	if c.name == sinkspec.Print {
		s.out = streams.stdout
		if b.Options.Bool(sinkspec.OptStandardError) {
			s.out = streams.stderr
		}
		if b.Options.Has(sinkspec.OptPrintIdentifier) {
			s.prefix = b.Options.String(sinkspec.OptPrintIdentifier) + "> "
		}
	}
	return s, nil
}

// streams are where print writes; tests replace them.
var streams = struct{ stdout, stderr io.Writer }{os.Stdout, os.Stderr}

// sink is an open 'print' table when out is set, else a 'blackhole' one.
type sink struct {
	cols   []types.Column
	out    io.Writer
	prefix string
}

func (s *sink) Columns() []types.Column { return s.cols }

// TakesChanges: both take an updating query's changes, as Flink's do; print
// writes each row's kind (-U, +U, -D) where an append has +I.
func (*sink) TakesChanges() {}

func (s *sink) Open(context.Context) (flow.Writer, error) { return &writer{sink: s}, nil }

// writer writes each batch with one call to out, so that the lines of
// concurrent jobs printing to the same stream do not mix, and
// acknowledges the batch once that call returned: the rows are then in
// the stream (os.Stdout is not buffered).
type writer struct {
	*sink
	buf          []byte
	fmts         []func(int) (string, bool)
	written, ack atomic.Int64
	failed       atomic.Int64
}

func (w *writer) Write(ctx context.Context, rec arrow.RecordBatch, done func(error)) error {
	return w.WriteChanges(ctx, rec, nil, done)
}

// WriteChanges writes rec as Write does, row i as the change kinds[i]
// (nil: all insertions).
func (w *writer) WriteChanges(_ context.Context, rec arrow.RecordBatch, kinds []flow.RowKind, done func(error)) error {
	n := int(rec.NumRows())
	w.written.Add(int64(n))
	if w.out != nil {
		if err := w.print(rec, kinds); err != nil {
			w.failed.Add(int64(n))
			done(&flow.RowError{Row: 0, Err: err})
			return nil
		}
	}
	w.ack.Add(int64(n))
	done(nil)
	return nil
}

// print writes rec's rows as Flink's print sink does: each row's kind of
// change (kinds[i]; +I when kinds is nil), then its values.
func (w *writer) print(rec arrow.RecordBatch, kinds []flow.RowKind) error {
	w.fmts = w.fmts[:0]
	for k, c := range w.cols {
		w.fmts = append(w.fmts, render.Formatter(rec.Column(k), c.Type))
	}
	b := w.buf[:0]
	for i := 0; i < int(rec.NumRows()); i++ {
		kind := flow.KindInsert
		if kinds != nil {
			kind = kinds[i]
		}
		b = append(append(append(b, w.prefix...), kind.String()...), '[')
		for k, f := range w.fmts {
			if k > 0 {
				b = append(b, ", "...)
			}
			if s, ok := f(i); ok {
				b = append(b, s...)
			} else {
				b = append(b, "NULL"...)
			}
		}
		b = append(b, "]\n"...)
	}
	w.buf = b
	clear(w.fmts) // they hold rec's columns, which the caller releases
	if _, err := w.out.Write(b); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}

// Close has nothing to wait for: every Write was acknowledged before it
// returned.
func (w *writer) Close() error { return nil }

func (w *writer) Stats() flow.SinkStats {
	return flow.SinkStats{Written: w.written.Load(), Acked: w.ack.Load(), Failed: w.failed.Load()}
}
