package filesystem_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"errors"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/kshare/kshare/flow"
	_ "github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/sinks/filesystem"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open binds a filesystem table of cols writing into dir with the extra
// WITH pairs, and opens its writer; the test's cleanup closes it.
func open(t *testing.T, cols, dir, format, extra string) (flow.Sink, flow.Writer) {
	t.Helper()
	var w flow.Writer
	s, err := sinkOf(fmt.Sprintf("CREATE TABLE f %s WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = '%s'%s)", cols, dir, format, extra))
	if err == nil {
		w, err = s.Open(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return s, w
}

// sinkOf binds the table of one CREATE TABLE and returns its sink.
func sinkOf(ddl string) (flow.Sink, error) {
	stmts, err := parse.Parse(ddl)
	if err != nil {
		return nil, err
	}
	b, err := table.Bind(stmts[0].(*table.CreateTable).Def)
	if err != nil {
		return nil, err
	}
	return table.NewSink(b)
}

// batch is rows (JSON) as a record batch of s's columns, allocated from
// alloc.
func batch(t *testing.T, alloc *tabletestAlloc, s flow.Sink, rows string) arrow.RecordBatch {
	t.Helper()
	schema := (&types.Schema{Columns: s.Columns()}).Arrow()
	rec, _, err := array.RecordFromJSON(alloc, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Release)
	return rec
}

type tabletestAlloc = memory.CheckedAllocator

// acks records the done callbacks of written batches: they come from the
// writer's goroutines, got reads them on the test's.
type acks struct {
	ch   chan error
	errs []error
}

func newAcks() *acks { return &acks{ch: make(chan error, 100)} }

func (a *acks) done() func(error) { return func(err error) { a.ch <- err } }

// got is the errors of the done callbacks called so far.
func (a *acks) got() []error {
	for {
		select {
		case err := <-a.ch:
			a.errs = append(a.errs, err)
		default:
			return a.errs
		}
	}
}

// files lists dir's entries: final part files, and hidden ones apart.
func files(t *testing.T, dir string) (final, hidden []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			hidden = append(hidden, e.Name())
		} else {
			final = append(final, e.Name())
		}
	}
	return final, hidden
}

const allKinds = `(id BIGINT, name STRING, price DECIMAL(10, 2), ok BOOLEAN, ts TIMESTAMP(3), tags ARRAY<INT>, addr ROW<city STRING, zip INT>)`

const rows1 = `[
 {"id": 1, "name": "ann", "price": "24.00", "ok": true, "ts": "2024-01-02 03:04:05.678", "tags": [1, 2], "addr": {"city": "Oslo", "zip": 150}},
 {"id": 2, "name": null, "price": null, "ok": null, "ts": null, "tags": null, "addr": null}
]`

const rows2 = `[{"id": 3, "name": "bo, \"the\" bear", "price": "0.50", "ok": false, "ts": "2024-01-02 00:00:00.000", "tags": [], "addr": {"city": null, "zip": 1}}]`

