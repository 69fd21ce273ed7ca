package sqlshell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tryExport runs SELECT id FROM t over batches into o and returns Export's
// result, the records' verdicts, and Export's error.
func tryExport(t *testing.T, batches [][]int64, o ExportOptions) (ExportResult, map[int64]string, error) {
	t.Helper()
	sh, src, _ := newMemShell(t, batches, nil)
	rows, err := sh.eng.Query(t.Context(), "SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Export(t.Context(), rows, o)
	return res, src.verdict(), err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An export never replaces a file unless told to: the rows in it came
// from records that were accepted and are not delivered again. The refusal
// settles nothing and leaves the file as it was, in every format.
func TestExportRefusesExistingFile(t *testing.T) {
	for _, format := range []string{FormatCSV, FormatArrow, FormatParquet} {
		t.Run(format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out")
			if err := os.WriteFile(path, []byte("20,000 rows\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, v, err := tryExport(t, [][]int64{{1}}, ExportOptions{Path: path, Format: format})
			if !errors.Is(err, ErrFileExists) {
				t.Fatalf("error %v, want ErrFileExists", err)
			}
			if !strings.Contains(err.Error(), "--append") || !strings.Contains(err.Error(), "--overwrite") {
				t.Errorf("error %q does not name --append and --overwrite", err)
			}
			if len(v) != 0 {
				t.Errorf("records settled: %v", v)
			}
			if got := readFile(t, path); got != "20,000 rows\n" {
				t.Errorf("file now %q", got)
			}
		})
	}
}

func TestExportOverwrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.csv")
	if err := os.WriteFile(path, []byte("old,file\nwith,more\nrows,than\nthe,new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tryExport(t, [][]int64{{1}}, ExportOptions{Path: path, Existing: OverwriteExisting}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "id\n1\n" {
		t.Errorf("file %q", got)
	}
}

// exportAppend exports ids 1 and 2 to path in format, then appends the
// export of more to the file, and returns the second export's result.
func exportAppend(t *testing.T, path, format string, more [][]int64) ExportResult {
	t.Helper()
	exportRows(t, [][]int64{{1, 2}}, ExportOptions{Path: path, Format: format})
	res, _ := exportRows(t, more, ExportOptions{Path: path, Format: format, Existing: AppendExisting})
	return res
}

func TestExportAppendCSV(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	if res := exportAppend(t, path, FormatCSV, [][]int64{{3}, {4}}); res.Rows != 2 {
		t.Errorf("rows %d, want 2", res.Rows)
	}
	if got := readFile(t, path); got != "id\n1\n2\n3\n4\n" {
		t.Errorf("file %q, want one header and the rows of both exports", got)
	}

	// --append to a file that is not there, or empty, starts it.
	fresh := filepath.Join(dir, "fresh.csv")
	exportRows(t, [][]int64{{5}}, ExportOptions{Path: fresh, Existing: AppendExisting})
	if got := readFile(t, fresh); got != "id\n5\n" {
		t.Errorf("fresh file %q", got)
	}

	// Files that cannot be continued are refused, left alone and nothing
	// is settled.
	for _, c := range []struct{ name, content, want string }{
		{"other columns", "id,customer\n1,ann\n", "its columns are id, customer, the query's are id"},
		{"cut short", "id\n1\n2", "does not end with a line break"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".csv")
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, v, err := tryExport(t, [][]int64{{9}}, ExportOptions{Path: p, Existing: AppendExisting})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		if len(v) != 0 {
			t.Errorf("%s: records settled: %v", c.name, v)
		}
		if got := readFile(t, p); got != c.content {
			t.Errorf("%s: file now %q", c.name, got)
		}
	}
}

// writeTornStream writes an Arrow stream of ids as a killed export leaves
// it: no end marker, and half of the next message.
func writeTornStream(t *testing.T, path string, ids []int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(memSchema))
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(ids, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(memSchema, []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0xff, 0xff, 0xff, 0xff, 0x40, 0, 0}); err != nil {
		t.Fatal(err)
	}
}

// --append continues an Arrow stream, whether it ended properly or was cut
// short by a kill, and the result reads as one stream.
func TestExportAppendArrow(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.arrows")
	if res := exportAppend(t, whole, FormatArrow, [][]int64{{3}, {4}}); res.Earlier != 2 || res.Rows != 2 {
		t.Errorf("earlier %d, rows %d; want 2 and 2", res.Earlier, res.Rows)
	}
	if got := fmt.Sprint(readArrowIDs(t, whole)); got != "[1 2 3 4]" {
		t.Errorf("ids %s", got)
	}

	torn := filepath.Join(dir, "torn.arrows")
	writeTornStream(t, torn, []int64{7, 8})
	exportRows(t, [][]int64{{9}}, ExportOptions{Path: torn, Format: FormatArrow, Existing: AppendExisting})
	if got := fmt.Sprint(readArrowIDs(t, torn)); got != "[7 8 9]" {
		t.Errorf("ids %s", got)
	}

	// A file that is not an Arrow stream is refused and left alone.
	csv := filepath.Join(dir, "not.arrows")
	if err := os.WriteFile(csv, []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := tryExport(t, [][]int64{{9}}, ExportOptions{Path: csv, Format: FormatArrow, Existing: AppendExisting})
	if err == nil || !strings.Contains(err.Error(), "not an Arrow IPC stream") {
		t.Errorf("error %v", err)
	}
	if got := readFile(t, csv); got != "id\n1\n" {
		t.Errorf("file now %q", got)
	}
}

func TestExportAppendParquet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.parquet")
	if res := exportAppend(t, path, FormatParquet, [][]int64{{3}}); res.Earlier != 2 || res.Rows != 1 {
		t.Errorf("earlier %d, rows %d; want 2 and 1", res.Earlier, res.Rows)
	}
	if got := fmt.Sprint(readParquetIDs(t, path)); got != "[1 2 3]" {
		t.Errorf("ids %s", got)
	}
	for _, p := range []string{spoolPath(path), spoolPath(path) + ".tmp"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}

// An export that is aborted before its query ran removes the file it
// created (it holds nothing), and leaves a file it was to append to.
func TestExportAbortRemovesOnlyWhatItCreated(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{FormatCSV, FormatArrow, FormatParquet} {
		path := filepath.Join(dir, "new."+format)
		x, err := NewExporter(nil, memSchema, ExportOptions{Path: path, Format: format})
		if err != nil {
			t.Fatal(err)
		}
		x.Abort()
		for _, p := range []string{path, spoolPath(path)} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s: %s left behind: %v", format, p, err)
			}
		}
	}
	kept := filepath.Join(dir, "kept.csv")
	if err := os.WriteFile(kept, []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := NewExporter(nil, memSchema, ExportOptions{Path: kept, Existing: AppendExisting})
	if err == nil {
		x.Abort()
	}
	if got := readFile(t, kept); got != "id\n1\n" {
		t.Errorf("appended-to file now %q", got)
	}
}
