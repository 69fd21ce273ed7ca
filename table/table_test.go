package table_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/internal/ddltest"
	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

const withOK = `WITH ('connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = 'h:9092', 'share-group-id' = 'g', 'topic' = 't')`

func parseOne(t *testing.T, src string) table.Statement {
	t.Helper()
	sts, err := parse.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 {
		t.Fatalf("%d statements", len(sts))
	}
	return sts[0]
}

func TestBindErrorKinds(t *testing.T) {
	reg := ddltest.Registry()
	for src, kinds := range map[string][]error{
		"CREATE TABLE t (a INT) WITH ('connector' = 'x', 'format' = 'y')":                                               {table.ErrUnknownConnector, table.ErrUnknownFormat},
		"CREATE TABLE t (a INT) WITH ('format' = 'json')":                                                               {options.ErrMissing},
		"CREATE TABLE t (a INT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json', 'topics' = 'x')":             {options.ErrUnknownOption, options.ErrMissing},
		"CREATE TABLE t (a INT, p SMALLINT METADATA FROM 'partition', q INT METADATA FROM 'nope') " + withOK:            {table.ErrMetadata},
		"CREATE TABLE t (a INT) " + strings.Replace(withOK, "'topic' = 't'", "'source.parallelism' = '0'", 1):           {options.ErrInvalid, options.ErrMissing},
		"CREATE TABLE t (a INT) " + strings.Replace(withOK, "'topic' = 't'", "'topic' = 't', 'topic' = 'u'", 1):         {options.ErrDuplicate},
		"CREATE TABLE t (a INT) " + strings.Replace(withOK, "'topic' = 't'", "'topic' = 't', 'topic-pattern' = 'u'", 1): {options.ErrConflict},
	} {
		ct := parseOne(t, src).(*table.CreateTable)
		_, err := reg.Bind(ct.Def)
		var be *table.BindError
		if !errors.As(err, &be) || be.Table != "t" {
			t.Errorf("%s: not a BindError: %v", src, err)
			continue
		}
		for _, k := range kinds {
			if !errors.Is(err, k) {
				t.Errorf("%s: %v is not %v", src, err, k)
			}
		}
	}
}

func TestBindGoDefinition(t *testing.T) {
	reg := ddltest.Registry()
	cols := []types.Column{
		{Name: "id", Type: types.BigIntType().WithNotNull(true)},
		{Name: "off", Type: types.BigIntType(), Metadata: true, MetadataKey: "offset", Virtual: true},
	}
	def := table.NewDefinition("orders", cols, map[string]string{
		"topic": "orders", "format": "json", "connector": "kafka-sharegroup",
		"bootstrap.servers": "h:9092", "share-group-id": "g", "properties.sasl.password": "x",
	})
	var keys []string
	for _, kv := range def.Options {
		keys = append(keys, kv.Key)
	}
	if got := strings.Join(keys, ","); got != "connector,format,bootstrap.servers,properties.sasl.password,share-group-id,topic" {
		t.Errorf("option order %s", got)
	}
	if !strings.Contains(def.String(), "'properties.sasl.password' = '******'") {
		t.Errorf("String shows a secret:\n%s", def)
	}
	// A password needs SASL: the rules between keys run at bind time.
	if _, err := reg.Bind(def); !errors.Is(err, options.ErrConflict) {
		t.Errorf("got %v", err)
	}
	def.Options = def.Options[:len(def.Options)-3]
	def.Options = append(def.Options, options.KV{Key: "share-group-id", Value: "g"}, options.KV{Key: "topic", Value: "t"})
	tbl, err := reg.NewTable(def)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Name() != "orders" || tbl.Bound.Options.String("topic") != "t" || tbl.Bound.Options.Int("source.parallelism") != 1 {
		t.Errorf("bound %+v", tbl.Bound.Options)
	}
	// The table holds its own copy.
	def.Schema.Columns[0].Name = "changed"
	if tbl.Schema().Columns[0].Name != "id" {
		t.Error("table shares its definition with the caller")
	}

	bad := table.NewDefinition("", []types.Column{
		{Name: "a", Type: types.DecimalType(50, 2)},
		{Name: "A", Type: types.IntType()},
		{Name: "b"},
		{Name: "c", Type: &types.DataType{Kind: types.Row, Fields: []types.Field{{Name: "x", Type: types.IntType()}, {Name: "X", Type: types.IntType()}}}},
		{Name: "d", Type: &types.DataType{Kind: types.Array}},
	}, nil)
	_, err = reg.Bind(bad)
	for _, want := range []string{
		"the table has no name",
		"column 'a': DECIMAL precision must be between 1 and 38, got 50",
		"duplicate column 'A'",
		"column 'b' has no type",
		"column 'c': duplicate field 'X' in ROW",
		"column 'd': ARRAY has no element type",
	} {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("lacks %q: %v", want, err)
		}
	}
	if !errors.Is(err, table.ErrInvalidDefinition) {
		t.Errorf("kind: %v", err)
	}
}

