package sqlshell

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
)

// Export formats.
const (
	FormatCSV     = "csv"
	FormatArrow   = "arrow"
	FormatParquet = "parquet"
)

// ExportOptions say where and how Export writes.
type ExportOptions struct {
	// Format is FormatCSV (the default), FormatArrow or FormatParquet.
	Format string
	// Path is the file to write; "-" or "" writes to Stdout (not for
	// parquet, whose guarantee needs a file; see Export).
	Path   string
	Stdout io.Writer
	// Progress, when not nil, receives a progress line (rows, rows/s,
	// elapsed) rewritten in place at most every ProgressEvery; meant for a
	// terminal.
	Progress      io.Writer
	ProgressEvery time.Duration
}

// ExportResult counts what Export wrote.
type ExportResult struct {
	Rows  int64
	Stats query.Stats
}

// Export writes every batch of rows to a file and settles each batch only
// once it is on disk, then closes rows. The guarantee, by format:
//
//   - csv: RFC 4180 (encoding/csv) with a header row. Each batch is
//     written with one write call and synced (fsync) before its records
//     are accepted. A killed export leaves the rows of every batch written
//     before the kill, and every record not in the file is delivered again.
//     (A kill inside the write call itself may, rarely, cut the batch being
//     written short; its records were not accepted, so they come again.)
//   - arrow: an Arrow IPC stream, a message per batch, synced before its
//     records are accepted. A killed export leaves a stream without its end
//     marker; readers read every whole batch before the end.
//   - parquet: a Parquet file has its index (the footer) at the end, so a
//     half-written one cannot be read at all, and accepting rows before the
//     footer is on disk would lose them in a crash. So batches go to a spool
//     next to the file, Path + ".spool" (an Arrow IPC stream, synced batch
//     by batch, as for arrow), and are accepted once there; when the query
//     ends, the spool is written out as Path (through Path + ".tmp", synced
//     and renamed, so Path is whole or absent) and removed. A killed export
//     leaves the spool; the next export to the same Path puts its rows
//     first in the new file, so nothing accepted is lost.
//
// Export returns an error when writing failed (the batch being written is
// released) or the query failed; when ctx ended first, the error wraps
// ErrInterrupted and the file holds every row written until then.
func Export(ctx context.Context, rows *query.Rows, o ExportOptions) (ExportResult, error) {
	x, err := NewExporter(rows.Columns(), rows.Schema(), o)
	if err != nil {
		rows.Close()
		return ExportResult{}, err
	}
	return x.Run(ctx, rows)
}

// Exporter is an export whose file is open and waits for its rows: opening
// it before the query starts means that a file that cannot be written fails
// before any record is fetched.
type Exporter struct {
	o ExportOptions
	w exportWriter
}

// NewExporter creates the file of an export of rows with cols and schema
// (a query's plan tells them before it runs). Run or Abort it.
func NewExporter(cols []table.Column, schema *arrow.Schema, o ExportOptions) (*Exporter, error) {
	w, err := openExport(cols, schema, o)
	if err != nil {
		return nil, err
	}
	return &Exporter{o: o, w: w}, nil
}

// Abort closes the file of an export that will not run; what was written
// (a CSV header) stays.
func (x *Exporter) Abort() { x.w.abort() }

