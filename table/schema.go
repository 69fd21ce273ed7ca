package table

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Column is one column of a table.
type Column struct {
	// Name as written (backticks removed); lookups ignore case.
	Name    string
	Type    *types.DataType
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

// Definition is a table as CREATE TABLE declared it, before it is bound to a
// connector and a format.
type Definition struct {
	Name        string
	IfNotExists bool
	Schema      Schema
	Comment     string
	// Options are the WITH clause's pairs, in the order written.
	Options []options.KV
	// Computed are the computed columns, in the order written, each with
	// its position among all the columns (Columns).
	Computed []Computed
	// Watermark is the WATERMARK clause, nil without one.
	Watermark *Watermark
	// PrimaryKey is the PRIMARY KEY (...) NOT ENFORCED constraint, nil
	// without one. Only a connector that upserts by it takes one
	// (KeyedConnector); Bind refuses it elsewhere.
	PrimaryKey *PrimaryKey
}

// PrimaryKey is PRIMARY KEY (columns) NOT ENFORCED, as a table constraint
// or on one column. NOT ENFORCED is the only mode, as in Flink: kshare
// does not own the data and never checks that keys are unique; a sink
// that upserts uses the key to find the row a change replaces.
type PrimaryKey struct {
	// Name is the constraint's name (CONSTRAINT name PRIMARY KEY ...),
	// empty when it has none.
	Name string
	// Columns are the key's columns, in the order written; each is a
	// physical column of the table.
	Columns []string
}

// String is the constraint as CREATE TABLE declares it.
func (k *PrimaryKey) String() string {
	var b strings.Builder
	if k.Name != "" {
		b.WriteString("CONSTRAINT " + types.QuoteIdent(k.Name) + " ")
	}
	b.WriteString("PRIMARY KEY (")
	for i, c := range k.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(types.QuoteIdent(c))
	}
	b.WriteString(") NOT ENFORCED")
	return b.String()
}

// KeyIndexes are the positions of the primary key's columns among the
// physical columns of d (Schema.Physical), in key order; nil without a
// key, or when a key column is not a physical column (Validate says so).
func (d *Definition) KeyIndexes() []int {
	if d.PrimaryKey == nil {
		return nil
	}
	phys, _ := d.Schema.Physical()
	out := make([]int, 0, len(d.PrimaryKey.Columns))
	for _, name := range d.PrimaryKey.Columns {
		k := slices.IndexFunc(phys, func(c Column) bool { return strings.EqualFold(c.Name, name) })
		if k < 0 {
			return nil
		}
		out = append(out, k)
	}
	return out
}

// Computed is a computed column and its position among all the columns of
// its table (Definition.Columns).
type Computed struct {
	Column
	Pos int
}

// Watermark is WATERMARK FOR column AS expr: column is the table's event
// time attribute, and the watermark of a stream is the largest value of it
// seen minus Delay.
type Watermark struct {
	Column string
	// Expr is the watermark expression as written: the column itself, or
	// the column minus an INTERVAL (Delay).
	Expr  string
	Delay time.Duration
}

// Columns are all the columns of the table in the order declared: the
// source's (Schema.Columns) with the computed ones at their positions.
func (d *Definition) Columns() []Column {
	if len(d.Computed) == 0 {
		return d.Schema.Columns
	}
	out := make([]Column, 0, len(d.Schema.Columns)+len(d.Computed))
	src, k := d.Schema.Columns, 0
	for _, c := range d.Computed {
		for len(out) < c.Pos && k < len(src) {
			out = append(out, src[k])
			k++
		}
		out = append(out, c.Column)
	}
	return append(out, src[k:]...)
}

// Index finds a column of Columns by name, ignoring case; -1 when absent.
func (d *Definition) Index(name string) int {
	return (&Schema{Columns: d.Columns()}).Index(name)
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

// ParseInterval reads the value and unit of INTERVAL 'value' unit, as in a
// WATERMARK or a window's size: a number (a fraction for SECOND) and one of
// MILLISECOND, SECOND, MINUTE, HOUR, DAY, singular or plural (Flink accepts
// both).
func ParseInterval(value, unit string) (time.Duration, error) {
	var u time.Duration
	switch strings.TrimSuffix(strings.ToUpper(unit), "S") {
	case "MILLISECOND":
		u = time.Millisecond
	case "SECOND":
		u = time.Second
	case "MINUTE":
		u = time.Minute
	case "HOUR":
		u = time.Hour
	case "DAY":
		u = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown interval unit '%s' (known: MILLISECOND, SECOND, MINUTE, HOUR, DAY)", options.Cut(unit))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f)*float64(u) > math.MaxInt64/2 {
		return 0, fmt.Errorf("interval value '%s' is not a number of %sS in range", options.Cut(value), strings.TrimSuffix(strings.ToUpper(unit), "S"))
	}
	return time.Duration(math.Round(f * float64(u))), nil
}
