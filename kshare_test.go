package kshare_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/kshare/kshare"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/render"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newEngine's tables hand out the JSON lines of their 'rows' option, one
// batch per line, and end there; the connector counts every settling.
func newEngine(t *testing.T) (*kshare.Engine, *tabletest.Connector, *memory.CheckedAllocator) {
	t.Helper()
	mem := tabletest.CheckedAlloc(t)
	c := &tabletest.Connector{
		Kind: "mem",
		With: []options.Option{{Key: "rows", Type: options.String}},
		Keys: []table.MetadataKey{{Key: "n", Type: types.BigIntType().WithNotNull(true)}},
		Fill: func(b *table.Bound, s *tabletest.Source) {
			for _, line := range strings.Split(b.Options.String("rows"), "\n") {
				if line == "" {
					break
				}
				s.Batches = append(s.Batches, tabletest.FromJSON(t, mem, s.Schema, 0, line)...)
			}
			t.Cleanup(s.Release)
		},
	}
	return kshare.New(kshare.WithRegistry(tabletest.Registry(c, "none")), kshare.WithAllocator(mem)), c, mem
}

const itemsDDL = `CREATE TABLE items (
  id INT,
  name STRING,
  n BIGINT METADATA VIRTUAL
) WITH ('connector' = 'mem', 'format' = 'none', 'rows' = '{"id": 1, "name": "a", "n": 1}, {"id": 2, "name": "b", "n": 2}
{"id": 3, "name": "c", "n": 3}')`

