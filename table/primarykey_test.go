package table_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kshare/kshare/internal/ddltest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/sinks/sinkspec"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// keyed is a write-only connector that takes a PRIMARY KEY.
type keyed struct{ ddltest.WriteOnly }

func (keyed) TakesPrimaryKey() {}

func keyedCatalog(t *testing.T) *table.Catalog {
	t.Helper()
	r := ddltest.Registry()
	r.RegisterConnector(keyed{ddltest.WriteOnly{Kind: "keyed", Decl: sinkspec.BlackholeOptions}})
	return table.NewCatalogWith(r)
}

// A key shows in DESCRIBE as Flink shows it (PRI(...) on each key column)
// and in SHOW CREATE TABLE as a table constraint, which parses back to the
// same definition, whichever way it was declared.
func TestPrimaryKeyShown(t *testing.T) {
	for _, src := range []string{
		"CREATE TABLE k (a INT, b STRING, c INT, CONSTRAINT pk PRIMARY KEY (c, a) NOT ENFORCED) WITH ('connector' = 'keyed')",
		"CREATE TABLE k (a INT PRIMARY KEY NOT ENFORCED, b STRING) WITH ('connector' = 'keyed')",
	} {
		cat := keyedCatalog(t)
		if _, err := cat.Exec(parseOne(t, src)); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		res, err := cat.Exec(parseOne(t, "DESCRIBE k"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Columns[3] != "key" {
			t.Fatalf("DESCRIBE's columns %q, want key fourth", res.Columns)
		}
		var keys []string
		for _, row := range res.Rows {
			keys = append(keys, row[0]+"="+row[3])
		}
		show, err := cat.Exec(parseOne(t, "SHOW CREATE TABLE k"))
		if err != nil {
			t.Fatal(err)
		}
		ddl := show.Rows[0][0]
		tb, _ := cat.Lookup("k")
		switch {
		case strings.Contains(src, "pk"):
			if got, want := strings.Join(keys, " "), "a=PRI(c, a) b= c=PRI(c, a)"; got != want {
				t.Errorf("DESCRIBE keys %q, want %q", got, want)
			}
			if !strings.Contains(ddl, "  `c` INT,\n  CONSTRAINT `pk` PRIMARY KEY (`c`, `a`) NOT ENFORCED\n)") {
				t.Errorf("SHOW CREATE TABLE:\n%s", ddl)
			}
		default:
			if got, want := strings.Join(keys, " "), "a=PRI(a) b="; got != want {
				t.Errorf("DESCRIBE keys %q, want %q", got, want)
			}
			if !strings.Contains(ddl, "  `b` STRING,\n  PRIMARY KEY (`a`) NOT ENFORCED\n)") {
				t.Errorf("SHOW CREATE TABLE:\n%s", ddl)
			}
		}
		back, err := parse.Parse(ddl)
		if err != nil {
			t.Fatalf("SHOW CREATE TABLE does not parse back: %v\n%s", err, ddl)
		}
		if def := back[0].(*table.CreateTable).Def; !def.Equal(tb.Bound.Def) {
			t.Errorf("%s parses back to %+v, want %+v", ddl, def.PrimaryKey, tb.Bound.Def.PrimaryKey)
		}
		if got := tb.Bound.Def.Clone(); !got.Equal(tb.Bound.Def) || got.PrimaryKey == tb.Bound.Def.PrimaryKey {
			t.Errorf("Clone's key %+v is not a copy of %+v", got.PrimaryKey, tb.Bound.Def.PrimaryKey)
		}
	}
}

// A definition built in Go is checked as a parsed one is.
func TestPrimaryKeyValidateInGo(t *testing.T) {
	def := table.NewDefinition("g", []types.Column{
		{Name: "a", Type: types.IntType()},
		{Name: "o", Type: types.BigIntType(), Metadata: true, MetadataKey: "offset"},
	}, map[string]string{"connector": "keyed"})
	for _, tc := range []struct {
		cols []string
		want string
	}{
		{nil, "the PRIMARY KEY names no column"},
		{[]string{"x"}, "PRIMARY KEY column 'x' is not a column of table 'g' (its physical columns: `a`)"},
		{[]string{"o"}, "PRIMARY KEY column 'o' is a METADATA column"},
		{[]string{"a", "A"}, "PRIMARY KEY names column 'A' twice"},
	} {
		def.PrimaryKey = &table.PrimaryKey{Columns: tc.cols}
		err := def.Validate()
		if !errors.Is(err, table.ErrInvalidDefinition) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("key %q: got %v, want %q", tc.cols, err, tc.want)
		}
	}
	def.PrimaryKey = &table.PrimaryKey{Columns: []string{"A"}}
	if err := def.Validate(); err != nil {
		t.Errorf("key A: %v", err)
	}
	if got := def.KeyIndexes(); len(got) != 1 || got[0] != 0 {
		t.Errorf("KeyIndexes %v, want [0]", got)
	}
}

// Only a connector that writes by key takes one.
func TestPrimaryKeyRefusedByOtherConnectors(t *testing.T) {
	cat := keyedCatalog(t)
	_, err := cat.Exec(parseOne(t, "CREATE TABLE k (a INT PRIMARY KEY NOT ENFORCED) "+withOK))
	if !errors.Is(err, table.ErrInvalidDefinition) || !strings.Contains(err.Error(), "connector 'kafka-sharegroup' takes no PRIMARY KEY") {
		t.Errorf("got %v", err)
	}
}
