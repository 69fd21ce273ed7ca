package query

import (
	"testing"

	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// testRegistry holds the 'test' connector and format, so that tables are
// defined with real DDL and bound by the real table layer; each table's
// source is a tabletest.Source with the Kafka connector's metadata keys.
func testRegistry() *table.Registry {
	return tabletest.Registry(&tabletest.Connector{Kind: "test", Keys: []table.MetadataKey{
		{Key: "topic", Type: types.StringType().WithNotNull(true)},
		{Key: "partition", Type: types.IntType().WithNotNull(true)},
		{Key: "offset", Type: types.BigIntType().WithNotNull(true)},
		{Key: "timestamp", Type: types.TimestampLTZType(3).WithNotNull(true)},
		{Key: "key", Type: types.BytesType()},
		{Key: "headers", Type: types.MapType(types.StringType().WithNotNull(true), types.BytesType())},
	}}, "test")
}

// newCatalog defines tables from DDL against the test registry.
func newCatalog(t testing.TB, ddl string) *table.Catalog {
	t.Helper()
	cat := table.NewCatalogWith(testRegistry())
	sts, err := parse.Parse(ddl)
	if err != nil {
		t.Fatalf("ddl: %v", err)
	}
	for _, st := range sts {
		if _, err := cat.Exec(st); err != nil {
			t.Fatalf("ddl: %v", err)
		}
	}
	return cat
}

// sourceOf is the in-memory source behind a catalog table.
func sourceOf(t testing.TB, cat *table.Catalog, name string) *tabletest.Source {
	t.Helper()
	tbl, err := cat.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Source.(*tabletest.Source)
}