func collect(t *testing.T, rows *query.Rows) []string {
	t.Helper()
	defer rows.Close()
	var out []string
	for rows.Next() {
		rec := rows.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			var vals []string
			for k, c := range rows.Columns() {
				s, ok := render.Formatter(rec.Column(k), c.Type)(i)
				if !ok {
					s = "NULL"
				}
				vals = append(vals, s)
			}
			out = append(out, strings.Join(vals, ","))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExecRunsAScript(t *testing.T) {
	eng, _, _ := newEngine(t)
	ctx := context.Background()
	res, err := eng.Exec(ctx, itemsDDL+"; SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != "items" {
		t.Errorf("SHOW TABLES: %+v", res)
	}
	all, err := eng.ExecAll(ctx, "DESCRIBE items; SHOW CREATE TABLE items")
	if err != nil || len(all) != 2 || len(all[0].Rows) != 3 {
		t.Fatalf("ExecAll: %v %+v", err, all)
	}
	// A failing statement says which it was; those before it have run.
	_, err = eng.Exec(ctx, "DROP TABLE items; DROP TABLE items")
	if err == nil || !strings.HasPrefix(err.Error(), "statement 2 (DROP TABLE `items`): ") || !errors.Is(err, table.ErrNoTable) {
		t.Errorf("second DROP: %v", err)
	}
	if _, err := eng.Catalog().Lookup("items"); err == nil {
		t.Error("first DROP did not run")
	}
}

// SHOW FUNCTIONS lists every function a SELECT can call, scalar and
// aggregate, by name, and each of them plans.
func TestShowFunctions(t *testing.T) {
	eng, _, _ := newEngine(t)
	res, err := eng.Exec(context.Background(), itemsDDL+"; show functions")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"function name", "kind", "arguments", "description"}; !slices.Equal(res.Columns, want) {
		t.Fatalf("columns %q, want %q", res.Columns, want)
	}
	kinds := map[string]string{}
	for i, r := range res.Rows {
		if i > 0 && res.Rows[i-1][0] >= r[0] {
			t.Errorf("%s listed after %s: not sorted, or twice", r[0], res.Rows[i-1][0])
		}
		kinds[r[0]] = r[1]
	}
	for name, kind := range map[string]string{"UPPER": "scalar", "COALESCE": "scalar", "JSON_VALUE": "scalar", "COUNT": "aggregate", "LISTAGG": "aggregate"} {
		if kinds[name] != kind {
			t.Errorf("%s: kind %q, want %q", name, kinds[name], kind)
		}
	}
	// Each aggregate it names is one the planner takes.
	for name, kind := range kinds {
		if kind != "aggregate" {
			continue
		}
		arg := "id"
		if name == "LISTAGG" {
			arg = "CAST(id AS STRING)"
		}
		if _, err := eng.Prepare("SELECT " + name + "(" + arg + ") FROM items"); err != nil {
			t.Errorf("SHOW FUNCTIONS lists %s, which does not plan: %v", name, err)
		}
	}
}

func TestExecRefusesSelect(t *testing.T) {
	eng, _, _ := newEngine(t)
	_, err := eng.Exec(context.Background(), itemsDDL+"; SELECT * FROM items")
	if !errors.Is(err, kshare.ErrSelectInExec) {
		t.Fatalf("err %v, want ErrSelectInExec", err)
	}
	if len(eng.Catalog().List()) != 0 {
		t.Error("the CREATE before the SELECT ran")
	}
	if _, err := eng.Query(context.Background(), itemsDDL); !errors.Is(err, query.ErrNotSelect) {
		t.Errorf("Query of DDL: %v, want query.ErrNotSelect", err)
	}
}

func TestSettingsReachQueries(t *testing.T) {
	eng, c, _ := newEngine(t)
	ctx := context.Background()
	if _, err := eng.Exec(ctx, itemsDDL); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Exec(ctx, "SET 'max-rows' = '1'; SET 'idle-timeout' = '5s'; SET")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{"checkpoint-interval", "10s"}, {"idle-timeout", "5s"}, {"max-column-width", "60"}, {"max-rows", "1"}, {"output", "table"}, {"state-dir", ""}, {"state-groups-in-memory", "100000"},
		{"window.allowed-lateness", "10m0s"}, {"window.early-fire", "0s"}, {"window.idle-timeout", "10s"}, {"window.max-held-records", "1000"},
	}
	if got := res.Rows; len(got) != len(want) {
		t.Errorf("SET: %v, want %v", got, want)
	} else {
		for i, w := range want {
			if got[i][0] != w[0] || got[i][1] != w[1] {
				t.Errorf("SET row %d: %v, want %v", i, got[i], w)
			}
		}
	}
	if s := eng.Settings(); s.MaxRows != 1 || s.IdleTimeout != 5*time.Second {
		t.Errorf("settings %+v", s)
	}
	rows, err := eng.Query(ctx, "SELECT id FROM items")
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, rows); len(got) != 1 || rows.EndReason() != query.EndMaxRows {
		t.Errorf("max-rows 1: %v, %s", got, rows.EndReason())
	}
	if settled := c.Settled(); settled["accept"] != 1 || settled["release"] != 1 {
		t.Errorf("settled %v, want the first row accepted and the second released", settled)
	}
	// A query option wins over the setting.
	rows, err = eng.Query(ctx, "SELECT id FROM items", kshare.MaxRows(0), kshare.BatchSize(10))
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, rows); len(got) != 3 {
		t.Errorf("MaxRows(0): %v", got)
	}
	if _, err := eng.Exec(ctx, "RESET 'max-rows'"); err != nil || eng.Settings().MaxRows != 0 {
		t.Errorf("RESET: %v %+v", err, eng.Settings())
	}
	if _, err := eng.Exec(ctx, "SET 'max-rowz' = '1'"); err == nil || !strings.Contains(err.Error(), "max-rows") {
		t.Errorf("SET of an unknown key: %v", err)
	}
	if _, err := eng.Exec(ctx, "RESET"); err != nil || eng.Settings() != query.DefaultSettings() {
		t.Errorf("RESET: %v", err)
	}
}

