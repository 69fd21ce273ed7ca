package query

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/render"
)

const fuzzDDL = `CREATE TABLE t (
  i INT, bi BIGINT, d DOUBLE, m DECIMAL(10, 3), s STRING, b BOOLEAN,
  ts TIMESTAMP(3), dt DATE, tm TIME(3), bytes BYTES, arr ARRAY<INT>,
  ` + "`offset`" + ` BIGINT METADATA VIRTUAL
) WITH ('connector' = 'test', 'format' = 'test')`

var fuzzRows = []string{
	`{"i": 1, "bi": 9000000000, "d": 1.5, "m": "-2.505", "s": "apple", "b": true, "ts": "2024-01-02T03:04:05.678", "dt": "2024-01-02", "tm": "01:02:03.004", "bytes": "YQ==", "arr": [1], "offset": 1}`,
	`{"i": 0, "bi": -1, "d": "NaN", "m": "0", "s": "", "b": false, "ts": "1969-12-31T23:59:59.999", "dt": "1900-01-01", "tm": "00:00:00", "bytes": "", "arr": [], "offset": 2}`,
	`{"i": null, "bi": null, "d": null, "m": null, "s": null, "b": null, "ts": null, "dt": null, "tm": null, "bytes": null, "arr": null, "offset": 3}`,
	`{"i": -2147483648, "bi": 9223372036854775807, "d": -1e308, "m": "9999999.999", "s": "2024-01-01", "b": true, "ts": "2262-04-11T23:47:16.854", "dt": "9999-12-31", "tm": "23:59:59.999", "bytes": "/w==", "arr": [null], "offset": 4}`,
}

// FuzzPrepare plans arbitrary statements and runs those that plan over rows
// with edge values: nothing may panic, leak or leave a batch unsettled, and
// a failure must be an error.
func FuzzPrepare(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, path := range files {
		scs, _ := parseScenariosFile(path)
		for _, sc := range scs {
			if strings.HasPrefix(sc.directive, "query") {
				f.Add(strings.Join(sc.input, "\n"))
			}
		}
	}
	f.Add("SELECT i / 0, m % 0, CAST(s AS DATE), -i FROM t WHERE i BETWEEN -1 AND 1 LIMIT 2")
	f.Fuzz(func(t *testing.T, sql string) {
		mem := tabletest.CheckedAlloc(t)
		cat := newCatalog(t, fuzzDDL)
		src := sourceOf(t, cat, "t")
		src.Batches = tabletest.FromJSON(t, mem, src.Schema, 3, fuzzRows...)
		t.Cleanup(src.Release)
		p, err := Prepare(sql, cat)
		if err != nil {
			if !strings.Contains(err.Error(), " ") {
				t.Fatalf("terse error %q", err)
			}
			return
		}
		rows, err := Run(context.Background(), p, Options{Alloc: mem})
		if err != nil {
			return
		}
		for rows.Next() {
			rec := rows.RecordBatch()
			if !rec.Schema().Equal(p.Schema()) {
				t.Fatalf("batch schema %s, plan %s", rec.Schema(), p.Schema())
			}
			for k, c := range rows.Columns() {
				col := rec.Column(k)
				if !c.Type.Nullable() && col.NullN() > 0 {
					t.Fatalf("column %s is %s but has NULLs", c.Name, c.Type)
				}
				fm := render.Formatter(col, c.Type)
				for i := 0; i < col.Len(); i++ {
					fm(i)
				}
			}
		}
		rows.Close()
		for _, l := range src.Log() {
			if strings.Contains(l, "twice") || strings.Contains(l, "after settling") || strings.Contains(l, "out of range") {
				t.Fatalf("bad settling: %s", l)
			}
		}
	})
}

// parseScenariosFile reads a scenario file without a *testing.T, for seeds.
func parseScenariosFile(path string) ([]*scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*scenario
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		sc := &scenario{directive: l}
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			sc.input = append(sc.input, lines[i])
		}
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		}
		out = append(out, sc)
	}
	return out, nil
}