// Run writes rows to the file as Export says, and closes rows.
func (x *Exporter) Run(ctx context.Context, rows *query.Rows) (res ExportResult, err error) {
	o, w := x.o, x.w
	closed := false
	defer func() {
		if !closed {
			abandon(rows)
		}
	}()
	defer func() {
		if w != nil {
			w.abort()
		}
	}()

	start := time.Now()
	lastProgress := start
	every := o.ProgressEvery
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	for rows.Next() {
		rec := rows.RecordBatch()
		if err := w.write(rec); err != nil {
			releaseRows(rows, 0, int(rec.NumRows()))
			rows.Close()
			closed = true
			res.Stats = rows.Stats()
			return res, fmt.Errorf("writing %s: %w (the records of the batch being written were released)", o.Name(), err)
		}
		res.Rows += rec.NumRows()
		if o.Progress != nil && time.Since(lastProgress) >= every {
			lastProgress = time.Now()
			writeProgress(o.Progress, res.Rows, time.Since(start), false)
		}
	}
	closeErr := rows.Close()
	closed = true
	res.Stats = rows.Stats()
	if o.Progress != nil {
		writeProgress(o.Progress, res.Rows, time.Since(start), true)
	}
	if err := w.finish(); err != nil {
		w = nil
		return res, fmt.Errorf("finishing %s: %w", o.Name(), err)
	}
	w = nil
	switch rows.EndReason() {
	case query.EndCancelled:
		return res, fmt.Errorf("%w after %s: %w", ErrInterrupted, plural(res.Rows, "row"), context.Cause(ctx))
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	return res, closeErr
}

func (o ExportOptions) toStdout() bool { return o.Path == "" || o.Path == "-" }

// Name says where the export goes, for messages.
func (o ExportOptions) Name() string {
	if o.toStdout() {
		return "standard output"
	}
	return o.Path
}

func writeProgress(w io.Writer, n int64, d time.Duration, final bool) {
	rate := 0.0
	if s := d.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(w, "\r\x1b[K%s, %.0f rows/s, %s elapsed%s", plural(n, "row"), rate, d.Round(100*time.Millisecond), end)
}

// exportWriter writes batches durably. write must leave the batch on disk
// (or on its way down a pipe) when it returns; finish completes the file;
// abort, after a failure, closes what is open and leaves what was written.
type exportWriter interface {
	write(rec arrow.RecordBatch) error
	finish() error
	abort()
}

func openExport(cols []table.Column, schema *arrow.Schema, o ExportOptions) (exportWriter, error) {
	switch o.Format {
	case "", FormatCSV:
		f, err := o.create()
		if err != nil {
			return nil, err
		}
		w := &csvExport{f: f, cols: cols}
		if err := w.header(); err != nil {
			f.close()
			return nil, fmt.Errorf("writing the header of %s: %w", o.Name(), err)
		}
		return w, nil
	case FormatArrow:
		f, err := o.create()
		if err != nil {
			return nil, err
		}
		return &arrowExport{f: f, w: ipc.NewWriter(f, ipc.WithSchema(schema))}, nil
	case FormatParquet:
		if o.toStdout() {
			return nil, errors.New("--format parquet needs --out FILE: a parquet file is only readable once its footer is written, and rows are accepted once they are in a spool file next to it")
		}
		return openParquet(schema, o.Path)
	}
	return nil, fmt.Errorf("unknown export format %q (known: csv, arrow, parquet)", o.Format)
}

// outFile is the file written, with the sync that makes it durable.
type outFile struct {
	w    io.Writer
	f    *os.File // nil when w is not a file
	path string
	own  bool // we opened it, so we close it
}

func (o ExportOptions) create() (*outFile, error) {
	if o.toStdout() {
		out := &outFile{w: o.Stdout, path: "standard output"}
		if f, ok := o.Stdout.(*os.File); ok {
			out.f = f
		}
		return out, nil
	}
	f, err := os.OpenFile(o.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating --out file: %w", err)
	}
	return &outFile{w: f, f: f, path: o.Path, own: true}, nil
}

func (f *outFile) Write(b []byte) (int, error) { return f.w.Write(b) }

// sync makes what was written durable. Standard output may be a pipe or a
// terminal, which cannot be synced (EINVAL): once the write returned, the
// bytes are with the reader, as far as this process can tell.
func (f *outFile) sync() error {
	if f.f == nil {
		return nil
	}
	err := f.f.Sync()
	if err != nil && !f.own && (errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EBADF)) {
		return nil
	}
	return err
}

func (f *outFile) close() error {
	if !f.own {
		return nil
	}
	return f.f.Close()
}

// csvExport writes RFC 4180 CSV.
type csvExport struct {
	f    *outFile
	cols []table.Column
	buf  bytes.Buffer
	rec  []string
}

func (w *csvExport) header() error {
	names := make([]string, len(w.cols))
	for k, c := range w.cols {
		names[k] = c.Name
	}
	w.buf.Reset()
	cw := csv.NewWriter(&w.buf)
	_ = cw.Write(names) // a bytes.Buffer does not fail
	cw.Flush()
	if _, err := w.f.Write(w.buf.Bytes()); err != nil {
		return err
	}
	return w.f.sync()
}

func (w *csvExport) write(rec arrow.RecordBatch) error {
	// The whole batch goes out with one write: a kill between writes then
	// leaves only whole rows, which a buffered writer flushing at its own
	// boundaries would not.
	w.buf.Reset()
	cw := csv.NewWriter(&w.buf)
	fmts := formatters(w.cols, rec)
	if cap(w.rec) < len(fmts) {
		w.rec = make([]string, len(fmts))
	}
	vals := w.rec[:len(fmts)]
	for i := 0; i < int(rec.NumRows()); i++ {
		for k, f := range fmts {
			vals[k], _ = f(i) // NULL is an empty field
		}
		_ = cw.Write(vals)
	}
	cw.Flush()
	if _, err := w.f.Write(w.buf.Bytes()); err != nil {
		return err
	}
	return w.f.sync()
}