func TestRegisterFromGo(t *testing.T) {
	eng, _, _ := newEngine(t)
	opts := map[string]string{"connector": "mem", "format": "none", "rows": `{"id": 7, "n": 70}`}
	err := eng.Register("t", []types.Column{
		{Name: "id", Type: types.IntType()},
		{Name: "n", Type: types.BigIntType(), Metadata: true, Virtual: true},
	}, opts)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := eng.Query(context.Background(), "SELECT id * 2, n FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, rows); len(got) != 1 || got[0] != "14,70" {
		t.Errorf("got %v", got)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	opts["rows"] = `{"id": 1, "price": "2.50"}`
	if err := eng.RegisterArrow("a", schema, opts); err != nil {
		t.Fatal(err)
	}
	rows, err = eng.Query(context.Background(), "SELECT id, price * 2 AS p FROM a")
	if err != nil {
		t.Fatal(err)
	}
	cols := rows.Columns()
	if got := collect(t, rows); len(got) != 1 || got[0] != "1,5.00" || cols[0].Type.String() != "BIGINT NOT NULL" {
		t.Errorf("got %v, columns %v", got, cols)
	}
	if err := eng.Register("A", []types.Column{{Name: "x", Type: types.IntType()}}, opts); !errors.Is(err, table.ErrTableExists) {
		t.Errorf("Register twice: %v", err)
	}
	if err := eng.Register("b", []types.Column{{Name: "x", Type: types.IntType()}}, map[string]string{"connector": "nope", "format": "none"}); !errors.Is(err, table.ErrUnknownConnector) {
		t.Errorf("unknown connector: %v", err)
	}
}

func TestPrepare(t *testing.T) {
	eng, _, _ := newEngine(t)
	if _, err := eng.Exec(context.Background(), itemsDDL); err != nil {
		t.Fatal(err)
	}
	p, err := eng.Prepare("SELECT name, id + 1 AS nxt FROM items")
	if err != nil {
		t.Fatal(err)
	}
	if cols := p.Columns(); len(cols) != 2 || cols[1].Name != "nxt" || cols[1].Type.String() != "INT" {
		t.Errorf("columns %v", cols)
	}
	if _, err := eng.Prepare("SELECT nam FROM items"); !errors.Is(err, query.ErrUnknownColumn) {
		t.Errorf("unknown column: %v", err)
	}
}

func TestQueryCancelled(t *testing.T) {
	eng, c, _ := newEngine(t)
	if _, err := eng.Exec(context.Background(), itemsDDL); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rows, err := eng.Query(ctx, "SELECT id FROM items")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	cancel()
	if rows.Next() || !errors.Is(rows.Err(), context.Canceled) {
		t.Errorf("after cancel: %v", rows.Err())
	}
	rows.Close()
	if settled := c.Settled(); settled["accept"] != 2 {
		t.Errorf("settled %v, want the first batch accepted", settled)
	}
}

// ALTER TABLE through the Go API: options change without the DDL retyped,
// SHOW CREATE TABLE shows them, and a refused change leaves the table.
func TestExecAlterTable(t *testing.T) {
	ctx := context.Background()
	eng := kshare.New()
	if _, err := eng.Exec(ctx, `CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'x', 'share-group-id' = 'g')`); err != nil {
		t.Fatal(err)
	}
	res, err := eng.Exec(ctx, `ALTER TABLE t SET ('scan.on-decode-error' = 'reject')`)
	if err != nil || res.Message != "table 't' altered" {
		t.Fatalf("ALTER: %v, %+v", err, res)
	}
	if _, err := eng.Exec(ctx, `ALTER TABLE t SET ('scan.on-decode-error' = 'skip')`); !errors.Is(err, options.ErrInvalid) {
		t.Fatalf("invalid ALTER: got %v", err)
	}
	res, err = eng.Exec(ctx, `SHOW CREATE TABLE t`)
	if err != nil || !strings.Contains(res.Rows[0][0], "'scan.on-decode-error' = 'reject'") {
		t.Fatalf("SHOW CREATE TABLE: %v, %+v", err, res)
	}
}

// A source's error that names its table is not prefixed with the table a
// second time.
func TestOpenErrorNamesTableOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	eng := kshare.New()
	if _, err := eng.Exec(ctx, `CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'x', 'share-group-id' = 'g')`); err != nil {
		t.Fatal(err)
	}
	rows, err := eng.Query(ctx, "SELECT * FROM t")
	if err == nil {
		rows.Close()
		t.Fatal("a query on a closed port started")
	}
	if n := strings.Count(err.Error(), "table 't'"); n != 1 || !strings.HasPrefix(err.Error(), "open table 't': ") {
		t.Fatalf("got %q, want it to start with \"open table 't': \" and name the table once", err)
	}
	// A long name is quoted cut short, once.
	long := strings.Repeat("z", 5000)
	if _, err := eng.Exec(ctx, `CREATE TABLE `+long+` (id BIGINT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json',
		'bootstrap.servers' = '127.0.0.1:1', 'topic' = 'x', 'share-group-id' = 'g')`); err != nil {
		t.Fatal(err)
	}
	_, err = eng.Query(ctx, "SELECT * FROM "+long)
	want := "open table '" + options.Cut(long) + "': "
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), options.Cut(long)) != 1 || len(err.Error()) > 500 {
		t.Fatalf("got %q, want one cut name after %q", err, want)
	}
}
