package table

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Definition is a table as CREATE TABLE declared it, before it is bound to a
// connector and a format.
type Definition struct {
	Name        string
	IfNotExists bool
	Schema      types.Schema
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
		k := slices.IndexFunc(phys, func(c types.Column) bool { return strings.EqualFold(c.Name, name) })
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
	types.Column
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
func (d *Definition) Columns() []types.Column {
	if len(d.Computed) == 0 {
		return d.Schema.Columns
	}
	out := make([]types.Column, 0, len(d.Schema.Columns)+len(d.Computed))
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
	return (&types.Schema{Columns: d.Columns()}).Index(name)
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
	Source flow.Source
}

// Name is the table's name as declared.
func (t *Table) Name() string { return t.Bound.Def.Name }

// Schema is the table's columns.
func (t *Table) Schema() *types.Schema { return &t.Bound.Def.Schema }

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
