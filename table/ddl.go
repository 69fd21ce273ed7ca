package table

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// ErrInvalidDefinition is returned for a table definition that reads well
// but cannot be (two columns of one name, DECIMAL(40, 2), ...): by Validate
// for a definition built in Go, and by the parser (package parse) for one
// written in SQL.
var ErrInvalidDefinition = errors.New("invalid table definition")

// Masked stands for a secret value wherever a definition is shown.
const Masked = "******"

// NewDefinition builds the definition of a table from Go values, as CREATE
// TABLE would. The options are written in a fixed order: 'connector' first,
// then 'format', then the rest sorted, so that SHOW CREATE TABLE is stable.
// Set Definition.Options directly to keep an order of your own.
func NewDefinition(name string, cols []types.Column, opts map[string]string) *Definition {
	d := &Definition{Name: name, Schema: types.Schema{Columns: slices.Clone(cols)}}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		switch k {
		case KeyConnector:
			return 0
		case KeyFormat, KeyValueFormat:
			return 1
		}
		return 2
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		d.Options = append(d.Options, options.KV{Key: k, Value: opts[k]})
	}
	return d
}

// DDL is the canonical CREATE TABLE text of d, which parses back to an
// equal definition (IF NOT EXISTS, a property of the statement, left out).
// The value of every key for which mask returns true is written as
// Masked; a nil mask shows every value.
func (d *Definition) DDL(mask func(key string) bool) string {
	var b strings.Builder
	d.write(&b, false, mask)
	return b.String()
}

// String is the DDL of d with secrets masked: the keys that the registered
// connector and format named by d declare secret, and any key whose name
// looks secret (options.LooksSecret), so that a definition can be logged.
func (d *Definition) String() string { return d.DDL(d.secret) }

func (d *Definition) secret(key string) bool {
	if options.LooksSecret(key) {
		return true
	}
	if name, ok := d.Option(KeyConnector); ok {
		if c, err := LookupConnector(name); err == nil && c.Options().Secret(key) {
			return true
		}
	}
	for _, k := range []string{KeyFormat, KeyValueFormat} {
		if name, ok := d.Option(k); ok {
			if f, err := LookupFormat(name); err == nil && f.Options().Secret(key) {
				return true
			}
		}
	}
	return false
}

