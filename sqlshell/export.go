package sqlshell

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/kshare/kshare/internal/rowfile"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/types"
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
	// Existing says what to do when Path exists. The zero value refuses:
	// an export never replaces rows it accepted earlier unless told to.
	Existing Existing
}

// Existing says what an export does with a file that is already there.
type Existing int

const (
	// RefuseExisting fails with an error that wraps ErrFileExists.
	RefuseExisting Existing = iota
	// AppendExisting adds the rows to the file: csv after its rows (the
	// header must name the query's columns), arrow as more batches of the
	// same stream (the schema must be the query's), parquet as a new file
	// that holds the old rows first.
	AppendExisting
	// OverwriteExisting replaces the file.
	OverwriteExisting
)

// ErrFileExists is returned (wrapped) by NewExporter and Export when Path
// exists and ExportOptions.Existing is RefuseExisting.
var ErrFileExists = errors.New("already exists")

// ExportResult counts what Export wrote.
type ExportResult struct {
	// Rows is the number of rows this export wrote, without Earlier and
	// Resumed.
	Rows int64
	// Earlier is the number of rows already in the file that an append
	// kept (counted for arrow and parquet; 0 for csv, which is not read
	// through).
	Earlier int64
	// Spool names the spool of an earlier, killed parquet export that this
	// one continued, and Resumed the rows it held; they are in the file.
	Spool   string
	Resumed int64
	Stats   query.Stats
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
//     leaves the spool; the next export to the same Path continues it (its
//     rows come first in the file, and ExportResult.Resumed counts them),
//     so nothing accepted is lost.
//
// A Path that exists is refused (ErrFileExists) unless o.Existing says to
// append to it or overwrite it: its rows came from accepted records, which
// are not delivered again.
//
// Export returns an error when writing failed (the batch being written is
// released) or the query failed; when ctx ended first, the error wraps
// ErrInterrupted and the file holds every row written until then.
func Export(ctx context.Context, rows *query.Rows, o ExportOptions) (ExportResult, error) {
	x, err := NewExporter(rows.Plan().OutputColumns(), rows.Plan().OutputSchema(), o)
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
	o       ExportOptions
	w       exportWriter
	earlier int64  // rows an append kept
	spool   string // a resumed spool, and its rows
	resumed int64
}

// NewExporter creates the file of an export of rows with cols and schema
// (a query's plan tells them before it runs: its OutputColumns and
// OutputSchema, which give an aggregate's rows their op). Run or Abort it.
func NewExporter(cols []types.Column, schema *arrow.Schema, o ExportOptions) (*Exporter, error) {
	x := &Exporter{o: o}
	w, err := x.open(cols, schema)
	if err != nil {
		return nil, err
	}
	x.w = w
	return x, nil
}

// Resumed reports a spool of an earlier, killed parquet export that this
// one continues (empty if none), and the rows it holds.
func (x *Exporter) Resumed() (spool string, rows int64) { return x.spool, x.resumed }

// Abort closes the file of an export that will not run. A file it created
// is removed again (it holds no rows); a file it appends to keeps what it
// had.
func (x *Exporter) Abort() { x.w.discard() }

// Run writes rows to the file as Export says, and closes rows.
func (x *Exporter) Run(ctx context.Context, rows *query.Rows) (res ExportResult, err error) {
	o, w := x.o, x.w
	res.Earlier, res.Spool, res.Resumed = x.earlier, x.spool, x.resumed
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
		rec := rows.OutputBatch() // an aggregate's rows with their op
		n := rec.NumRows()
		err := w.write(rec)
		rec.Release()
		if err != nil {
			releaseRows(rows, 0, int(n))
			rows.Close()
			closed = true
			res.Stats = rows.Stats()
			return res, fmt.Errorf("writing %s: %w (the records of the batch being written were released)", o.Name(), err)
		}
		res.Rows += n
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
// abort, after a failure, closes what is open and leaves what was written;
// discard, before any batch, also removes a file that open created.
type exportWriter interface {
	write(rec arrow.RecordBatch) error
	finish() error
	abort()
	discard()
}

func (x *Exporter) open(cols []types.Column, schema *arrow.Schema) (exportWriter, error) {
	o := x.o
	switch o.Format {
	case "", FormatCSV:
		f, err := o.create()
		if err != nil {
			return nil, err
		}
		w := &csvExport{f: f, enc: rowfile.NewCSV(cols)}
		if err := w.start(); err != nil {
			f.close()
			return nil, err
		}
		return w, nil
	case FormatArrow:
		f, err := o.create()
		if err != nil {
			return nil, err
		}
		if f.appending() {
			w, n, err := continueStream(f, schema)
			if err != nil {
				f.close()
				return nil, err
			}
			x.earlier = n
			return w, nil
		}
		return &arrowExport{f: f, w: ipc.NewWriter(f, ipc.WithSchema(schema))}, nil
	case FormatParquet:
		if o.toStdout() {
			return nil, errors.New("--format parquet needs --out FILE: a parquet file is only readable once its footer is written, and rows are accepted once they are in a spool file next to it")
		}
		return x.openParquet(schema)
	}
	return nil, fmt.Errorf("unknown export format %q (known: csv, arrow, parquet)", o.Format)
}

// outFile is the file written, with the sync that makes it durable.
type outFile struct {
	w       io.Writer
	f       *os.File // nil when w is not a file
	path    string
	own     bool // we opened it, so we close it
	created bool // it did not exist before
	size    int64
}

func existsErr(path string) error {
	return fmt.Errorf("--out %s %w; add --append to add the rows to it, or --overwrite to replace it", path, ErrFileExists)
}

// appending says that the file had content to keep.
func (f *outFile) appending() bool { return !f.created && f.size > 0 }

func (o ExportOptions) create() (*outFile, error) {
	if o.toStdout() {
		out := &outFile{w: o.Stdout, path: "standard output"}
		if f, ok := o.Stdout.(*os.File); ok {
			out.f = f
		}
		return out, nil
	}
	flags := os.O_RDWR | os.O_CREATE
	switch o.Existing {
	case RefuseExisting:
		flags |= os.O_EXCL
	case OverwriteExisting:
		flags |= os.O_TRUNC
	}
	created := o.Existing == RefuseExisting
	if o.Existing == AppendExisting {
		if _, err := os.Stat(o.Path); errors.Is(err, fs.ErrNotExist) {
			created = true
		}
	}
	f, err := os.OpenFile(o.Path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, existsErr(o.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("creating --out file: %w", err)
	}
	out := &outFile{w: f, f: f, path: o.Path, own: true, created: created}
	if o.Existing == AppendExisting {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("--out %s: %w", o.Path, err)
		}
		out.size = st.Size()
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return nil, fmt.Errorf("--out %s: %w", o.Path, err)
		}
	}
	return out, nil
}

// discard closes a file that no row reached, and removes it if this
// export created it.
func (f *outFile) discard() {
	if !f.own {
		return
	}
	f.f.Close()
	if f.created {
		os.Remove(f.path)
	}
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
	f   *outFile
	enc *rowfile.CSV
}

// start writes the header, or, when appending, checks that the file's
// header names the same columns and that its last row is whole.
func (w *csvExport) start() error {
	if !w.f.appending() {
		if err := w.writeSynced(w.enc.Header()); err != nil {
			return fmt.Errorf("writing the header of %s: %w", w.f.path, err)
		}
		return nil
	}
	names := w.enc.Names()
	r := csv.NewReader(io.NewSectionReader(w.f.f, 0, w.f.size))
	r.FieldsPerRecord = -1
	got, err := r.Read()
	if err != nil {
		return fmt.Errorf("--append to %s: reading its header: %w", w.f.path, err)
	}
	if !slices.Equal(got, names) {
		return fmt.Errorf("--append to %s: its columns are %s, the query's are %s; append needs the same columns (or use --overwrite, or another --out)",
			w.f.path, strings.Join(got, ", "), strings.Join(names, ", "))
	}
	last := make([]byte, 1)
	if _, err := w.f.f.ReadAt(last, w.f.size-1); err != nil {
		return fmt.Errorf("--append to %s: %w", w.f.path, err)
	}
	if last[0] != '\n' {
		// A kill inside a write can cut the last row short; its records
		// were not accepted and come again, but appending after half a row
		// would glue two rows together.
		return fmt.Errorf("--append to %s: it does not end with a line break, so its last row was cut short; remove that row and try again", w.f.path)
	}
	return nil
}

func (w *csvExport) discard() { w.f.discard() }

// write sends the whole batch with one write call: a kill between writes
// then leaves only whole rows, which a buffered writer flushing at its own
// boundaries would not.
func (w *csvExport) write(rec arrow.RecordBatch) error { return w.writeSynced(w.enc.Rows(rec)) }

func (w *csvExport) writeSynced(b []byte) error {
	if _, err := w.f.Write(b); err != nil {
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

func (w *arrowExport) abort()   { _ = w.f.close() }
func (w *arrowExport) discard() { w.f.discard() }

// continueStream prepares f, an Arrow IPC stream with schema, for more
// batches and returns its writer and the rows it holds. The stream's end
// marker, or a batch cut short by a kill (whose records were not accepted),
// is cut off; then new batches follow the last whole one. The writer's own
// schema message is dropped, since the stream has one.
func continueStream(f *outFile, schema *arrow.Schema) (*arrowExport, int64, error) {
	cr := &countingReader{r: io.NewSectionReader(f.f, 0, f.size)}
	r, err := ipc.NewReader(cr)
	if err != nil {
		return nil, 0, fmt.Errorf("--append to %s: it is not an Arrow IPC stream: %w", f.path, err)
	}
	defer r.Release()
	if !sameColumns(r.Schema(), schema) {
		return nil, 0, fmt.Errorf("--append to %s: its schema is %s, the query's is %s; append needs the same (or use --overwrite, or another --out)",
			f.path, fieldList(r.Schema()), fieldList(schema))
	}
	end, rows := cr.n, int64(0)
	for r.Next() {
		end = cr.n
		rows += r.RecordBatch().NumRows()
	}
	if err := f.f.Truncate(end); err != nil {
		return nil, 0, fmt.Errorf("--append to %s: %w", f.path, err)
	}
	if _, err := f.f.Seek(end, io.SeekStart); err != nil {
		return nil, 0, fmt.Errorf("--append to %s: %w", f.path, err)
	}
	skip, err := schemaMessageLen(schema)
	if err != nil {
		return nil, 0, err
	}
	sw := &skipWriter{w: f.w, skip: skip}
	return &arrowExport{f: f, w: ipc.NewWriter(sw, ipc.WithSchema(schema))}, rows, nil
}

// sameColumns compares names, types and nullability; metadata differs
// between a schema and its trip through a parquet file.
func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || f.Nullable != g.Nullable || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}

func fieldList(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = f.Name + " " + f.Type.String()
	}
	return strings.Join(parts, ", ")
}

// schemaMessageLen is how many bytes ipc.Writer writes for schema before
// the first batch.
func schemaMessageLen(schema *arrow.Schema) (int64, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Close(); err != nil {
		return 0, err
	}
	cr := &countingReader{r: &buf}
	mr := ipc.NewMessageReader(cr)
	defer mr.Release()
	if _, err := mr.Message(); err != nil {
		return 0, fmt.Errorf("measuring the schema message: %w", err)
	}
	return cr.n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// skipWriter drops the first skip bytes written through it.
type skipWriter struct {
	w    io.Writer
	skip int64
}

func (s *skipWriter) Write(p []byte) (int, error) {
	n := len(p)
	if s.skip > 0 {
		k := min(s.skip, int64(len(p)))
		s.skip -= k
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// parquetExport spools batches as an Arrow IPC stream and writes the
// parquet file at the end; see Export.
type parquetExport struct {
	path   string
	schema *arrow.Schema
	spool  *arrowExport
}

func spoolPath(path string) string { return path + ".spool" }

// openParquet opens the spool of a parquet export. A spool left by an
// earlier export that was killed holds rows whose records were accepted: it
// is continued, so they reach the file. Otherwise, when appending to an
// existing file, the spool starts as a copy of the file's rows, made under
// another name and renamed once synced, so that a spool is always whole.
func (x *Exporter) openParquet(schema *arrow.Schema) (*parquetExport, error) {
	path := x.o.Path
	sp := spoolPath(path)
	// kshare before 2026-12 recovered a spool by copying it from
	// FILE.spool.old; a kill during that copy left the whole one there.
	if _, err := os.Stat(sp + ".old"); err == nil {
		if err := os.Rename(sp+".old", sp); err != nil {
			return nil, fmt.Errorf("recovering %s.old, the spool of a killed export (its rows were accepted; keep it): %w", sp, err)
		}
	}
	_, statErr := os.Stat(path)
	exists := statErr == nil
	if exists && x.o.Existing == RefuseExisting {
		return nil, existsErr(path)
	}
	if f, err := os.OpenFile(sp, os.O_RDWR, 0); err == nil {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", sp, err)
		}
		of := &outFile{w: f, f: f, path: sp, own: true, size: st.Size()}
		if of.size == 0 {
			// Killed before its first batch: nothing to keep.
			return &parquetExport{path: path, schema: schema, spool: &arrowExport{f: of, w: ipc.NewWriter(f, ipc.WithSchema(schema))}}, nil
		}
		spool, n, err := continueStream(of, schema)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("continuing %s, the spool of an earlier export that did not finish (its rows were accepted; keep it, or move it away to start afresh): %w", sp, err)
		}
		x.spool, x.resumed = sp, n
		return &parquetExport{path: path, schema: schema, spool: spool}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("opening the spool file: %w", err)
	}
	if exists && x.o.Existing == AppendExisting {
		n, err := parquetToSpool(path, sp, schema)
		if err != nil {
			return nil, fmt.Errorf("--append to %s: %w", path, err)
		}
		x.earlier = n
		f, err := os.OpenFile(sp, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("opening the spool file: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", sp, err)
		}
		// created: an Abort removes this copy, which holds nothing the
		// file does not.
		spool, _, err := continueStream(&outFile{w: f, f: f, path: sp, own: true, created: true, size: st.Size()}, schema)
		if err != nil {
			f.Close()
			return nil, err
		}
		return &parquetExport{path: path, schema: schema, spool: spool}, nil
	}
	f, err := os.OpenFile(sp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the spool file: %w", err)
	}
	spool := &arrowExport{f: &outFile{w: f, f: f, path: sp, own: true, created: true}, w: ipc.NewWriter(f, ipc.WithSchema(schema))}
	return &parquetExport{path: path, schema: schema, spool: spool}, nil
}

// parquetToSpool writes the rows of the parquet file at path as the spool
// sp, through sp.tmp, and returns how many there were.
func parquetToSpool(path, sp string, schema *arrow.Schema) (int64, error) {
	in, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	pf, err := file.NewParquetReader(in)
	if err != nil {
		return 0, fmt.Errorf("it is not a parquet file: %w", err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	got, err := fr.Schema()
	if err != nil {
		return 0, err
	}
	if !sameColumns(got, schema) {
		return 0, fmt.Errorf("its schema is %s, the query's is %s; append needs the same (or use --overwrite, or another --out)", fieldList(got), fieldList(schema))
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	tmp := sp + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, fmt.Errorf("creating the spool file: %w", err)
	}
	w := &arrowExport{f: &outFile{w: f, f: f, path: tmp, own: true}, w: ipc.NewWriter(f, ipc.WithSchema(schema))}
	var n int64
	for rr.Next() {
		// The batch is re-labelled with the query's schema, which differs
		// from the file's in metadata only (sameColumns said so).
		rec := array.NewRecordBatch(schema, rr.RecordBatch().Columns(), rr.RecordBatch().NumRows())
		err := w.w.Write(rec)
		rec.Release()
		if err != nil {
			w.abort()
			os.Remove(tmp)
			return 0, err
		}
		n += rec.NumRows()
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		w.abort()
		os.Remove(tmp)
		return 0, err
	}
	// finish writes the end marker, which continueStream cuts off again:
	// an empty file still gets its schema that way.
	if err := w.finish(); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, sp); err != nil {
		return 0, err
	}
	return n, nil
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
	if err := rowfile.Publish(tmp, w.path); err != nil {
		return err
	}
	return os.Remove(sp)
}

func (w *parquetExport) abort() { w.spool.abort() }

// discard keeps a spool that holds rows of an earlier export.
func (w *parquetExport) discard() {
	if w.spool.f.created {
		w.spool.discard()
		return
	}
	w.spool.abort()
}

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
	// The parquet writer leaves f open: it must be synced after the
	// footer is written and before it is renamed.
	pw, err := rowfile.NewParquet(f, schema, nil)
	if err != nil {
		f.Close()
		return err
	}
	for r.Next() {
		if err := pw.Write(r.RecordBatch()); err != nil {
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