// TestPartCommitted writes two batches in each format: they sit in a
// hidden in-progress part, unacknowledged, until the part is committed
// (Flush); then the part is under its final name alone, both batches are
// acknowledged, and the file decodes back to the rows.
func TestPartCommitted(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"csv", "id,name,price,ok,ts,tags,addr\n" +
			"1,ann,24.00,TRUE,2024-01-02 03:04:05.678,\"[1, 2]\",\"(Oslo, 150)\"\n" +
			"2,,,,,,\n" +
			"3,\"bo, \"\"the\"\" bear\",0.50,FALSE,2024-01-02 00:00:00.000,[],\"(NULL, 1)\"\n"},
		{"json", `{"id":1,"name":"ann","price":24.00,"ok":true,"ts":"2024-01-02 03:04:05.678","tags":[1,2],"addr":{"city":"Oslo","zip":150}}` + "\n" +
			`{"id":2,"name":null,"price":null,"ok":null,"ts":null,"tags":null,"addr":null}` + "\n" +
			`{"id":3,"name":"bo, \"the\" bear","price":0.50,"ok":false,"ts":"2024-01-02 00:00:00","tags":[],"addr":{"city":null,"zip":1}}` + "\n"},
		{"parquet", ""},
	} {
		t.Run(tc.format, func(t *testing.T) {
			alloc := tabletest.CheckedAlloc(t)
			defer filesystem.SetAlloc(alloc)()
			dir := filepath.Join(t.TempDir(), "a", "b") // created by Open
			s, w := open(t, allKinds, dir, tc.format, ", 'sink.rolling-policy.inactivity-interval' = '1 h'")
			a := newAcks()
			b1, b2 := batch(t, alloc, s, rows1), batch(t, alloc, s, rows2)
			for _, b := range []arrow.RecordBatch{b1, b2} {
				if err := w.Write(context.Background(), b, a.done()); err != nil {
					t.Fatal(err)
				}
			}
			final, hidden := files(t, dir)
			if len(final) != 0 || len(hidden) != 1 || !strings.HasSuffix(hidden[0], "."+tc.format+".inprogress") || len(a.got()) != 0 {
				t.Fatalf("before the commit: files %v, hidden %v, acks %v; want one in-progress part and no ack", final, hidden, a.got())
			}
			w.(flow.Flusher).Flush()
			final, hidden = files(t, dir)
			if len(final) != 1 || len(hidden) != 0 || !strings.HasPrefix(final[0], "part-") || !strings.HasSuffix(final[0], "-0."+tc.format) {
				t.Fatalf("after the commit: files %v, hidden %v; want one part-<uuid>-0.%s", final, hidden, tc.format)
			}
			if got := a.got(); len(got) != 2 || got[0] != nil || got[1] != nil {
				t.Errorf("acks %v, want both batches acknowledged", got)
			}
			if st := w.Stats(); st != (flow.SinkStats{Written: 3, Acked: 3}) {
				t.Errorf("stats %+v, want 3 written and acked", st)
			}
			path := filepath.Join(dir, final[0])
			if tc.format == "parquet" {
				checkParquet(t, alloc, path, b1, b2)
				return
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tc.want {
				t.Errorf("part holds\n%s\nwant\n%s", data, tc.want)
			}
			if tc.format == "csv" {
				if recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll(); err != nil || len(recs) != 4 || recs[3][1] != `bo, "the" bear` {
					t.Errorf("the csv part reads back as %q, %v", recs, err)
				}
			}
		})
	}
}

// checkParquet reads the parquet file at path and compares its rows with
// want's.
func checkParquet(t *testing.T, alloc *tabletestAlloc, path string, want ...arrow.RecordBatch) {
	t.Helper()
	tbl := tabletest.ReadParquet(t, path, alloc)
	defer tbl.Release()
	wantTbl := array.NewTableFromRecords(want[0].Schema(), want)
	defer wantTbl.Release()
	// The file's schema carries parquet's field ids as metadata: compare
	// the columns' names and values.
	if tbl.NumCols() != wantTbl.NumCols() || tbl.NumRows() != wantTbl.NumRows() {
		t.Fatalf("parquet part holds\n%v\nwant\n%v", tbl, wantTbl)
	}
	for i := range int(tbl.NumCols()) {
		got, want := tbl.Column(i), wantTbl.Column(i)
		if got.Name() != want.Name() || !array.ChunkedEqual(got.Data(), want.Data()) {
			t.Errorf("parquet column %d holds %s %v, want %s %v", i, got.Name(), got.Data(), want.Name(), want.Data())
		}
	}
}

