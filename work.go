package kshare

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/worker"
)

// Row is one row handed to a Work function: its values by column name
// (String, Int64, Float64, Bool, Time, Bytes, Value, Scan into a struct)
// and the record it came from (Origin).
type Row = worker.Row

// ErrReject marks a Work function's error as final: the row's record is
// rejected, never delivered again. See Reject.
var ErrReject = worker.ErrReject

// Reject wraps err so that Work rejects the row instead of releasing it.
func Reject(err error) error { return worker.Reject(err) }

// ErrStop marks a Work function's error as a reason to stop: the row is
// released, no new row starts, and Work returns the error once the running
// rows are done (a dependency that is down for good, say). See Stop.
var ErrStop = worker.ErrStop

// Stop wraps err so that Work releases the row and stops.
func Stop(err error) error { return worker.Stop(err) }

// WorkStats count the rows of a Work call by outcome.
type WorkStats = worker.Stats

// WorkOption changes a Work call's settings.
type WorkOption func(*workConfig)

type workConfig struct {
	pool  worker.Config
	poll  int
	query []QueryOption
}

// RowTimeout ends each row's context after d; a row that then fails is
// released and logged as timed out. Default: no bound.
func RowTimeout(d time.Duration) WorkOption { return func(c *workConfig) { c.pool.Timeout = d } }

// DrainTimeout lets rows already running go on for up to d once Work's
// context ends, before their contexts end too. Default 0: at once.
func DrainTimeout(d time.Duration) WorkOption { return func(c *workConfig) { c.pool.Drain = d } }

// PollRecords sets how many records each member of the pool's query takes
// from the broker at once. Default: the concurrency (see worker.Tune); rows
// that take a few milliseconds or less want more, 500 say, so that a
// fetch's round trip does not leave the workers idle.
func PollRecords(n int) WorkOption { return func(c *workConfig) { c.poll = n } }

// WorkQuery passes query options (MaxRows, IdleTimeout, ...) to the query
// Work runs.
func WorkQuery(opts ...QueryOption) WorkOption {
	return func(c *workConfig) { c.query = append(c.query, opts...) }
}

// Work runs fn on each row of the SELECT sql, concurrency rows at once,
// until the query ends (LIMIT, MaxRows, IdleTimeout) or ctx does. A row
// whose fn returns nil is done: its record is accepted. An error releases
// it (the broker delivers it again, to this or another consumer of the
// group, with its delivery count up), an error wrapped with Reject rejects
// it (never again), and a panic releases it and is logged with its stack.
// fn's context ends at the row's timeout (RowTimeout) and when Work stops.
//
// A record is accepted only once its row is done, and the locks of rows
// still running are renewed, so a row that runs longer than the group's
// lock duration is not handed to a second worker meanwhile. The table's
// poll size follows the concurrency (see worker.Tune). When ctx ends, no
// new row starts, running rows get DrainTimeout to finish, and every record
// taken and not done is released. Work returns once every fn has
// returned, so fn must heed its context. The error is the query's, or
// ctx's when it ended Work.
func Work(ctx context.Context, eng *Engine, sql string, concurrency int, fn func(ctx context.Context, r Row) error, opts ...WorkOption) (WorkStats, error) {
	c := workConfig{pool: worker.Config{Concurrency: concurrency, Logger: eng.log}}
	for _, o := range opts {
		o(&c)
	}
	if concurrency < 1 {
		return WorkStats{}, fmt.Errorf("%w, got %d", worker.ErrConcurrency, concurrency)
	}
	if fn == nil {
		return WorkStats{}, errors.New("work: nil function")
	}
	// The query's own context, so that an fn error wrapped with
	// worker.Stop ends it.
	qctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	c.pool.StopQuery = stop
	rows, err := eng.QueryForWorkers(qctx, sql, concurrency, c.poll, c.query...)
	if err != nil {
		return WorkStats{}, err
	}
	return worker.Run(qctx, rows, c.pool, fn)
}

// QueryForWorkers is Query for a pool of concurrency workers (the worker
// package): the table is read with its poll size set for them (see
// worker.Tune; pollRecords above 0 overrides the size), on a copy of the
// table, so that the catalog's table and other queries keep their options.
// A query whose rows workers cannot work on (worker.CheckPlan: an
// aggregate's) is refused before it starts.
func (e *Engine) QueryForWorkers(ctx context.Context, sql string, concurrency, pollRecords int, opts ...QueryOption) (*query.Rows, error) {
	p, err := query.Prepare(sql, e.cat)
	if err != nil {
		return nil, err
	}
	if err := worker.CheckPlan(p); err != nil {
		return nil, err
	}
	if kvs, changed := worker.Tune(p.Table().Bound, concurrency, pollRecords); changed {
		def := p.Table().Bound.Def.Clone()
		def.Options = kvs
		tuned, err := e.reg.NewTable(def)
		if err != nil {
			return nil, err
		}
		cat := table.NewCatalogWith(e.reg)
		if err := cat.Create(tuned, false); err != nil {
			return nil, err
		}
		if p, err = query.Prepare(sql, cat); err != nil {
			return nil, err
		}
	}
	return e.run(ctx, p, opts)
}
