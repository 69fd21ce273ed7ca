package kshare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kshare/kshare/expr"
	"github.com/kshare/kshare/model"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/parse"
	"github.com/kshare/kshare/pipeline"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"

	// The built-in components register themselves, so that one import of
	// kshare is enough to read kafka-sharegroup and kafka tables in json or
	// raw, and to write kafka, print and blackhole tables.
	_ "github.com/kshare/kshare/format/debezium"
	_ "github.com/kshare/kshare/format/json"
	_ "github.com/kshare/kshare/format/raw"
	_ "github.com/kshare/kshare/kafka"
	_ "github.com/kshare/kshare/sharegroup"
	_ "github.com/kshare/kshare/sinks"
	_ "github.com/kshare/kshare/sinks/filesystem"
	_ "github.com/kshare/kshare/sinks/jdbc"
	"github.com/kshare/kshare/types"
)

// Engine is a session: a catalog of tables and the settings SET changed. It
// starts no goroutine of its own (each query's stream owns its consumers,
// and Rows.Close stops them; each INSERT's job owns its own, and Stop or
// the end of its input stops them), so it needs no closing. It is safe for
// concurrent use; each Rows is not.
type Engine struct {
	reg *table.Registry
	cat *table.Catalog
	mem memory.Allocator
	log *slog.Logger

	// models finds the providers of CREATE MODEL (WithModels).
	models *model.Registry

	mu       sync.Mutex
	settings query.Settings
	// cluster holds the keys SET gave the session's cluster
	// ('properties.bootstrap.servers' and the 'properties.*' security keys),
	// by canonical key, in the order set.
	cluster []options.KV
	// jobs are the jobs INSERT started; jobSeq numbers them.
	jobs   []*pipeline.Job
	jobSeq int
	// stateDirs are the state folders the session's jobs opened, so that
	// two jobs into one table get two.
	stateDirs map[string]bool
	// reading are the queries run started (a job's among them) that had
	// not ended when last looked at, so that DROP TOPIC can name what
	// reads a topic.
	reading []reader
}

// reader is a query of the session and what it is, for messages: "a
// query (SELECT ...)", "job 2 (INSERT INTO 'sink')".
type reader struct {
	rows *query.Rows
	what string
	job  string // the job's id; "" for a query
}

// Option configures an Engine.
type Option func(*Engine)

// WithAllocator sets the allocator of every query's batches (the default of
// the Allocator query option). Default: memory.DefaultAllocator.
func WithAllocator(mem memory.Allocator) Option { return func(e *Engine) { e.mem = mem } }

// WithLogger sets where sources log their warnings (rejected records, say).
// Default: slog.Default().
func WithLogger(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// WithRegistry makes CREATE TABLE and Register find connectors and formats
// in reg instead of the default registry, where the built-in ones and any
// registered with table.RegisterConnector or table.RegisterFormat are.
func WithRegistry(reg *table.Registry) Option { return func(e *Engine) { e.reg = reg } }

// WithModels makes CREATE MODEL find providers in reg instead of
// model.Default, where the built-in ones ('openai', 'http', 'command') and
// any registered with model.Register are.
func WithModels(reg *model.Registry) Option { return func(e *Engine) { e.models = reg } }

// New returns an engine with an empty catalog and the default settings
// (query.DefaultSettings).
func New(opts ...Option) *Engine {
	e := &Engine{reg: table.Default, models: model.Default, mem: memory.DefaultAllocator, settings: query.DefaultSettings()}
	for _, o := range opts {
		o(e)
	}
	e.cat = table.NewCatalogWith(e.reg)
	e.cat.SetModelBinder(e.models)
	return e
}

// Catalog is the engine's catalog of tables.
func (e *Engine) Catalog() *table.Catalog { return e.cat }

// Settings are the session's settings as SET and RESET left them; Query
// starts from them.
func (e *Engine) Settings() query.Settings {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settings
}

// Set changes one of the session's settings, as SET 'key' = 'value' does
// (query.SettingOptions, and Flink's keys that map to them), for a program
// or a command-line flag that sets one without writing SQL.
func (e *Engine) Set(key, value string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.settings.Set(key, value)
	return err
}

// ErrSelectInExec is returned by Exec for a script with a SELECT: a query
// returns rows, and Query is what hands them out.
var ErrSelectInExec = errors.New("SELECT in Exec")

// Exec runs a script of statements separated by ';': CREATE TABLE, ALTER
// TABLE ... SET ('key' = 'value') or RESET ('key'), DROP TABLE, SHOW TABLES, DESCRIBE, SHOW CREATE TABLE, SET 'key' = 'value', SET
// (which lists the settings) and RESET ['key'], and the statements about
// models: CREATE MODEL (checked against its provider, package model, with
// no I/O), DROP MODEL, SHOW MODELS, DESCRIBE MODEL and SHOW CREATE MODEL
// (its API key masked). It returns the last
// statement's result; ExecAll returns every one. The settings are
// query.SettingOutput, query.SettingIdleTimeout, query.SettingMaxRows and
// query.SettingMaxColumnWidth; the keys Flink SQL scripts start with
// (query.FlinkSettings) are accepted too, and the result's message says
// what each did.
//
// The statements about the cluster (SHOW TOPICS, DESCRIBE TOPIC, CREATE
// TOPIC, DROP TOPIC, SHOW SHARE GROUPS, DESCRIBE SHARE GROUP 'g' [MEMBERS |
// CONFIG], ALTER SHARE GROUP 'g' RESET TO ... | SET (...), DROP SHARE GROUP
// 'g') run against the session's cluster: the one SET
// 'properties.bootstrap.servers' (and the 'properties.*' security keys a
// table takes) named, else the one every kafka-sharegroup table names
// (ErrNoCluster otherwise). Their results are plain rows. CREATE TOPIC's
// WITH clause takes admin.TopicOptions and any topic config; DROP TOPIC
// deletes the topic and every record in it, and refuses (ErrTopicInUse) a
// topic that a running query or job of the session reads.
//
// INSERT INTO t SELECT ... starts a job (package pipeline) and returns at
// once: the result's Job is its handle (Wait, Stop, Stats), and Jobs and
// StopJob reach it later. Before anything is read it checks that t's
// connector writes (table.ErrCannotWrite), that the SELECT's columns fit
// t's (ErrInsertMismatch, naming the column and the CAST that fixes it),
// that the SELECT is not an aggregate (ErrUpdatingInsert) and that the
// destination exists (for 'kafka': the topic). A source record is accepted
// only once every row it gave was acknowledged by the sink.
//
// A script with a SELECT is refused before anything runs (ErrSelectInExec).
// Otherwise statements run in order until one fails; the error says which.
// The catalog's statements do no I/O (a table's source connects when a
// query opens it), except that DESCRIBE of a kafka-sharegroup table asks its
// cluster for its share group's lag, for at most DescribeLagTimeout.
func (e *Engine) Exec(ctx context.Context, sql string) (*table.Result, error) {
	res, err := e.ExecAll(ctx, sql)
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return &table.Result{Message: "nothing to run"}, nil
	}
	return res[len(res)-1], nil
}