// TestRollingPolicy: each bound ends a part on its own, and the part's
// batches are acknowledged then, not before. The test runs in a synctest
// bubble, whose clock moves only when every goroutine in it waits: the
// policy's timers fire at exact moments, and synctest.Wait lets the
// writer's goroutine act on them before the test looks.
func TestRollingPolicy(t *testing.T) {
	const quiet = ", 'sink.rolling-policy.inactivity-interval' = '1 h'"
	for _, tc := range []struct {
		name, extra string
		writes      []time.Duration // when each row is written, from the writer's opening
		commit      time.Duration   // when the part must be committed; 0: by the last write
	}{
		{"max-held-rows", quiet + ", 'sink.rolling-policy.max-held-rows' = '2'", []time.Duration{0, 0}, 0},
		{"file-size", quiet + ", 'sink.rolling-policy.file-size' = '1kb'", []time.Duration{0, 0}, 0},
		// Quiet for 20 ms after the last row: the timer that fires 20 ms
		// after the first finds 10 ms of quiet and waits the rest.
		{"inactivity", ", 'sink.rolling-policy.inactivity-interval' = '20 ms'", []time.Duration{0, 10 * time.Millisecond}, 30 * time.Millisecond},
		// 25 ms old, but only the check at 30 ms sees it.
		{"rollover", quiet + ", 'sink.rolling-policy.rollover-interval' = '25 ms', 'sink.rolling-policy.check-interval' = '10 ms'",
			[]time.Duration{0, 20 * time.Millisecond}, 30 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				alloc := tabletest.CheckedAlloc(t)
				dir := t.TempDir()
				s, w := open(t, "(id BIGINT, name STRING)", dir, "csv", tc.extra)
				start := time.Now()
				at := func(d time.Duration) {
					time.Sleep(d - time.Since(start))
					synctest.Wait()
				}
				a := newAcks()
				long := strings.Repeat("x", 600)
				open := func(when string) {
					t.Helper()
					if final, hidden := files(t, dir); len(final) != 0 || len(hidden) != 1 || len(a.got()) != 0 {
						t.Fatalf("%s: files %v, hidden %v, acks %v; want the part open, nothing acknowledged", when, final, hidden, a.got())
					}
				}
				for i, d := range tc.writes {
					at(d)
					b := batch(t, alloc, s, fmt.Sprintf(`[{"id": %d, "name": "%s"}]`, i, long))
					if err := w.Write(context.Background(), b, a.done()); err != nil {
						t.Fatal(err)
					}
					if i < len(tc.writes)-1 || tc.commit > 0 {
						open(fmt.Sprintf("after write %d", i))
					}
				}
				if tc.commit > 0 {
					at(tc.commit - time.Nanosecond)
					open(fmt.Sprintf("%v after the opening", tc.commit-time.Nanosecond))
					at(tc.commit)
				}
				if got := a.got(); len(got) != 2 || got[0] != nil || got[1] != nil {
					t.Errorf("acks %v, want both batches acknowledged", got)
				}
				if final, hidden := files(t, dir); len(final) != 1 || len(hidden) != 0 {
					t.Errorf("files %v, hidden %v; want one part holding both rows", final, hidden)
				}
			})
		})
	}
}

// Closing a writer whose part is not committed removes the part and fails
// its batches, so that their records are released.
func TestCloseDiscardsOpenPart(t *testing.T) {
	alloc := tabletest.CheckedAlloc(t)
	defer filesystem.SetAlloc(alloc)()
	for _, format := range []string{"csv", "json", "parquet"} {
		dir := t.TempDir()
		s, w := open(t, allKinds, dir, format, ", 'sink.rolling-policy.inactivity-interval' = '1 h'")
		a := newAcks()
		if err := w.Write(context.Background(), batch(t, alloc, s, rows1), a.done()); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := a.got(); len(got) != 1 || !errors.Is(got[0], filesystem.ErrNotCommitted) {
			t.Errorf("%s: acks %v, want ErrNotCommitted", format, got)
		}
		if final, hidden := files(t, dir); len(final)+len(hidden) != 0 {
			t.Errorf("%s: files %v %v left by a part that was not committed", format, final, hidden)
		}
		if st := w.Stats(); st != (flow.SinkStats{Written: 2, Failed: 2}) {
			t.Errorf("%s: stats %+v, want 2 written and failed", format, st)
		}
		if err := w.Write(context.Background(), batch(t, alloc, s, rows2), a.done()); err == nil {
			t.Errorf("%s: Write after Close succeeded", format)
		}
	}
}

// A path that cannot be a directory of parts is refused when the sink
// opens (INSERT's statement time), saying what to fix; reading the table
// is refused too.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	afile := filepath.Join(dir, "afile")
	if err := os.WriteFile(afile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{afile, filepath.Join(afile, "sub")} {
		s, err := sinkOf(fmt.Sprintf("CREATE TABLE f (id INT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')", path))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Open(context.Background())
		if want := "'path' " + path + ": is a file, or lies under one; name a directory"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("path %s: %v, want %q", path, err, want)
		}
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o500); err != nil {
		t.Fatal(err)
	}
	s, err := sinkOf(fmt.Sprintf("CREATE TABLE f (id INT) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'csv')", ro))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Open(context.Background())
	switch {
	case os.Geteuid() == 0:
		// root writes anywhere: the directory is writable to it.
		if err != nil {
			t.Errorf("root opening %s: %v", ro, err)
		} else {
			w.Close()
		}
	case err == nil || !strings.Contains(err.Error(), "cannot create files in it: permission denied"):
		t.Errorf("read-only path: %v, want it to say files cannot be created", err)
	}

	stmts, err := parse.Parse("CREATE TABLE f (id INT) WITH ('connector' = 'filesystem', 'path' = '/tmp/x', 'format' = 'json')")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.NewTable(stmts[0].(*table.CreateTable).Def)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Source.Open(context.Background(), flow.OpenOptions{}); err == nil || !strings.Contains(err.Error(), "writes but cannot read; use it as the target of INSERT INTO") {
		t.Errorf("reading a filesystem table: %v", err)
	}
}

