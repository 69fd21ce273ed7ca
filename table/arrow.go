package table

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/types"
)

// ColumnsFromArrow makes the (physical) columns of an Arrow schema, one
// per field, in order, with FromArrow's types.
func ColumnsFromArrow(s *arrow.Schema) ([]types.Column, error) {
	cols := make([]types.Column, 0, s.NumFields())
	for _, f := range s.Fields() {
		t, err := types.FromArrow(f.Type, f.Nullable)
		if err != nil {
			return nil, fmt.Errorf("field '%s': %w", f.Name, err)
		}
		cols = append(cols, types.Column{Name: f.Name, Type: t})
	}
	return cols, nil
}
