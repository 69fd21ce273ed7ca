package table

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kshare/kshare/internal/errlist"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Keys of the WITH clause that the table layer reads itself: they choose
// the connector and the format, whose own declarations cover the rest.
const (
	KeyConnector = "connector"
	KeyFormat    = "format"
	// KeyValueFormat is Flink's other name for 'format'.
	KeyValueFormat = "value.format"
)

// TableOptions documents the keys every table has. Bind reads them before
// it knows which declarations the other keys follow, so they are not
// parsed with options.Parse; the set is the source of the first table of
// docs/connectors.md.
var TableOptions = &options.Set{
	Owner: "every table",
	Options: []options.Option{
		{Key: KeyConnector, Type: options.String, Required: true,
			Description: "Connector that reads the table: 'kafka-sharegroup' (a share group's queue) or 'kafka' (the topic's log, read without taking); or that writes it: 'filesystem' (files in a directory), 'jdbc' (a PostgreSQL table, also looked up by key in a lookup join), 'print', 'blackhole'."},
		{Key: KeyFormat, Aliases: []string{KeyValueFormat}, Type: options.String, Required: true,
			Description: "Format of the record values: 'json' or 'raw'; of a 'filesystem' table's files, 'csv', 'json' or 'parquet'. Required by every connector but 'print' and 'blackhole', which take none."},
	},
}

// ErrMetadata is returned (wrapped) for a metadata column that reads a key
// its connector does not have, or whose type cannot hold the key's values.
var ErrMetadata = errors.New("invalid metadata column")

// BindError is every problem that binding one table definition found. Each
// problem wraps its kind: options.ErrUnknownOption, ErrMissing, ErrInvalid,
// ErrDuplicate or ErrConflict for the WITH clause, ErrUnknownConnector,
// ErrUnknownFormat, ErrMetadata, ErrInvalidDefinition, or what the format
// or the connector returned.
type BindError struct {
	Table    string
	Problems []error
}

func (e *BindError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return fmt.Sprintf("table '%s': %s", options.Cut(e.Table), strings.Join(msgs, "; "))
}

// Unwrap lets errors.Is and errors.As see each problem.
func (e *BindError) Unwrap() []error { return e.Problems }

// Bind checks def against the default registry; see Registry.Bind.
func Bind(def *Definition) (*Bound, error) { return Default.Bind(def) }

// NewTable binds def against the default registry and makes its source;
// see Registry.NewTable.
func NewTable(def *Definition) (*Table, error) { return Default.NewTable(def) }

// Bind checks a definition against its connector and format: it finds them
// by the 'connector' and 'format' (or 'value.format') keys, parses the WITH
// clause against both their declarations, checks each metadata column
// against the connector's keys (Column.Key, DataType.CanHold) and asks the
// format whether it can decode the physical columns. It performs no I/O and
// reports every problem it can find in one *BindError.
func (r *Registry) Bind(def *Definition) (*Bound, error) {
	var problems []error
	add := func(err error) { problems = errlist.Flatten(problems, err) }
	schemaOK := true
	if err := def.Validate(); err != nil {
		add(err)
		schemaOK = false
	}
	conn, connOK := r.component(def, add, KeyConnector)
	var c Connector
	if connOK {
		c = conn.(Connector)
	}
	_, noFormat := c.(FormatFree)
	var f Format
	own := "" // a FormatChooser's own format
	if fc, ok := c.(FormatChooser); ok {
		f, own = r.chosenFormat(def, fc, add)
	} else if !noFormat {
		if fmtr, fmtOK := r.component(def, add, KeyFormat, KeyValueFormat); fmtOK {
			f = fmtr.(Format)
		}
	}
	var values options.Values
	optionsOK := false
	// Without the connector and the format, the other keys cannot be told
	// apart from typos: report the unknown names alone. A FormatFree
	// connector's 'format' is reported as a key it does not take.
	if c != nil && (f != nil || noFormat || own != "") {
		kvs, sets, reserved := def.Options, []*options.Set{c.Options()}, []string{KeyConnector}
		switch {
		case f != nil:
			sets, reserved = append(sets, f.Options()), append(reserved, KeyFormat, KeyValueFormat)
		case own != "":
			reserved = append(reserved, KeyFormat, KeyValueFormat)
		default:
			// Said here rather than by Parse, whose list of supported
			// keys would then hold the format's.
			kvs = nil
			for _, kv := range def.Options {
				if kv.Key != KeyFormat && kv.Key != KeyValueFormat {
					kvs = append(kvs, kv)
					continue
				}
				add(options.Errorf(options.ErrUnknownOption, kv.Key, "connector '%s' takes no '%s': it writes rows in a form of its own; remove the key",
					c.Name(), options.Cut(kv.Key)))
			}
		}
		v, err := options.Parse(kvs, reserved, sets...)
		if err != nil {
			add(err)
		} else {
			values, optionsOK = v, true
		}
	}
	// A changelog's rows have a key too: the one its updates and deletes
	// are by, which an upserting sink of its rows writes by.
	_, changelog := f.(ChangelogFormat)
	if _, ok := c.(KeyedConnector); c != nil && def.PrimaryKey != nil && !ok && !changelog {
		add(options.Errorf(ErrInvalidDefinition, "", "connector '%s' takes no PRIMARY KEY, since it does not write by key; remove the constraint (connector 'jdbc' takes one, and upserts by it; so does a table in a changelog format such as 'debezium-json')",
			c.Name()))
	}
	if c != nil {
		for _, col := range def.Schema.Columns {
			if col.Metadata && col.Type != nil {
				if err := checkMetadata(c, col); err != nil {
					add(err)
				}
			}
		}
	}
	if schemaOK {
		for _, err := range bindTimeColumns(def) {
			add(err)
		}
	}
	b := &Bound{Def: def, Connector: c, Format: f, OwnFormat: own, Options: values}
	if f != nil && optionsOK && schemaOK {
		phys, _ := def.Schema.Physical()
		if _, err := f.NewDecoder(phys, values); err != nil {
			add(err)
		}
	}
	if len(problems) > 0 {
		return nil, &BindError{Table: def.Name, Problems: problems}
	}
	return b, nil
}

