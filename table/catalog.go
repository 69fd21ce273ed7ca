package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// Catalog errors; each message names the table.
var (
	// ErrTableExists is returned by Create for a name already taken.
	ErrTableExists = errors.New("table already exists")
	// ErrNoTable is returned by Drop and Lookup for a name not taken.
	ErrNoTable = errors.New("no such table")
	// ErrNotCatalogStatement is returned by Exec for a statement that is
	// not the catalog's to run (SELECT, SET, RESET).
	ErrNotCatalogStatement = errors.New("not a catalog statement")
)

// Catalog is a session's tables by name; names ignore case, and each table
// keeps the spelling it was created with. A table is immutable once
// created, except for its options (ALTER TABLE ... SET and RESET bind it
// anew); to change its columns, drop it and create it again. A Catalog is safe
// for concurrent use.
type Catalog struct {
	reg    *Registry
	mu     sync.RWMutex
	tables map[string]*Table // by foldName
	// models are the session's models, by foldName: a namespace of their
	// own, as in Flink, so that a model may share a table's name.
	models map[string]*Model
	binder ModelBinder // checks CREATE MODEL; see SetModelBinder
}

// NewCatalog returns an empty catalog whose CREATE TABLE statements use the
// default registry.
func NewCatalog() *Catalog { return NewCatalogWith(Default) }

// NewCatalogWith returns an empty catalog whose CREATE TABLE statements use
// reg.
func NewCatalogWith(reg *Registry) *Catalog {
	return &Catalog{reg: reg, tables: map[string]*Table{}, models: map[string]*Model{}}
}