func TestCatalogErrors(t *testing.T) {
	cat := table.NewCatalogWith(ddltest.Registry())
	if _, err := cat.Exec(parseOne(t, "CREATE TABLE Orders (a INT) "+withOK)); err != nil {
		t.Fatal(err)
	}
	_, err := cat.Exec(parseOne(t, "CREATE TABLE ORDERS (a INT) "+withOK))
	if !errors.Is(err, table.ErrTableExists) || !strings.Contains(err.Error(), "'Orders'") {
		t.Errorf("got %v", err)
	}
	if _, err := cat.Lookup("nope"); !errors.Is(err, table.ErrNoTable) {
		t.Errorf("got %v", err)
	}
	if err := cat.Drop("nope", false); !errors.Is(err, table.ErrNoTable) {
		t.Errorf("got %v", err)
	}
	if err := cat.Drop("nope", true); err != nil {
		t.Errorf("got %v", err)
	}
	if _, err := cat.Exec(parseOne(t, "SELECT 1")); !errors.Is(err, table.ErrNotCatalogStatement) {
		t.Errorf("got %v", err)
	}
	if err := cat.Create(nil, false); err == nil {
		t.Error("nil table created")
	}
	// Names that fold together meet (the Kelvin sign folds with k).
	if _, err := cat.Lookup("\u212aelvin"); !errors.Is(err, table.ErrNoTable) {
		t.Errorf("got %v", err)
	}
	if _, err := cat.Exec(parseOne(t, "CREATE TABLE kelvin (a INT) "+withOK)); err != nil {
		t.Fatal(err)
	}
	if tb, err := cat.Lookup("\u212aELVIN"); err != nil || tb.Name() != "kelvin" {
		t.Errorf("got %v %v", tb, err)
	}
}

// TestCatalogConcurrent is meant for -race: creates, drops, lookups and
// listings of the same names from many goroutines.
func TestCatalogConcurrent(t *testing.T) {
	reg := ddltest.Registry()
	cat := table.NewCatalogWith(reg)
	var tables []*table.Table
	for i := range 4 {
		ct := parseOne(t, fmt.Sprintf("CREATE TABLE t%d (a INT) %s", i, withOK)).(*table.CreateTable)
		tb, err := reg.NewTable(ct.Def)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				tb := tables[(g+i)%len(tables)]
				switch i % 5 {
				case 0:
					if err := cat.Create(tb, false); err != nil && !errors.Is(err, table.ErrTableExists) {
						t.Error(err)
					}
				case 1:
					if err := cat.Drop(tb.Name(), false); err != nil && !errors.Is(err, table.ErrNoTable) {
						t.Error(err)
					}
				case 2:
					if _, err := cat.Lookup(tb.Name()); err != nil && !errors.Is(err, table.ErrNoTable) {
						t.Error(err)
					}
				case 3:
					for _, l := range cat.List() {
						_ = l.Name()
					}
				case 4:
					if _, err := cat.Exec(&table.ShowTables{}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// ColumnsFromArrow gives each field FromArrow's type (package types tests
// the mapping itself).
func TestColumnsFromArrow(t *testing.T) {
	cols, err := table.ColumnsFromArrow(arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "Europe/Berlin"}, Nullable: true},
	}, nil))
	if err != nil || len(cols) != 2 || cols[0].Type.String() != "BIGINT NOT NULL" || cols[1].Type.String() != "TIMESTAMP_LTZ(3)" {
		t.Errorf("got %v %v", cols, err)
	}
}