func (w *csvExport) finish() error { return w.f.close() }
func (w *csvExport) abort()        { _ = w.f.close() }

// arrowExport writes an Arrow IPC stream.
type arrowExport struct {
	f *outFile
	w *ipc.Writer
}

func (w *arrowExport) write(rec arrow.RecordBatch) error {
	if err := w.w.Write(rec); err != nil {
		return err
	}
	return w.f.sync()
}

func (w *arrowExport) finish() error {
	if err := w.w.Close(); err != nil { // the end-of-stream marker
		w.f.close()
		return err
	}
	if err := w.f.sync(); err != nil {
		w.f.close()
		return err
	}
	return w.f.close()
}

func (w *arrowExport) abort() { _ = w.f.close() }

// parquetExport spools batches as an Arrow IPC stream and writes the
// parquet file at the end; see Export.
type parquetExport struct {
	path   string
	schema *arrow.Schema
	spool  *arrowExport
}

func spoolPath(path string) string { return path + ".spool" }

func openParquet(schema *arrow.Schema, path string) (*parquetExport, error) {
	sp := spoolPath(path)
	// A spool left by a killed export holds rows whose records were
	// accepted: they must reach the new file. Its whole batches are copied
	// into the new spool first, which is synced before the old one goes.
	old := sp + ".old"
	recovered := false
	if _, err := os.Stat(sp); err == nil {
		if err := os.Rename(sp, old); err != nil {
			return nil, fmt.Errorf("moving aside the spool of an earlier export: %w", err)
		}
		recovered = true
	} else if _, err := os.Stat(old); err == nil {
		// Killed while recovering: the old spool is still the one.
		recovered = true
	}
	f, err := os.OpenFile(sp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the spool file: %w", err)
	}
	spool := &arrowExport{f: &outFile{w: f, f: f, path: sp, own: true}, w: ipc.NewWriter(f, ipc.WithSchema(schema))}
	if recovered {
		if err := copySpool(old, schema, spool); err != nil {
			spool.abort()
			return nil, fmt.Errorf("recovering %s, the spool of a killed export (its rows were accepted; keep it): %w", old, err)
		}
		if err := os.Remove(old); err != nil {
			spool.abort()
			return nil, fmt.Errorf("removing the recovered spool: %w", err)
		}
	}
	return &parquetExport{path: path, schema: schema, spool: spool}, nil
}

// copySpool appends the whole batches of the spool at path to w; a batch
// cut short by a kill ends the copy.
func copySpool(path string, schema *arrow.Schema, w *arrowExport) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := ipc.NewReader(f, ipc.WithSchema(schema))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil // killed before the schema was written: no rows
		}
		return err
	}
	defer r.Release()
	for r.Next() {
		if err := w.write(r.RecordBatch()); err != nil {
			return err
		}
	}
	return nil // an error of r is a torn last message: what came before is all
}

func (w *parquetExport) write(rec arrow.RecordBatch) error { return w.spool.write(rec) }

func (w *parquetExport) finish() error {
	if err := w.spool.finish(); err != nil {
		return err
	}
	sp := spoolPath(w.path)
	tmp := w.path + ".tmp"
	if err := spoolToParquet(sp, tmp, w.schema); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing the parquet file from the spool %s (which keeps the rows): %w", sp, err)
	}
	if err := os.Rename(tmp, w.path); err != nil {
		return err
	}
	return os.Remove(sp)
}

func (w *parquetExport) abort() { w.spool.abort() }

func spoolToParquet(spool, out string, schema *arrow.Schema) error {
	in, err := os.Open(spool)
	if err != nil {
		return err
	}
	defer in.Close()
	r, err := ipc.NewReader(in, ipc.WithSchema(schema))
	if err != nil {
		return err
	}
	defer r.Release()
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithAllocator(memory.DefaultAllocator))
	// noClose keeps the parquet writer's Close from closing f, which must
	// be synced after the footer is written and before it is renamed.
	pw, err := pqarrow.NewFileWriter(schema, noClose{f}, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		return err
	}
	for r.Next() {
		if err := pw.WriteBuffered(r.RecordBatch()); err != nil {
			pw.Close()
			f.Close()
			return err
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
		pw.Close()
		f.Close()
		return err
	}
	if err := pw.Close(); err != nil { // writes the footer
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

type noClose struct{ w io.Writer }

func (n noClose) Write(b []byte) (int, error) { return n.w.Write(b) }
