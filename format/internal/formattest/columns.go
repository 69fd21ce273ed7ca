package formattest

import (
	"fmt"
	"strings"

	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// ParseColumns reads "name TYPE [NOT NULL], ..." into columns, as the
// column list of CREATE TABLE: the format tests read types with the
// parser every table does (package parse), so a type a test names is one
// a user can write.
// An empty list is no columns.
func ParseColumns(s string) ([]types.Column, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sts, err := parse.Parse("CREATE TABLE formattest (" + s + ")")
	if err != nil {
		return nil, fmt.Errorf("columns %q: %w", s, err)
	}
	return sts[0].(*table.CreateTable).Def.Schema.Columns, nil
}