// readParts decodes every final part in dir (json lines or parquet) and
// returns the ids they hold, sorted.
func readParts(t *testing.T, dir, format string) []int {
	t.Helper()
	final, _ := files(t, dir)
	var ids []int
	add := func(v string) {
		id, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("a part holds %q, not an id", v)
		}
		ids = append(ids, id)
	}
	for _, name := range final {
		path := filepath.Join(dir, name)
		if format == "parquet" {
			tbl := tabletest.ReadParquet(t, path, tabletest.CheckedAlloc(t))
			tr := array.NewTableReader(tbl, -1)
			for tr.Next() {
				col := tr.RecordBatch().Column(0).(*array.String)
				for i := range col.Len() {
					add(col.Value(i))
				}
			}
			tr.Release()
			tbl.Release()
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			v, ok1 := strings.CutPrefix(sc.Text(), `{"v":"`)
			v, ok2 := strings.CutSuffix(v, `"}`)
			if !ok1 || !ok2 {
				t.Fatalf("%s holds the line %q, not an object", name, sc.Text())
			}
			add(v)
		}
		f.Close()
	}
	slices.Sort(ids)
	return ids
}

func upTo(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// A row the json format cannot write fails Write with the row, writes
// nothing of its batch, and leaves no file when it was all the part had.
func TestEncodeErrorWritesNothing(t *testing.T) {
	alloc := tabletest.CheckedAlloc(t)
	dir := t.TempDir()
	s, w := open(t, "(d DATE)", dir, "json", "")
	b := array.NewDate32Builder(alloc)
	b.AppendValues([]arrow.Date32{19724, 5000000}, nil) // 2024-01-02, and a year past 9999
	col := b.NewArray()
	b.Release()
	defer col.Release()
	rec := array.NewRecordBatch((&types.Schema{Columns: s.Columns()}).Arrow(), []arrow.Array{col}, 2)
	defer rec.Release()
	a := newAcks()
	err := w.Write(context.Background(), rec, a.done())
	var re *flow.RowError
	if !errors.As(err, &re) || re.Row != 1 {
		t.Fatalf("Write: %v, want a RowError for row 2", err)
	}
	w.(flow.Flusher).Flush()
	if final, hidden := files(t, dir); len(final)+len(hidden) != 0 || len(a.got()) != 0 {
		t.Errorf("files %v %v, acks %v after a refused batch; want none", final, hidden, a.got())
	}
}

// A batch whose column is not of the table's type (INSERT checks the
// types first; a Go caller may not) fails its part rather than panicking.
func TestParquetTypeMismatch(t *testing.T) {
	alloc := tabletest.CheckedAlloc(t)
	defer filesystem.SetAlloc(alloc)()
	dir := t.TempDir()
	_, w := open(t, "(id BIGINT)", dir, "parquet", "")
	wrong := (&types.Schema{Columns: []types.Column{{Name: "id", Type: types.IntType()}}}).Arrow()
	rec, _, err := array.RecordFromJSON(alloc, wrong, strings.NewReader(`[{"id": 1}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	a := newAcks()
	if err := w.Write(context.Background(), rec, a.done()); err != nil {
		t.Fatal(err)
	}
	if got := a.got(); len(got) != 1 || got[0] == nil || !strings.Contains(got[0].Error(), "column 1 (id) of the batch does not have the table's type int64") {
		t.Errorf("acks %v, want the type mismatch", got)
	}
	if final, hidden := files(t, dir); len(final)+len(hidden) != 0 {
		t.Errorf("files %v %v left by a failed part", final, hidden)
	}
}