// ExprTyper derives the type of a computed column's expression over the
// source columns of def (Schema.Columns), or says what is wrong with it
// (an unknown column, a type mismatch). Package query sets it, since this
// package cannot plan expressions; without it a computed column is an
// error.
var exprTyper func(def *Definition, expr string) (*types.DataType, error)

// SetExprTyper installs the function that types computed columns; package
// query calls it from init.
func SetExprTyper(f func(def *Definition, expr string) (*types.DataType, error)) {
	if f == nil {
		panic("table: SetExprTyper(nil)")
	}
	exprTyper = f
}

// bindTimeColumns types the computed columns of def (setting their Type)
// and checks its WATERMARK: its column exists and is a TIMESTAMP(3) or a
// TIMESTAMP_LTZ(3), as Flink requires of an event time attribute.
func bindTimeColumns(def *Definition) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, options.Errorf(ErrInvalidDefinition, "", format, args...))
	}
	for i := range def.Computed {
		c := &def.Computed[i]
		if exprTyper == nil {
			bad("computed column '%s': computed columns need package query linked in to be checked", options.Cut(c.Name))
			continue
		}
		t, err := exprTyper(def, c.Expr)
		if err != nil {
			bad("computed column '%s': %v", options.Cut(c.Name), err)
			continue
		}
		c.Type = t
	}
	w := def.Watermark
	if w == nil {
		return errs
	}
	all := def.Columns()
	k := def.Index(w.Column)
	if k < 0 {
		names := make([]string, len(all))
		for i, c := range all {
			names[i] = c.Name
		}
		bad("WATERMARK FOR '%s': no such column (columns: %s)", options.Cut(w.Column), strings.Join(names, ", "))
		return errs
	}
	if t := all[k].Type; t != nil && !IsTimeAttributeType(t) {
		bad("WATERMARK FOR '%s': the column is %s; an event time attribute is a TIMESTAMP(3) or a TIMESTAMP_LTZ(3) (CAST it in a computed column)", options.Cut(w.Column), t)
	}
	return errs
}

// IsTimeAttributeType reports whether t can be an event time attribute: a
// TIMESTAMP(3) or TIMESTAMP_LTZ(3), nullable or not.
func IsTimeAttributeType(t *types.DataType) bool {
	return (t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ) && t.Precision == 3
}

// NewTable binds def and makes its source with the connector's NewSource,
// which performs no I/O either. The table holds a copy of def.
func (r *Registry) NewTable(def *Definition) (*Table, error) {
	b, err := r.Bind(def.Clone())
	if err != nil {
		return nil, err
	}
	src, err := b.Connector.NewSource(b)
	if err != nil {
		return nil, &BindError{Table: def.Name, Problems: []error{err}}
	}
	return &Table{Bound: b, Source: src}, nil
}