// foldName is a key under which names equal ignoring case (as
// strings.EqualFold sees them) meet: each character is replaced by the
// smallest of the characters it folds with.
func foldName(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// Create adds t. A table of the same name (ignoring case) is an error
// wrapping ErrTableExists, unless ifNotExists, when Create leaves the
// catalog as it is and returns nil.
func (c *Catalog) Create(t *Table, ifNotExists bool) error {
	_, err := c.create(t, ifNotExists)
	return err
}

func (c *Catalog) create(t *Table, ifNotExists bool) (created bool, err error) {
	if t == nil || t.Bound == nil || t.Bound.Def == nil {
		return false, errors.New("create table: nil table")
	}
	// The catalog keeps its own copy of the definition, so that the
	// caller's later changes cannot reach it.
	b := *t.Bound
	b.Def = t.Bound.Def.Clone()
	t = &Table{Bound: &b, Source: t.Source}
	key := foldName(t.Name())
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.tables[key]; ok {
		if ifNotExists {
			return false, nil
		}
		return false, options.Errorf(ErrTableExists, old.Name(), "table '%s' already exists; change its options with ALTER TABLE %s SET ('key' = 'value'), or DROP TABLE it and CREATE it again",
			options.Cut(old.Name()), options.Cut(types.QuoteIdent(old.Name())))
	}
	c.tables[key] = t
	return true, nil
}

// Drop removes the table of that name (ignoring case). An absent table is
// an error wrapping ErrNoTable, unless ifExists.
func (c *Catalog) Drop(name string, ifExists bool) error {
	_, err := c.drop(name, ifExists)
	return err
}

func (c *Catalog) drop(name string, ifExists bool) (*Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := foldName(name)
	t, ok := c.tables[key]
	if !ok {
		if ifExists {
			return nil, nil
		}
		return nil, c.noTable(name)
	}
	delete(c.tables, key)
	return t, nil
}

// Lookup finds a table by name, ignoring case. An absent table is an error
// wrapping ErrNoTable.
func (c *Catalog) Lookup(name string) (*Table, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if t, ok := c.tables[foldName(name)]; ok {
		return t, nil
	}
	return nil, c.noTable(name)
}

// noTable needs c.mu held.
func (c *Catalog) noTable(name string) error {
	var names []string
	for _, t := range c.tables {
		names = append(names, t.Name())
	}
	return notFound(ErrNoTable, "table", name, names)
}

// notFound is the error, wrapping kind, for a what (a table, a model)
// that names does not hold, with the nearest of them when one is near.
func notFound(kind error, what, name string, names []string) error {
	if near := options.Closest(name, names); near != "" {
		return options.Errorf(kind, name, "%s '%s' does not exist (did you mean '%s'?)", what, options.Cut(name), options.Cut(near))
	}
	return options.Errorf(kind, name, "%s '%s' does not exist", what, options.Cut(name))
}

// alter binds the table's definition with st's options changed, as CREATE
// TABLE would bind it, and puts the new table in the old one's place. An
// option set that does not bind is an error, and the table stays as it
// was. Queries that run on the old table keep it until they end.
func (c *Catalog) alter(st *AlterTable) (*Table, error) {
	old, err := c.Lookup(st.Name)
	if err != nil {
		return nil, err
	}
	def := old.Bound.Def.Clone()
	def.IfNotExists = false
	for _, kv := range st.Set {
		if i := slices.IndexFunc(def.Options, func(o options.KV) bool { return o.Key == kv.Key }); i >= 0 {
			def.Options[i].Value = kv.Value
		} else {
			def.Options = append(def.Options, kv)
		}
	}
	for _, k := range st.Reset {
		def.Options = slices.DeleteFunc(def.Options, func(o options.KV) bool { return o.Key == k })
	}
	t, err := c.reg.NewTable(def)
	if err != nil {
		return nil, fmt.Errorf("%w; table '%s' is unchanged", err, options.Cut(old.Name()))
	}
	key := foldName(old.Name())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tables[key] != old {
		return nil, fmt.Errorf("table '%s' was changed or dropped while it was being altered; try again", options.Cut(old.Name()))
	}
	c.tables[key] = t
	return t, nil
}

// List returns the tables sorted by name, ignoring case.
func (c *Catalog) List() []*Table {
	c.mu.RLock()
	out := make([]*Table, 0, len(c.tables))
	for _, t := range c.tables {
		out = append(out, t)
	}
	c.mu.RUnlock()
	sortByName(out, (*Table).Name)
	return out
}

// sortByName sorts xs by their names ignoring case, and names equal so by
// their spelling.
func sortByName[T any](xs []T, name func(T) string) {
	sort.Slice(xs, func(i, j int) bool {
		a, b := strings.ToLower(name(xs[i])), strings.ToLower(name(xs[j]))
		if a != b {
			return a < b
		}
		return name(xs[i]) < name(xs[j])
	})
}

// Result is what a statement returns: rows under column headings, or a
// message.
type Result struct {
	Columns []string
	// Types are the columns' types, in the order of Columns, each
	// STRING, INT or BIGINT; nil when every column is a STRING. An
	// integer column's value is the number in decimal, or "" for NULL (a
	// number not known), so that the json output can write 42 and null
	// where a STRING column's values stay strings ("42", "").
	Types   []*types.DataType
	Rows    [][]string
	Message string
	// Job is the job an INSERT started, running when the result is
	// returned; nil for other statements.
	Job Job
}

// Type is the type of column k: Types[k], or STRING without Types.
func (r *Result) Type(k int) *types.DataType {
	if r.Types == nil {
		return types.StringType()
	}
	return r.Types[k]
}

// A Job is a running INSERT INTO ... SELECT: rows read from a source,
// written to a sink, the source's records settled once the sink
// acknowledged their rows. Package pipeline runs them.
type Job interface {
	// ID names the job (SHOW JOBS, STOP JOB 'id').
	ID() string
	// Statement is the INSERT as written.
	Statement() string
	// Wait waits until the job ended (its bounded input was all written,
	// it failed, or it was stopped) or ctx ended, and returns the job's
	// error: nil when it finished or was stopped.
	Wait(ctx context.Context) error
	// Stop ends the job: it stops reading, releases the source records
	// whose rows were not acknowledged, and waits for its goroutines.
	Stop()
	// Drain ends the job gently and waits for it: it reads no more
	// records (those fetched and not yet in a batch are released at
	// once), waits up to timeout for the sink to acknowledge the batches
	// in flight, whose records are then accepted, and then stops as Stop
	// does. It returns the job's error: nil when it drained or had
	// finished.
	Drain(timeout time.Duration) error
	// Stats counts the job's work so far. Safe from any goroutine.
	Stats() JobStats
}

// JobState is where a job is in its life.
type JobState string

// A job's states.
const (
	JobRunning  JobState = "RUNNING"
	JobFinished JobState = "FINISHED"
	JobFailed   JobState = "FAILED"
	JobStopped  JobState = "STOPPED"
)

// JobStats counts a job's work.
type JobStats struct {
	State JobState
	// Read counts result rows of the SELECT; Written rows handed to the
	// sink; Acked rows it acknowledged.
	Read, Written, Acked int64
	// Accepted, Released and Rejected count the source's records.
	Accepted, Released, Rejected int64
	// Errors counts rows the sink refused or could not be sent.
	Errors int64
	// Applied counts the records of an aggregate written by merging
	// (MergeWriter), or kept in a state directory, that came again and
	// that the destination (or the state) held already: accepted without
	// being folded again.
	Applied int64
	// Restored counts the groups an aggregate job read back from its
	// state directory when it started.
	Restored int64
	// Kept is where the job keeps its state; its zero value for a job
	// that keeps it in memory.
	Kept KeptStats
	// Sink is the writer's own account: since when its brokers do not
	// answer (Sink.Unreachable), the rows it dead-lettered.
	Sink flow.SinkStats
	// Err is why the job failed; nil otherwise.
	Err    error
	Uptime time.Duration
	// SourceDown is since when the brokers of the job's source do not
	// answer, while none answers; zero otherwise (the sink's is
	// Sink.Unreachable).
	SourceDown time.Time
	// Model counts the calls of the model the job reads through
	// (ML_PREDICT); nil for a job without one.
	Model *flow.ModelStats
}

// KeptStats is a job's account of the state it keeps in a directory.
type KeptStats struct {
	// Dir is the job's folder; "" when its state is in memory.
	Dir string
	// Stored counts the checkpoints: the writes of the groups and
	// records of the batches since the one before (an epoch); Groups, the
	// groups at the last of them, Last when that was and Took how long
	// it took. Awaiting counts the records folded since, held for the
	// next; Bytes is the folder's size on disk.
	Stored, Groups int64
	Last           time.Time
	Took           time.Duration
	Awaiting       int64
	Bytes          int64
}

// Columns of DESCRIBE's result.
var DescribeColumns = []string{"name", "type", "null", "key", "extras", "watermark", "comment"}

// Exec runs a CREATE TABLE, DROP TABLE, SHOW TABLES, DESCRIBE or SHOW CREATE
// TABLE, and their kin for models: CREATE MODEL, DROP MODEL, SHOW MODELS,
// DESCRIBE MODEL and SHOW CREATE MODEL. Other statements are an error
// wrapping ErrNotCatalogStatement.
//
//   - CREATE TABLE binds the definition (NewTable, against the catalog's
//     registry) and adds it; the message says so.
//   - SHOW TABLES has one column, 'table name', a row per table.
//   - DESCRIBE has a row per column: name, type (its nullability in 'null',
//     TRUE or FALSE, as Flink prints; a time attribute's type is marked
//     *ROWTIME* or *PROCTIME*, as Flink marks it), extras (METADATA FROM
//     'key' VIRTUAL, or AS expr), watermark (the expression of the
//     WATERMARK on the column) and comment.
//   - SHOW CREATE TABLE has one column, 'create table', and one row: the
//     canonical DDL, secrets masked.
//   - CREATE MODEL binds the definition with the catalog's ModelBinder
//     (SetModelBinder) and adds it; DROP MODEL removes it. Models have
//     names of their own: a model may share a table's name.
//   - SHOW MODELS has one column, 'model name'; SHOW CREATE MODEL one,
//     'create model', with the canonical DDL, secrets masked.
//   - DESCRIBE MODEL has a row per column, the INPUT columns first: name,
//     type, null (TRUE or FALSE), is input (TRUE or FALSE) and comment.
func (c *Catalog) Exec(st Statement) (*Result, error) {
	if res, ok, err := c.execModel(st); ok {
		return res, err
	}
	switch st := st.(type) {
	case *CreateTable:
		name := st.Def.Name
		if st.Def.IfNotExists {
			// As in Flink, an existing table is left alone without checking
			// the new definition.
			if t, err := c.Lookup(name); err == nil {
				return &Result{Message: fmt.Sprintf("table '%s' already exists; nothing changed", options.Cut(t.Name()))}, nil
			}
		}
		t, err := c.reg.NewTable(st.Def)
		if err != nil {
			return nil, err
		}
		created, err := c.create(t, st.Def.IfNotExists)
		if err != nil {
			return nil, err
		}
		if !created {
			return &Result{Message: fmt.Sprintf("table '%s' already exists; nothing changed", options.Cut(name))}, nil
		}
		return &Result{Message: fmt.Sprintf("table '%s' created", options.Cut(name))}, nil
	case *AlterTable:
		t, err := c.alter(st)
		if err != nil {
			return nil, err
		}
		return &Result{Message: fmt.Sprintf("table '%s' altered", options.Cut(t.Name()))}, nil
	case *DropTable:
		t, err := c.drop(st.Name, st.IfExists)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return &Result{Message: fmt.Sprintf("table '%s' does not exist; nothing dropped", options.Cut(st.Name))}, nil
		}
		return &Result{Message: fmt.Sprintf("table '%s' dropped", options.Cut(t.Name()))}, nil
	case *ShowTables:
		res := &Result{Columns: []string{"table name"}, Rows: [][]string{}}
		for _, t := range c.List() {
			res.Rows = append(res.Rows, []string{t.Name()})
		}
		return res, nil
	case *Describe:
		t, err := c.Lookup(st.Name)
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: DescribeColumns, Rows: [][]string{}}
		def := t.Bound.Def
		// Flink marks each key column with the whole key: PRI(a, b).
		pri := ""
		if k := def.PrimaryKey; k != nil {
			pri = "PRI(" + strings.Join(k.Columns, ", ") + ")"
		}
		for _, col := range def.Columns() {
			null := "TRUE"
			if !col.Type.Nullable() {
				null = "FALSE"
			}
			typ, wm := col.Type.WithNotNull(false).String(), ""
			switch {
			case def.Watermark != nil && strings.EqualFold(def.Watermark.Column, col.Name):
				typ += " *ROWTIME*"
				wm = def.Watermark.Expr
			case col.IsProctime():
				typ += " *PROCTIME*"
			}
			key := ""
			if def.PrimaryKey != nil && slices.ContainsFunc(def.PrimaryKey.Columns, func(k string) bool { return strings.EqualFold(k, col.Name) }) {
				key = pri
			}
			res.Rows = append(res.Rows, []string{col.Name, typ, null, key, col.Extras(), wm, col.Comment})
		}
		return res, nil
	case *ShowCreateTable:
		t, err := c.Lookup(st.Name)
		if err != nil {
			return nil, err
		}
		return &Result{Columns: []string{"create table"}, Rows: [][]string{{t.DDL()}}}, nil
	case nil:
		return nil, errors.New("exec: nil statement")
	}
	return nil, fmt.Errorf("%w: %s", ErrNotCatalogStatement, firstWord(st.String()))
}

func firstWord(s string) string {
	if i := strings.IndexFunc(s, unicode.IsSpace); i > 0 {
		return strings.ToUpper(s[:i])
	}
	return strings.ToUpper(s)
}

// DDL is the table's canonical CREATE TABLE text with the values of secret
// options (as its connector and format declare them, and keys that look
// secret) masked.
func (t *Table) DDL() string {
	return t.Bound.Def.DDL(t.Bound.Secret)
}

// Secret reports whether key is a secret option of the bound connector or
// format, or looks like one (options.LooksSecret).
func (b *Bound) Secret(key string) bool {
	if options.LooksSecret(key) {
		return true
	}
	if b.Connector != nil && b.Connector.Options().Secret(key) {
		return true
	}
	return b.Format != nil && b.Format.Options().Secret(key)
}