func (d *Definition) write(b *strings.Builder, ifNotExists bool, mask func(string) bool) {
	b.WriteString("CREATE TABLE ")
	if ifNotExists {
		b.WriteString("IF NOT EXISTS ")
	}
	b.WriteString(types.QuoteIdent(d.Name))
	b.WriteString(" (\n")
	cols := d.Columns()
	for i, c := range cols {
		b.WriteString("  ")
		b.WriteString(c.String())
		if i < len(cols)-1 || d.Watermark != nil || d.PrimaryKey != nil {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	if w := d.Watermark; w != nil {
		fmt.Fprintf(b, "  WATERMARK FOR %s AS %s", types.QuoteIdent(w.Column), w.Expr)
		if d.PrimaryKey != nil {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	if k := d.PrimaryKey; k != nil {
		// Flink's SHOW CREATE TABLE writes the key as a table constraint
		// whichever way it was declared.
		fmt.Fprintf(b, "  %s\n", k)
	}
	b.WriteString(")")
	if d.Comment != "" {
		b.WriteString(" COMMENT ")
		b.WriteString(types.QuoteString(d.Comment))
	}
	writeWith(b, d.Options, mask)
}

// writeWith writes a WITH clause of opts on lines of their own, the value
// of every key for which mask returns true as Masked; nothing when opts is
// empty.
func writeWith(b *strings.Builder, opts []options.KV, mask func(string) bool) {
	if len(opts) == 0 {
		return
	}
	b.WriteString("\nWITH (\n")
	for i, kv := range opts {
		v := kv.Value
		if mask != nil && mask(kv.Key) {
			v = Masked
		}
		fmt.Fprintf(b, "  %s = %s", types.QuoteString(kv.Key), types.QuoteString(v))
		if i < len(opts)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString(")")
}

// Equal reports whether d and o define the same table: name, columns,
// comment, options in order, and IF NOT EXISTS.
func (d *Definition) Equal(o *Definition) bool {
	if d.Name != o.Name || d.IfNotExists != o.IfNotExists || d.Comment != o.Comment ||
		len(d.Schema.Columns) != len(o.Schema.Columns) || len(d.Options) != len(o.Options) {
		return false
	}
	for i := range d.Schema.Columns {
		if !d.Schema.Columns[i].Equal(o.Schema.Columns[i]) {
			return false
		}
	}
	for i := range d.Options {
		if d.Options[i] != o.Options[i] {
			return false
		}
	}
	if len(d.Computed) != len(o.Computed) || (d.Watermark == nil) != (o.Watermark == nil) ||
		(d.Watermark != nil && *d.Watermark != *o.Watermark) {
		return false
	}
	if (d.PrimaryKey == nil) != (o.PrimaryKey == nil) ||
		(d.PrimaryKey != nil && (d.PrimaryKey.Name != o.PrimaryKey.Name || !slices.Equal(d.PrimaryKey.Columns, o.PrimaryKey.Columns))) {
		return false
	}
	for i, c := range d.Computed {
		// The type is derived when bound, not declared.
		oc := o.Computed[i]
		if c.Pos != oc.Pos || c.Name != oc.Name || c.Expr != oc.Expr || c.Comment != oc.Comment {
			return false
		}
	}
	return true
}

// Clone returns a copy of d that shares nothing mutable with it (types are
// immutable and shared).
func (d *Definition) Clone() *Definition {
	c := *d
	c.Schema.Columns = slices.Clone(d.Schema.Columns)
	c.Options = slices.Clone(d.Options)
	c.Computed = slices.Clone(d.Computed)
	if d.Watermark != nil {
		w := *d.Watermark
		c.Watermark = &w
	}
	if d.PrimaryKey != nil {
		k := PrimaryKey{Name: d.PrimaryKey.Name, Columns: slices.Clone(d.PrimaryKey.Columns)}
		c.PrimaryKey = &k
	}
	return &c
}

// Validate checks what parse.Parse checks of a definition built in Go: a name,
// at least one column, column names unique ignoring case, and every type
// well formed. Every problem wraps ErrInvalidDefinition.
func (d *Definition) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, options.Errorf(ErrInvalidDefinition, "", format, args...))
	}
	if d.Name == "" {
		bad("the table has no name")
	}
	if len(d.Schema.Columns) == 0 {
		bad("table '%s' needs at least one column", options.Cut(d.Name))
	}
	for i, c := range d.Schema.Columns {
		if c.Name == "" {
			bad("column %d has no name", i+1)
		}
		if j := d.Schema.Index(c.Name); j < i {
			bad("duplicate column '%s' (column names ignore case)", options.Cut(c.Name))
		}
		if c.Type == nil {
			bad("column '%s' has no type", options.Cut(c.Name))
		} else if err := c.Type.Validate(); err != nil {
			bad("column '%s': %v", options.Cut(c.Name), err)
		}
		if c.Metadata && c.MetadataKey == "" && c.Name == "" {
			bad("metadata column %d has no key", i+1)
		}
		if !c.Metadata && (c.MetadataKey != "" || c.Virtual) {
			bad("column '%s' has a metadata key or VIRTUAL but is not a METADATA column", options.Cut(c.Name))
		}
		if c.Expr != "" {
			bad("column '%s' has an expression but is in Schema.Columns; a computed column belongs in Definition.Computed", options.Cut(c.Name))
		}
	}
	all := d.Columns()
	for i, c := range d.Computed {
		switch {
		case c.Name == "":
			bad("computed column %d has no name", i+1)
		case c.Expr == "":
			bad("computed column '%s' has no expression", options.Cut(c.Name))
		case c.Metadata || c.MetadataKey != "" || c.Virtual:
			bad("computed column '%s' cannot be a METADATA column", options.Cut(c.Name))
		case c.Pos < 0 || c.Pos >= len(all) || all[c.Pos].Name != c.Name || (i > 0 && c.Pos <= d.Computed[i-1].Pos):
			bad("computed column '%s' has position %d, out of the order of the columns", options.Cut(c.Name), c.Pos)
		}
	}
	for i, c := range all {
		// Duplicates among the source columns are reported above.
		if j := d.Index(c.Name); j < i && (c.Expr != "" || all[j].Expr != "") {
			bad("duplicate column '%s' (column names ignore case)", options.Cut(c.Name))
		}
	}
	if w := d.Watermark; w != nil {
		if w.Column == "" || w.Expr == "" {
			bad("the WATERMARK needs a column and an expression")
		}
		if w.Delay < 0 {
			bad("WATERMARK FOR '%s': the delay %s is negative; write the column minus a positive INTERVAL", options.Cut(w.Column), w.Delay)
		}
	}
	for _, m := range d.KeyProblems() {
		bad("%s", m)
	}
	return errors.Join(errs...)
}

// KeyProblems says what is wrong with the PRIMARY KEY's columns, one
// message each (none without a key): each must be a physical column of
// the table, named once, since a metadata or computed column is not
// stored where the key finds rows. The parser reports them at the
// constraint; Validate wraps them in ErrInvalidDefinition.
func (d *Definition) KeyProblems() []string {
	k := d.PrimaryKey
	if k == nil {
		return nil
	}
	if len(k.Columns) == 0 {
		return []string{"the PRIMARY KEY names no column"}
	}
	var out []string
	all := d.Columns()
	for i, name := range k.Columns {
		j := d.Index(name)
		switch {
		case j < 0:
			names := make([]string, 0, len(all))
			for _, c := range all {
				if c.Expr == "" && !c.Metadata {
					names = append(names, types.QuoteIdent(c.Name))
				}
			}
			out = append(out, fmt.Sprintf("PRIMARY KEY column '%s' is not a column of table '%s' (its physical columns: %s)",
				options.Cut(name), options.Cut(d.Name), strings.Join(names, ", ")))
		case all[j].Expr != "":
			out = append(out, fmt.Sprintf("PRIMARY KEY column '%s' is a computed column; a key is made of physical columns", options.Cut(name)))
		case all[j].Metadata:
			out = append(out, fmt.Sprintf("PRIMARY KEY column '%s' is a METADATA column; a key is made of physical columns", options.Cut(name)))
		case slices.IndexFunc(k.Columns[:i], func(c string) bool { return strings.EqualFold(c, name) }) >= 0:
			out = append(out, fmt.Sprintf("PRIMARY KEY names column '%s' twice", options.Cut(name)))
		}
	}
	return out
}

// MetadataMarkdown documents a connector's metadata keys as a Markdown
// table (key, type, description), for docs/connectors.md.
func MetadataMarkdown(keys []MetadataKey) string {
	var b strings.Builder
	b.WriteString("| Key | Type | Description |\n| --- | --- | --- |\n")
	for _, k := range keys {
		desc := strings.Join(strings.Fields(strings.ReplaceAll(k.Description, "|", `\|`)), " ")
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", k.Key, k.Type, desc)
	}
	return b.String()
}