// component finds the connector (keys = 'connector') or the format (keys =
// 'format', 'value.format') that def names. It reports a missing key, a key
// set twice and an unknown name through add.
func (r *Registry) component(def *Definition, add func(error), keys ...string) (any, bool) {
	what := keys[0]
	name, found := optionValue(def, add, keys...)
	if !found {
		var names []string
		if what == KeyConnector {
			for _, c := range r.Connectors() {
				names = append(names, c.Name())
			}
		} else {
			for _, f := range r.Formats() {
				names = append(names, f.Name())
			}
		}
		missing(def, add, what, names)
		return nil, false
	}
	if what == KeyConnector {
		c, err := r.LookupConnector(name)
		if err != nil {
			add(err)
			return nil, false
		}
		return c, true
	}
	f, err := r.LookupFormat(name)
	if err != nil {
		add(err)
		return nil, false
	}
	return f, true
}

// chosenFormat finds the format of a table whose connector chooses among
// its own list: one of the connector's own (returned by name, with no
// Format) or a registered one.
func (r *Registry) chosenFormat(def *Definition, fc FormatChooser, add func(error)) (Format, string) {
	name, found := optionValue(def, add, KeyFormat, KeyValueFormat)
	if !found {
		missing(def, add, KeyFormat, fc.Formats())
		return nil, ""
	}
	if slices.Contains(fc.OwnFormats(), name) {
		return nil, name
	}
	if !slices.Contains(fc.Formats(), name) {
		hint := ""
		if near := options.Closest(name, fc.Formats()); near != "" {
			hint = fmt.Sprintf("did you mean '%s'? ", near)
		}
		add(fmt.Errorf("%w '%s' for connector '%s' (%sit writes: %s)", ErrUnknownFormat, options.Cut(name), fc.Name(), hint, strings.Join(fc.Formats(), ", ")))
		return nil, ""
	}
	f, err := r.LookupFormat(name)
	if err != nil {
		add(err)
		return nil, ""
	}
	return f, ""
}

// optionValue is the value of the option that keys name (a key and its
// alias); it reports a key set twice through add.
func optionValue(def *Definition, add func(error), keys ...string) (string, bool) {
	var name, by string
	found := false
	for _, kv := range def.Options {
		for _, k := range keys {
			if kv.Key != k {
				continue
			}
			if found {
				if by == k {
					add(options.Errorf(options.ErrDuplicate, keys[0], "option '%s' is set twice; keep one", options.Cut(k)))
				} else {
					add(options.Errorf(options.ErrDuplicate, keys[0], "option '%s' is set twice (as '%s' and '%s'); keep one", keys[0], options.Cut(by), options.Cut(k)))
				}
				continue
			}
			name, by, found = kv.Value, k, true
		}
	}
	return name, found
}

// missing reports the absence of the 'connector' or 'format' key (what),
// with the names it may take.
func missing(def *Definition, add func(error), what string, names []string) {
	msg := fmt.Sprintf("missing required option '%s' (known %ss: %s)", what, what, strings.Join(names, ", "))
	var given []string
	for _, kv := range def.Options {
		given = append(given, kv.Key)
	}
	// A misspelled 'connector' is reported here only: without the
	// connector no other key can be checked.
	if near := options.Closest(what, given); near != "" {
		msg += fmt.Sprintf("; is '%s' meant to be '%s'?", near, what)
	}
	add(options.Errorf(options.ErrMissing, what, "%s", msg))
}

func checkMetadata(c Connector, col types.Column) error {
	keys := c.Metadata()
	var names []string
	for _, k := range keys {
		names = append(names, k.Key)
		if k.Key != col.Key() {
			continue
		}
		if !col.Type.CanHold(k.Type) {
			return options.Errorf(ErrMetadata, col.Name, "column '%s' of type %s cannot hold metadata '%s' of type %s; declare %s or a type that can hold it",
				col.Name, col.Type, k.Key, k.Type, k.Type.WithNotNull(false))
		}
		return nil
	}
	how := fmt.Sprintf("column '%s' reads metadata key '%s'", col.Name, col.Key())
	if col.MetadataKey == "" {
		how = fmt.Sprintf("column '%s' reads metadata key '%s' (its name; add FROM 'key' to read another)", col.Name, col.Key())
	}
	valid := strings.Join(names, ", ")
	if near := options.Closest(col.Key(), names); near != "" {
		return options.Errorf(ErrMetadata, col.Name, "%s, which connector '%s' does not have (did you mean '%s'? valid keys: %s)", how, c.Name(), near, valid)
	}
	return options.Errorf(ErrMetadata, col.Name, "%s, which connector '%s' does not have (valid keys: %s)", how, c.Name(), valid)
}
