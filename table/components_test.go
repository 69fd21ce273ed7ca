package table_test

import (
	"testing"

	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/internal/tabletest"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// TestNewEncoder: a format writes only if it is an EncodingFormat, and a
// sink asking a read-only one hears so by name.
func TestNewEncoder(t *testing.T) {
	cols := []types.Column{{Name: "a", Type: &types.DataType{Kind: types.Int}}}
	if _, err := table.NewEncoder(json.Format{}, cols, options.Values{}); err != nil {
		t.Errorf("json: %v", err)
	}
	f := tabletest.Format{Kind: "memory"}
	_, err := table.NewEncoder(f, cols, options.Values{})
	want := "format '" + f.Name() + "' can read but not write values"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
