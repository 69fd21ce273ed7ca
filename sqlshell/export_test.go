package sqlshell

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/internal/tabletest"
)

func exportRows(t *testing.T, batches [][]int64, o ExportOptions) (ExportResult, map[int64]string) {
	t.Helper()
	res, v, err := tryExport(t, batches, o)
	if err != nil {
		t.Fatal(err)
	}
	return res, v
}

func TestExportCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.csv")
	res, v := exportRows(t, [][]int64{{1, 2}, {3}}, ExportOptions{Path: path})
	if res.Rows != 3 {
		t.Errorf("exported %d rows, want 3", res.Rows)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "id\n1\n2\n3\n" {
		t.Errorf("file %q", b)
	}
	if got := fmt.Sprint(v); got != "map[1:accept 2:accept 3:accept]" {
		t.Errorf("verdicts %s", got)
	}
}

// An export whose query gave no rows still writes the header.
func TestExportCSVEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.csv")
	exportRows(t, nil, ExportOptions{Path: path})
	if b, _ := os.ReadFile(path); string(b) != "id\n" {
		t.Errorf("file %q, want the header alone", b)
	}
}

// A file that cannot be created fails before any record is settled.
func TestExportCreateError(t *testing.T) {
	sh, src, _ := newMemShell(t, [][]int64{{1}}, nil)
	rows, err := sh.eng.Query(t.Context(), "SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Export(t.Context(), rows, ExportOptions{Path: filepath.Join(t.TempDir(), "no", "such", "dir.csv")})
	if err == nil || !strings.Contains(err.Error(), "creating --out file") {
		t.Fatalf("error %v", err)
	}
	if v := src.verdict(); len(v) != 0 {
		t.Errorf("records settled without being written: %v", v)
	}
}

func readArrowIDs(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var ids []int64
	for r.Next() {
		ids = append(ids, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return ids
}

func readParquetIDs(t *testing.T, path string) []int64 {
	t.Helper()
	rd := readParquet(t, path)
	defer rd.Release()
	var ids []int64
	for rd.Next() {
		ids = append(ids, rd.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	return ids
}

// TestExportBinary: the Arrow stream and Parquet files hold every row, read
// back with their own readers, and no spool is left behind.
func TestExportBinary(t *testing.T) {
	for _, tc := range []struct {
		format string
		read   func(*testing.T, string) []int64
	}{
		{FormatArrow, readArrowIDs},
		{FormatParquet, readParquetIDs},
	} {
		t.Run(tc.format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out."+tc.format)
			exportRows(t, [][]int64{{1, 2}, {3}}, ExportOptions{Path: path, Format: tc.format})
			if got := fmt.Sprint(tc.read(t, path)); got != "[1 2 3]" {
				t.Errorf("ids %s", got)
			}
			if _, err := os.Stat(spoolPath(path)); !os.IsNotExist(err) {
				t.Errorf("spool left behind: %v", err)
			}
		})
	}
}

// A spool left by a killed parquet export (here: one whole batch and a
// torn one) has its whole batches put first in the next export's file.
func TestExportParquetRecoversSpool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.parquet")
	writeTornStream(t, spoolPath(path), []int64{7, 8})

	res, _ := exportRows(t, [][]int64{{1}}, ExportOptions{Path: path, Format: FormatParquet})
	if got := fmt.Sprint(readParquetIDs(t, path)); got != "[7 8 1]" {
		t.Errorf("ids %s, want the spool's first", got)
	}
	if res.Spool != spoolPath(path) || res.Resumed != 2 || res.Rows != 1 {
		t.Errorf("result says spool %q with %d rows, %d new; want %q, 2, 1", res.Spool, res.Resumed, res.Rows, spoolPath(path))
	}
}

func TestExportParquetNeedsFile(t *testing.T) {
	sh, _, _ := newMemShell(t, [][]int64{{1}}, nil)
	rows, err := sh.eng.Query(t.Context(), "SELECT id FROM t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Export(t.Context(), rows, ExportOptions{Path: "-", Format: FormatParquet})
	if err == nil || !strings.Contains(err.Error(), "needs --out FILE") {
		t.Fatalf("error %v", err)
	}
}

// The progress line is rewritten in place and ends with a newline when the
// export is done.
func TestExportProgress(t *testing.T) {
	var progress strings.Builder
	path := filepath.Join(t.TempDir(), "out.csv")
	exportRows(t, [][]int64{{1, 2}, {3}}, ExportOptions{Path: path, Progress: &progress, ProgressEvery: 1})
	got := progress.String()
	if !strings.HasPrefix(got, "\r\x1b[K") || !strings.HasSuffix(got, "\n") {
		t.Errorf("progress %q: want lines rewritten in place, ending with a newline", got)
	}
	last := got[strings.LastIndex(got, "\r\x1b[K")+4:]
	if !strings.HasPrefix(last, "3 rows, ") || !strings.Contains(last, " rows/s, ") || !strings.Contains(last, " elapsed\n") {
		t.Errorf("last progress line %q", last)
	}
}

// An export of an aggregate writes each change with its op first, in CSV
// as in Arrow, and accepts the records once their changes are written.
func TestExportUpdating(t *testing.T) {
	for _, format := range []string{FormatCSV, FormatArrow, FormatParquet} {
		sh, src, _ := newMemShell(t, [][]int64{{1, 2}, {3}}, nil)
		rows, err := sh.eng.Query(t.Context(), "SELECT id % 2 AS odd, COUNT(*) AS n FROM t GROUP BY id % 2")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "out."+format)
		res, err := Export(t.Context(), rows, ExportOptions{Path: path, Format: format})
		if err != nil || res.Rows != 4 {
			t.Fatalf("%s: %d rows, %v", format, res.Rows, err)
		}
		var got string
		switch format {
		case FormatCSV:
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got = string(b)
		case FormatArrow:
			got = arrowFileText(t, path)
		default:
			got = parquetFileText(t, path)
		}
		if want := "op,odd,n\n+I,1,1\n+I,0,1\n-U,1,1\n+U,1,2\n"; got != want {
			t.Errorf("%s: file %q, want %q", format, got, want)
		}
		if v := fmt.Sprint(src.verdict()); v != "map[1:accept 2:accept 3:accept]" {
			t.Errorf("%s: verdicts %s", format, v)
		}
	}
}

// arrowFileText is an Arrow IPC stream file as CSV-like text: a header of
// field names, then one line per row.
func arrowFileText(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := ipc.NewReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	return readerText(rd)
}

// parquetFileText is arrowFileText of a parquet file.
func parquetFileText(t *testing.T, path string) string {
	t.Helper()
	rd := readParquet(t, path)
	defer rd.Release()
	return readerText(rd)
}

// readParquet reads a parquet file whole and returns a reader of its
// batches, which the caller releases.
func readParquet(t *testing.T, path string) array.RecordReader {
	t.Helper()
	tbl := tabletest.ReadParquet(t, path, memory.DefaultAllocator)
	defer tbl.Release()
	return array.NewTableReader(tbl, -1)
}

func readerText(rd array.RecordReader) string {
	var b strings.Builder
	for k, fld := range rd.Schema().Fields() {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(fld.Name)
	}
	b.WriteByte('\n')
	for rd.Next() {
		rec := rd.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			for k := range rec.Columns() {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(rec.Column(k).ValueStr(i))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