// ExecAll is Exec returning the result of every statement, in order.
func (e *Engine) ExecAll(ctx context.Context, sql string) ([]*table.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sts, err := parse.Parse(sql)
	if err != nil {
		return nil, err
	}
	for _, st := range sts {
		if _, ok := st.(*table.Select); ok {
			return nil, fmt.Errorf("%w: a SELECT returns rows; run it with Query, one statement at a time", ErrSelectInExec)
		}
	}
	out := make([]*table.Result, 0, len(sts))
	for i, st := range sts {
		res, err := e.exec(ctx, st)
		if err != nil {
			if len(sts) > 1 {
				return out, fmt.Errorf("statement %d (%s): %w", i+1, firstWords(st.String()), err)
			}
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (e *Engine) exec(ctx context.Context, st table.Statement) (*table.Result, error) {
	switch st := st.(type) {
	case *table.SetOption:
		if isClusterKey(st.Key) {
			return e.setCluster(st.Key, st.Value)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		if st.Key == "" {
			res := &table.Result{Columns: []string{"key", "value"}, Rows: [][]string{}}
			for _, kv := range e.settings.List() {
				res.Rows = append(res.Rows, []string{kv.Key, kv.Value})
			}
			res.Rows = append(res.Rows, e.clusterList()...)
			return res, nil
		}
		note, err := e.settings.Set(st.Key, st.Value)
		if err != nil {
			return nil, err
		}
		if note != "" {
			// A Flink key: say what it did in kshare.
			return &table.Result{Message: note}, nil
		}
		return &table.Result{Message: fmt.Sprintf("'%s' set to '%s'", options.Cut(st.Key), options.Cut(st.Value))}, nil
	case *table.Reset:
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.resetCluster(st.Key) {
			return &table.Result{Message: fmt.Sprintf("'%s' reset", options.Cut(st.Key))}, nil
		}
		if err := e.settings.Reset(st.Key); err != nil {
			return nil, err
		}
		if st.Key == "" {
			return &table.Result{Message: "every setting reset"}, nil
		}
		return &table.Result{Message: fmt.Sprintf("'%s' reset", options.Cut(st.Key))}, nil
	case *table.Insert:
		return e.insert(ctx, st)
	case *table.ShowJobs:
		return e.showJobs(), nil
	case *table.StopJob:
		if err := e.StopJob(st.ID); err != nil {
			return nil, err
		}
		return &table.Result{Message: fmt.Sprintf("job %s stopped", options.Cut(st.ID))}, nil
	case *table.ShowFunctions:
		res := &table.Result{Columns: []string{"function name", "kind", "arguments", "description"}, Rows: [][]string{}}
		for _, f := range expr.Functions() {
			res.Rows = append(res.Rows, []string{f.Name, f.Kind, f.Signature, f.Description})
		}
		return res, nil
	case *table.Describe:
		res, err := e.cat.Exec(st)
		if err != nil {
			return nil, err
		}
		if t, err := e.cat.Lookup(st.Name); err == nil {
			res.Message = describeTableGroup(ctx, t)
		}
		return res, nil
	}
	if res, ok, err := e.execCluster(ctx, st); ok {
		return res, err
	}
	return e.cat.Exec(st)
}

// firstWords shortens a statement for an error message.
func firstWords(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// Register adds a table defined by Go values, as CREATE TABLE would:
// cols in table order (metadata columns have Metadata set), options the
// WITH clause's pairs ('connector', 'format', 'bootstrap.servers', ...).
// The error, as for CREATE TABLE, lists every problem of the definition.
func (e *Engine) Register(name string, cols []types.Column, opts map[string]string) error {
	_, err := e.cat.Exec(&table.CreateTable{Def: table.NewDefinition(name, cols, opts)})
	return err
}

// RegisterArrow is Register with the columns of an Arrow schema: one
// physical column per field, its type mapped as types.FromArrow maps it.
// Metadata columns cannot be said in Arrow; use Register for them.
func (e *Engine) RegisterArrow(name string, schema *arrow.Schema, opts map[string]string) error {
	cols, err := table.ColumnsFromArrow(schema)
	if err != nil {
		return table.Errorf(name, "%w", err)
	}
	return e.Register(name, cols, opts)
}

// Prepare checks a SELECT against the catalog without running it: its
// result columns and their types are known before any record is read.
func (e *Engine) Prepare(sql string) (*query.Plan, error) {
	return e.prepare(sql)
}

// QueryOption changes one query's options; it wins over the session's
// settings.
type QueryOption func(*query.Options)

// MaxRows ends the query after n result rows, as a LIMIT would (the smaller
// wins); 0 means no bound. Default: the 'max-rows' setting (0).
func MaxRows(n int64) QueryOption { return func(o *query.Options) { o.MaxRows = n } }

// IdleTimeout ends the query without an error when no record arrived for d
// while it waited for one; 0 waits until the context ends. Default: the
// 'idle-timeout' setting (0).
func IdleTimeout(d time.Duration) QueryOption { return func(o *query.Options) { o.IdleTimeout = d } }

// Allocator allocates the query's batches. Default: the engine's
// (WithAllocator).
func Allocator(mem memory.Allocator) QueryOption { return func(o *query.Options) { o.Alloc = mem } }

// BatchSize bounds the rows of each source batch, and so of each result
// batch. Default: the table's 'scan.batch-size'.
func BatchSize(n int) QueryOption { return func(o *query.Options) { o.BatchSize = n } }

// Query plans a SELECT and starts it: it opens the table's source (for
// kafka-sharegroup: joins the share group) and returns the running query.
// ctx bounds the whole query, not just the start: cancelling it ends the
// query (Rows.Err then returns the context's error). The caller must Close
// the Rows, which also settles the batch last handed out as delivered.
//
// FROM TABLE(PEEK(TABLE t)) reads t without its share group: from the
// group's start offsets to the end offsets when the query starts, with a
// plain reader that joins nothing and acknowledges nothing, then ends
// (EndEOF). Records the group settled past its start offset, or holds in
// flight, still show.
//
// A window aggregation's records are accepted once folded into its
// windows' state (query.Options.AcceptFolded): each window's row comes
// once, when the watermark passes its end, and what the open windows
// counted is lost if the query ends before.
//
// FROM ML_PREDICT(TABLE t, MODEL m, DESCRIPTOR(col, ...) [, MAP['key',
// 'value', ...]]) reads t's columns followed by model m's OUTPUT columns:
// each row of t is passed to m (package mlpredict), and what becomes of its
// record follows from the call (docs/models.md). The call is checked
// against the catalog before anything is read.
func (e *Engine) Query(ctx context.Context, sql string, opts ...QueryOption) (*query.Rows, error) {
	p, err := e.prepare(sql)
	if err != nil {
		return nil, err
	}
	// A query's windows accept what they folded (their state is the
	// query's memory): each window's row comes once, at its close. A
	// pipeline's hold their records until the sink has the rows.
	return e.run(ctx, p, append([]QueryOption{func(o *query.Options) { o.AcceptFolded = true }}, opts...))
}

// run starts p with the session's settings and then opts.
func (e *Engine) run(ctx context.Context, p *query.Plan, opts []QueryOption) (*query.Rows, error) {
	o := query.Options{Alloc: e.mem, Logger: e.log}
	e.Settings().Apply(&o)
	for _, opt := range opts {
		opt(&o)
	}
	rows, err := query.Run(ctx, p, o)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.reading = append(running(e.reading), reader{rows: rows, what: "a query (" + firstWords(p.SQL()) + ")"})
	e.mu.Unlock()
	return rows, nil
}

// running is rs without the queries that ended.
func running(rs []reader) []reader {
	return slices.DeleteFunc(rs, func(r reader) bool { return r.rows.EndReason() != query.Running })
}
