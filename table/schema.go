package table

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/options"
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
}

// Key is the metadata key a metadata column reads.
func (c Column) Key() string {
	if c.MetadataKey != "" {
		return c.MetadataKey
	}
	return c.Name
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

// Definition is a table as CREATE TABLE declared it, before it is bound to a
// connector and a format.
type Definition struct {
	Name        string
	IfNotExists bool
	Schema      Schema
	Comment     string
	// Options are the WITH clause's pairs, in the order written.
	Options []options.KV
}

// Option returns the value of the WITH clause key (exact match) and whether
// it was given.
func (d *Definition) Option(key string) (string, bool) {
	for _, kv := range d.Options {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

// Table is a table in the catalog: its definition, bound to a connector and
// a format, and the source that reads it. A Table is immutable.
type Table struct {
	Bound  *Bound
	Source Source
}

// Name is the table's name as declared.
func (t *Table) Name() string { return t.Bound.Def.Name }

// Schema is the table's columns.
func (t *Table) Schema() *Schema { return &t.Bound.Def.Schema }
