package types

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Column is one column of a table.
type Column struct {
	// Name as written (backticks removed); lookups ignore case.
	Name    string
	Type    *DataType
	Comment string
	// Metadata columns are filled by the connector from the record's
	// metadata, not by the format from its value.
	Metadata bool
	// MetadataKey is the FROM 'key' of a metadata column; empty means the
	// column's name is the key.
	MetadataKey string
	// Virtual metadata columns are read-only (the only kind a source has).
	Virtual bool
	// Expr is a computed column's expression (name AS expr), as written;
	// empty for the others. A computed column is in Definition.Computed,
	// not in Schema.Columns (the source's columns), and its Type is nil
	// until the table is bound (see ExprTyper).
	Expr string
}

// Key is the metadata key a metadata column reads.
func (c Column) Key() string {
	if c.MetadataKey != "" {
		return c.MetadataKey
	}
	return c.Name
}

// IsProctime reports whether c is a processing time attribute: a computed
// column AS PROCTIME().
func (c Column) IsProctime() bool {
	return strings.EqualFold(strings.Join(strings.Fields(c.Expr), ""), "PROCTIME()")
}

// Schema is the ordered columns of a table.
type Schema struct {
	Columns []Column
}

// Index finds a column by name, ignoring case; -1 when absent.
func (s *Schema) Index(name string) int {
	for i, c := range s.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// Physical returns the columns a format decodes, in table order, with their
// positions in the full schema.
func (s *Schema) Physical() (cols []Column, idx []int) {
	for i, c := range s.Columns {
		if !c.Metadata {
			cols = append(cols, c)
			idx = append(idx, i)
		}
	}
	return cols, idx
}

// Arrow is the Arrow schema of the table's batches: one field per column, in
// table order, named as declared.
func (s *Schema) Arrow() *arrow.Schema {
	fs := make([]arrow.Field, len(s.Columns))
	for i, c := range s.Columns {
		fs[i] = arrow.Field{Name: c.Name, Type: c.Type.ArrowType(), Nullable: c.Type.Nullable()}
	}
	return arrow.NewSchema(fs, nil)
}

// String is the column as CREATE TABLE declares it:
// `ts` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL COMMENT '...'.
func (c Column) String() string {
	s := QuoteIdent(c.Name)
	if c.Expr == "" {
		s += " " + typeString(c.Type)
	}
	if x := c.Extras(); x != "" {
		s += " " + x
	}
	if c.Comment != "" {
		s += " COMMENT " + QuoteString(c.Comment)
	}
	return s
}

// Extras is what DESCRIBE shows of a column besides its type: METADATA,
// FROM 'key' and VIRTUAL, as declared, or AS expr for a computed column;
// empty for a physical column.
func (c Column) Extras() string {
	if c.Expr != "" {
		return "AS " + c.Expr
	}
	if !c.Metadata {
		return ""
	}
	s := "METADATA"
	if c.MetadataKey != "" {
		s += " FROM " + QuoteString(c.MetadataKey)
	}
	if c.Virtual {
		s += " VIRTUAL"
	}
	return s
}

func typeString(t *DataType) string {
	if t == nil {
		return "<no type>"
	}
	return t.String()
}

// Equal reports whether c and o declare the same column.
func (c Column) Equal(o Column) bool {
	return c.Name == o.Name && c.Comment == o.Comment && c.Metadata == o.Metadata &&
		c.MetadataKey == o.MetadataKey && c.Virtual == o.Virtual && c.Expr == o.Expr &&
		(c.Type == o.Type || (c.Type != nil && o.Type != nil && c.Type.Equal(o.Type)))
}