func TestRegistryPanics(t *testing.T) {
	for name, f := range map[string]func(r *table.Registry){
		"nil connector": func(r *table.Registry) { r.RegisterConnector(nil) },
		"nil format":    func(r *table.Registry) { r.RegisterFormat(nil) },
		"empty name":    func(r *table.Registry) { r.RegisterFormat(ddltest.Format{}) },
		"twice":         func(r *table.Registry) { r.RegisterConnector(ddltest.Connector{}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f(ddltest.Registry())
		}()
	}
	if _, err := table.NewRegistry().LookupConnector("x"); !errors.Is(err, table.ErrUnknownConnector) || !strings.Contains(err.Error(), "none registered") {
		t.Errorf("got %v", err)
	}
}

// TestDeclarations guards the data the table layer and the docs rely
// on: no key declared twice, defaults that parse, descriptions present.
// The model providers' declarations are held to the same.
func TestDeclarations(t *testing.T) {
	sets := []*options.Set{table.TableOptions, ddltest.Connector{}.Options(), ddltest.Registry().Formats()[0].Options(), ddltest.Registry().Formats()[1].Options(), model.Every}
	for _, p := range model.Default.Providers() {
		sets = append(sets, p.Options())
	}
	for _, set := range sets {
		seen := map[string]bool{}
		var kvs []options.KV
		for _, o := range set.Options {
			for _, k := range append([]string{o.Key}, o.Aliases...) {
				if seen[k] {
					t.Errorf("%s: key %q declared twice", set.Owner, k)
				}
				seen[k] = true
			}
			if o.Refused == "" && o.Description == "" {
				t.Errorf("%s: %q has no description", set.Owner, o.Key)
			}
			if o.Default != "" {
				kvs = append(kvs, options.KV{Key: o.Key, Value: o.Default})
			}
		}
		if _, err := options.Parse(kvs, nil, set); err != nil && !errors.Is(err, options.ErrMissing) {
			t.Errorf("%s: defaults do not parse: %v", set.Owner, err)
		}
	}
}

// An ALTER TABLE whose options do not bind leaves the table as it was, and
// one that binds replaces it as a whole.
func TestAlterTableKeepsTableOnError(t *testing.T) {
	cat := table.NewCatalogWith(ddltest.Registry())
	exec := func(src string) (*table.Result, error) {
		t.Helper()
		sts, err := parse.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		return cat.Exec(sts[0])
	}
	if _, err := exec(`CREATE TABLE t (a INT) WITH ('connector' = 'kafka-sharegroup', 'format' = 'json', 'bootstrap.servers' = 'h:9092', 'topic' = 'orders', 'share-group-id' = 'g')`); err != nil {
		t.Fatal(err)
	}
	before, _ := cat.Lookup("t")
	if _, err := exec(`ALTER TABLE t SET ('scan.on-decode-error' = 'skip', 'topic' = 'other')`); !errors.Is(err, options.ErrInvalid) {
		t.Fatalf("invalid ALTER: got %v, want an error wrapping options.ErrInvalid", err)
	}
	after, _ := cat.Lookup("t")
	if after != before || after.DDL() != before.DDL() {
		t.Fatalf("a refused ALTER changed the table:\n%s", after.DDL())
	}
	if _, err := exec(`ALTER TABLE t SET ('scan.on-decode-error' = 'release')`); err != nil {
		t.Fatal(err)
	}
	after, _ = cat.Lookup("t")
	if v, _ := after.Bound.Def.Option("scan.on-decode-error"); v != "release" {
		t.Fatalf("ALTER did not take: %s", after.DDL())
	}
	if v, _ := before.Bound.Def.Option("scan.on-decode-error"); v != "" {
		t.Fatalf("ALTER changed the old table's definition in place: %s", before.DDL())
	}
}

// A computed column built in Go sits at its position among the source's
// columns; Validate refuses one out of place or named twice, and a negative
// watermark delay. Without package query linked in, binding one says so.
func TestComputedColumnsInGo(t *testing.T) {
	src := []types.Column{{Name: "a", Type: types.IntType()}, {Name: "b", Type: types.IntType()}}
	def := table.NewDefinition("t", src, nil)
	def.Computed = []table.Computed{{Column: types.Column{Name: "c", Expr: "a + b"}, Pos: 1}}
	var names []string
	for _, c := range def.Columns() {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "a,c,b" {
		t.Fatalf("columns %s, want a,c,b", got)
	}
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(d *table.Definition)
		want string
	}{
		{"position", func(d *table.Definition) { d.Computed[0].Pos = 7 }, "position 7"},
		{"duplicate", func(d *table.Definition) { d.Computed[0].Name = "B" }, "duplicate column 'b'"},
		{"no expression", func(d *table.Definition) { d.Computed[0].Expr = "" }, "has no expression"},
		{"delay", func(d *table.Definition) {
			d.Watermark = &table.Watermark{Column: "a", Expr: "a", Delay: -1}
		}, "negative"},
	} {
		d := def.Clone()
		tc.edit(d)
		err := d.Validate()
		if !errors.Is(err, table.ErrInvalidDefinition) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an invalid definition saying %q", tc.name, err, tc.want)
		}
	}
	_, err := table.Bind(def)
	if !errors.Is(err, table.ErrInvalidDefinition) || !strings.Contains(err.Error(), "computed column 'c'") {
		t.Errorf("bind without package query: %v", err)
	}
}
