package kshare

// This file runs INSERT INTO ... SELECT: the checks at statement time and
// the session's jobs.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/pipeline"
	"github.com/kshare/kshare/query"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/state"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// ErrInsertMismatch is returned for an INSERT whose SELECT's columns do not
// fit the target table's: their count, or a column's type.
var ErrInsertMismatch = errors.New("INSERT columns do not match")

// ErrUpdatingInsert is returned for an INSERT of an aggregate (updating)
// SELECT into a sink that only appends.
var ErrUpdatingInsert = errors.New("updating INSERT")

// insert checks st before anything is read (the target can write, the
// SELECT's columns fit it, the destination exists) and starts its job.
func (e *Engine) insert(ctx context.Context, st *table.Insert) (*table.Result, error) {
	t, err := e.cat.Lookup(st.Table)
	if err != nil {
		return nil, err
	}
	sink, err := table.NewSink(t.Bound)
	if err != nil {
		return nil, err
	}
	p, err := e.prepare(st.Select)
	if err != nil {
		return nil, err
	}
	name := options.Cut(st.Table)
	stateDir := e.Settings().StateDir
	// A window aggregation whose windows the state directory keeps
	// writes each window's row once: its rows are inserts.
	keepsWindows := stateDir != "" && p.KeepsWindows()
	updating := p.Updating() && !keepsWindows
	// What the query is whose rows update earlier ones, and its key.
	kind, keys, hint := "an aggregate query", "the GROUP BY columns", ""
	switch {
	case p.Changelog():
		kind, keys = fmt.Sprintf("changelog table '%s'", options.Cut(p.Table().Name())), fmt.Sprintf("the PRIMARY KEY of '%s'", options.Cut(p.Table().Name()))
	case p.KeepsWindows():
		kind = "a window aggregation"
		hint = "; or keep the job's state in a directory (SET 'state-dir' = '/var/lib/kshare', or kshare run --state-dir), with which each window's row is written once, when the watermark passes its end"
	}
	if _, keyed := t.Bound.Connector.(table.KeyedConnector); keyed && updating && t.Bound.Def.PrimaryKey == nil {
		return nil, fmt.Errorf("%w: INSERT INTO '%s' of %s: its rows update earlier ones (-U/+U), and table '%s' has no PRIMARY KEY by which connector '%s' could replace them; declare %s as its key: PRIMARY KEY (...) NOT ENFORCED",
			ErrUpdatingInsert, name, kind, name, t.Bound.Connector.Name(), keys)
	}
	if _, ok := sink.(flow.ChangelogSink); updating && !ok {
		return nil, fmt.Errorf("%w: INSERT INTO '%s' of %s: its rows update earlier ones (-U/+U), and connector '%s' appends records, so a reader would count each row many times; "+
			"write them into an 'upsert-kafka' table (a topic keyed by %s), a 'jdbc' table with a PRIMARY KEY, or a 'kafka' table in a changelog format ('format' = 'debezium-json'); 'print' and 'blackhole' tables take them too%s",
			ErrUpdatingInsert, name, kind, t.Bound.Connector.Name(), keys, hint)
	}
	if err := checkColumns(name, p.Columns(), sink.Columns()); err != nil {
		return nil, err
	}
	if ks, ok := sink.(flow.KeyedSink); ok && updating {
		if err := checkKey(name, p, ks); err != nil {
			return nil, err
		}
	}
	w, err := sink.Open(ctx)
	if err != nil {
		return nil, err
	}
	// An aggregate into a sink that writes exactly once by merging: each
	// batch of changes is written as what it adds, with its records, and
	// records delivered again that a write holds are not folded again.
	var merge []flow.MergeOp
	var queryOpts []QueryOption
	if mw, ok := w.(flow.MergeWriter); ok && updating {
		if merge, err = p.MergeOps(); err != nil {
			w.Close()
			return nil, fmt.Errorf("%w: INSERT INTO '%s' of %s: table '%s' writes an aggregate exactly once by adding what each batch changes to the rows it holds, and %v",
				ErrNotExactlyOnce, name, kind, name, err)
		}
		queryOpts = append(queryOpts, func(o *query.Options) { o.Applied = mw.Applied })
	}
	if _, ok := w.(flow.OriginWriter); ok {
		if err := checkOrigins(name, p, merge != nil); err != nil {
			w.Close()
			return nil, err
		}
	}
	if rb, ok := w.(flow.RefusedBySource); ok && rb.RefusedBySource() {
		// The rows it refuses go by the source table's policy, which
		// must settle rows itself.
		src := p.Table().Bound.Def
		if v := p.Table().Bound.Options.String(sharegroup.OptOnEvalError); v == "" || v == sharegroup.OnDecodeErrorFail {
			w.Close()
			return nil, fmt.Errorf("INSERT INTO '%s': table '%s' sends the source records of the rows it refuses to their table's dead-letter topic ('sink.on-refused-record' = 'dead-letter'), and table '%s' has none: "+
				"set its 'scan.on-eval-error' = 'dead-letter' and 'scan.dead-letter.topic' (ALTER TABLE %s SET (...)), or write 'sink.on-refused-record' = 'fail'",
				name, name, options.Cut(src.Name), types.QuoteIdent(src.Name))
		}
	}
	if lw, ok := w.(flow.LoggingWriter); ok && e.log != nil {
		lw.SetLogger(e.log)
	}
	// An aggregate whose groups (or windows) are kept in the session's
	// state directory: a job started again there continues its counts.
	var store *jobState
	joins := p.JoinsStreams()
	if joins && stateDir == "" {
		w.Close()
		return nil, fmt.Errorf("%w: INSERT INTO '%s': the query joins two streams, whose rows it keeps until the watermarks pass them, in the job's state directory, so that their records can be accepted before the rows leave: set one (SET 'state-dir' = '/var/lib/kshare', or kshare run --state-dir)",
			ErrStateDir, name)
	}
	if tw, ok := w.(flow.TxnWriter); ok && joins && tw.Transactional() && !p.KeepsGroups() && !keepsWindows {
		w.Close()
		return nil, fmt.Errorf("%w: INSERT INTO '%s': table '%s' writes exactly once, in Kafka transactions committed with an aggregate's state, and the rows of a join are written at least once (a pair may be written again after a crash): set its 'sink.delivery-guarantee' = 'at-least-once'",
			ErrNotExactlyOnce, name, name)
	}
	if stateDir != "" && (p.KeepsGroups() || keepsWindows || joins || p.KeepsLookups()) && merge == nil {
		if store, err = e.openState(stateDir, name, st.String(), p); err != nil {
			w.Close()
			return nil, err
		}
		queryOpts = append(queryOpts, func(o *query.Options) { o.State = store })
	}
	if err := e.joinTxn(ctx, name, w, store); err != nil {
		w.Close()
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	// The job lives until it ends or is stopped, not for the call that
	// started it; it keeps ctx's values.
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rows, err := e.run(jctx, p, queryOpts)
	if err != nil {
		cancel()
		w.Close()
		if store != nil {
			store.Close()
		}
		return nil, err
	}
	e.mu.Lock()
	e.jobSeq++
	id := strconv.Itoa(e.jobSeq)
	e.mu.Unlock()
	opts := pipeline.Options{ID: id, Statement: st.String(), Merge: merge}
	if store != nil {
		opts.State = store
	}
	pr, prunes := w.(flow.Pruner)
	progress, tells := p.Table().Source.(flow.ShareProgress)
	if store != nil && tells {
		// The state forgets the records the share group has settled for
		// good, as a Pruner sink does.
		opts.Chore, opts.ChoreEvery = func(ctx context.Context) {
			group, starts, err := progress.ShareStartOffsets(ctx)
			if err == nil {
				err = store.Prune(group, starts)
			}
			if err != nil {
				e.logger().Warn("could not forget the records the share group settled; the state keeps them until the next try", "job", id, "err", err)
			}
		}, time.Minute
	} else if prunes && tells {
		// The sink forgets the records the share group has settled for
		// good, so that what it keeps stays the size of what is in flight.
		opts.Chore, opts.ChoreEvery = func(ctx context.Context) {
			group, starts, err := progress.ShareStartOffsets(ctx)
			if err != nil {
				e.logger().Warn("could not learn where the share group stands; the sink keeps the records it wrote until the next try", "job", id, "err", err)
				return
			}
			pr.Prune(group, starts)
		}, pr.PruneInterval()
	}
	job := pipeline.Start(jctx, rows, w, cancel, opts)
	e.mu.Lock()
	e.jobs = append(e.jobs, job)
	for i := range e.reading {
		if e.reading[i].rows == rows {
			e.reading[i].what, e.reading[i].job = fmt.Sprintf("job %s (INSERT INTO '%s')", id, name), id
		}
	}
	e.mu.Unlock()
	return &table.Result{Message: fmt.Sprintf("job %s started: INSERT INTO '%s'", id, name), Job: job}, nil
}

// ErrNotExactlyOnce is returned for an INSERT into a sink that writes
// exactly once (flow.OriginWriter) of a query that cannot be written so.
var ErrNotExactlyOnce = errors.New("cannot write exactly once")

// checkOrigins refuses, for a sink that writes exactly once, a query whose
// rows do not each come from one record a share group identifies: an
// aggregate's row reflects many records (unless the sink merges its
// changes: merging), and other sources' records have no identity that
// survives a redelivery.
func checkOrigins(name string, p interface {
	Updating() bool
	Table() *table.Table
}, merging bool) error {
	if p.Updating() && !merging {
		return fmt.Errorf("%w: INSERT INTO '%s' of an aggregate query: table '%s' writes exactly once by storing, with its rows, the source record each row came from, and an aggregate's row reflects many records; "+
			"write it 'at-least-once' (the key's last change wins), or insert the rows before aggregation", ErrNotExactlyOnce, name, name)
	}
	src := p.Table()
	if _, ok := src.Bound.Connector.(table.RecordIdentifier); !ok {
		return fmt.Errorf("%w: INSERT INTO '%s' from table '%s' (connector '%s'): table '%s' writes exactly once by storing the share group and coordinates of the record each row came from, and only a 'kafka-sharegroup' table tells them; "+
			"read the topic through a share group, or write 'at-least-once'", ErrNotExactlyOnce, name, options.Cut(src.Name()), src.Bound.Connector.Name(), name)
	}
	return nil
}

// checkColumns says which column of the SELECT does not fit the sink's,
// and the CAST that would make it fit.
func checkColumns(name string, got, want []types.Column) error {
	if len(got) != len(want) {
		return fmt.Errorf("%w: the SELECT gives %d columns, table '%s' takes %d (%s); select them in this order",
			ErrInsertMismatch, len(got), name, len(want), columnList(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Type.WithNotNull(false).Equal(w.Type.WithNotNull(false)) {
			if w.Type.NotNull && g.Type.Nullable() {
				return fmt.Errorf("%w: column %d (%s) of table '%s' is %s, and the SELECT's %s may be NULL; filter the NULLs out (WHERE %s IS NOT NULL) or COALESCE them",
					ErrInsertMismatch, i+1, types.QuoteIdent(w.Name), name, w.Type, types.QuoteIdent(g.Name), types.QuoteIdent(g.Name))
			}
			continue
		}
		return fmt.Errorf("%w: column %d (%s) of table '%s' is %s, the SELECT gives %s of type %s; write CAST(%s AS %s)",
			ErrInsertMismatch, i+1, types.QuoteIdent(w.Name), name, w.Type.WithNotNull(false), types.QuoteIdent(g.Name), g.Type.WithNotNull(false),
			types.QuoteIdent(g.Name), w.Type.WithNotNull(false))
	}
	return nil
}

// checkKey says whether an updating query's rows are keyed as the table
// is: the GROUP BY columns the SELECT gives must be the table's PRIMARY
// KEY columns (in any order), else a change would replace the wrong row,
// or two groups the same one.
func checkKey(name string, p interface {
	Columns() []types.Column
	UpsertKey() ([]int, bool)
}, ks flow.KeyedSink) error {
	cols := ks.Columns()
	want := ks.PrimaryKey()
	names := func(idx []int) string {
		out := make([]string, len(idx))
		for i, k := range idx {
			out[i] = types.QuoteIdent(cols[k].Name)
		}
		return strings.Join(out, ", ")
	}
	got, ok := p.UpsertKey()
	if !ok {
		return fmt.Errorf("%w: INSERT INTO '%s' of an aggregate query that does not select every GROUP BY column as it is: its rows have no key, and table '%s' is written by its PRIMARY KEY (%s); select the GROUP BY columns, in the key's columns' places",
			ErrInsertMismatch, name, name, names(want))
	}
	if len(got) == 0 {
		return fmt.Errorf("%w: INSERT INTO '%s': the query has no GROUP BY, so its one row has no key, and table '%s' is written by its PRIMARY KEY (%s); group by the key's columns",
			ErrInsertMismatch, name, name, names(want))
	}
	if !sameSet(got, want) {
		return fmt.Errorf("%w: INSERT INTO '%s': the query's rows are keyed by its GROUP BY columns %s, and table '%s' has PRIMARY KEY (%s); a change would replace the wrong row. Make the table's key the GROUP BY columns, or group by the key's columns",
			ErrInsertMismatch, name, names(got), name, names(want))
	}
	return nil
}

func sameSet(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			found = found || x == y
		}
		if !found {
			return false
		}
	}
	return true
}

func columnList(cols []types.Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = types.QuoteIdent(c.Name) + " " + c.Type.String()
	}
	return strings.Join(parts, ", ")
}

// Jobs are the jobs the session's INSERTs started, running or ended, in
// the order they started.
func (e *Engine) Jobs() []table.Job {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]table.Job, len(e.jobs))
	for i, j := range e.jobs {
		out[i] = j
	}
	return out
}

// ErrNoJob is returned by StopJob for an id no job has.
var ErrNoJob = errors.New("no such job")

// StopJob stops the job id and waits for it (see table.Job.Stop).
func (e *Engine) StopJob(id string) error {
	var j *pipeline.Job
	e.mu.Lock()
	for _, c := range e.jobs {
		if c.ID() == id {
			j = c
		}
	}
	e.mu.Unlock()
	if j == nil {
		return fmt.Errorf("%w: '%s' (SHOW JOBS lists them)", ErrNoJob, options.Cut(id))
	}
	j.Stop()
	return nil
}

// JobColumns are the columns of SHOW JOBS.
var JobColumns = []string{"job id", "statement", "state", "rows read", "rows written", "accepted", "released", "rejected", "errors", "uptime", "model calls", "state kept"}

// jobTypes are the types of JobColumns: the counts are numbers.
var jobTypes = func() []*types.DataType {
	s, n := types.StringType(), types.BigIntType()
	return []*types.DataType{s, s, s, n, n, n, n, n, n, s, s, s}
}()

func (e *Engine) showJobs() *table.Result {
	res := &table.Result{Columns: JobColumns, Types: jobTypes, Rows: [][]string{}}
	for _, j := range e.Jobs() {
		st := j.Stats()
		state := string(st.State)
		switch {
		case st.Err != nil:
			state += ": " + st.Err.Error()
		case !st.Sink.Unreachable.IsZero() && st.State == table.JobRunning:
			// The sink retries meanwhile; say why nothing is written.
			state += fmt.Sprintf(": cannot reach Kafka at %s since %s, retrying", st.Sink.Brokers, st.Sink.Unreachable.Format("15:04:05"))
		}
		n := func(v int64) string { return strconv.FormatInt(v, 10) }
		calls := "" // a job without a model (ML_PREDICT) makes none
		if st.Model != nil {
			calls = st.Model.Summary()
		}
		kept := "" // in memory
		if s := st.Kept; s.Dir != "" {
			kept = fmt.Sprintf("%s: %d groups, %d checkpoints", s.Dir, s.Groups, s.Stored)
			if !s.Last.IsZero() {
				kept += fmt.Sprintf(" (the last %s ago, took %s)", time.Since(s.Last).Round(time.Second), s.Took.Round(time.Microsecond))
			}
			size := fmt.Sprintf("%.1f MiB", float64(s.Bytes)/(1<<20))
			if s.Bytes < 1<<20 {
				size = fmt.Sprintf("%d KiB", (s.Bytes+1023)>>10)
			}
			kept += fmt.Sprintf(", %d records awaiting the next, %s on disk", s.Awaiting, size)
		}
		res.Rows = append(res.Rows, []string{j.ID(), j.Statement(), state, n(st.Read), n(st.Written), n(st.Accepted), n(st.Released), n(st.Rejected), n(st.Errors),
			st.Uptime.Round(time.Second).String(), calls, kept})
	}
	return res
}

// ErrStateDir is returned for an INSERT that cannot keep its state in the
// session's 'state-dir'.
var ErrStateDir = errors.New("cannot keep the job's state")

// openState opens the state folder of a job into table name: a folder of
// dir named after the table ("orders_by_customer", then
// "orders_by_customer-2" for a second job into it in this session). The
// folder remembers statement, so that another query is refused there.
func (e *Engine) openState(dir, name, statement string, p *query.Plan) (*jobState, error) {
	// Only groups and windows count records; the rows a join keeps are
	// the same however often their records are read.
	counts := (p.KeepsGroups() || p.KeepsWindows()) && !p.JoinsStreams()
	if _, ok := p.Table().Source.(flow.ShareProgress); !ok && counts {
		return nil, fmt.Errorf("%w: 'state-dir' keeps the groups and windows of a query over a share group (connector 'kafka-sharegroup'), whose records are accepted once the groups that count them are stored; table '%s' is read by connector '%s', which a restarted job reads again from its start, so its state would count records twice: RESET 'state-dir' before this INSERT",
			ErrStateDir, options.Cut(p.Table().Name()), p.Table().Bound.Connector.Name())
	}
	folder := stateFolder(name)
	e.mu.Lock()
	if e.stateDirs == nil {
		e.stateDirs = map[string]bool{}
	}
	base := folder
	for n := 2; e.stateDirs[filepath.Join(dir, folder)]; n++ {
		folder = fmt.Sprintf("%s-%d", base, n)
	}
	path := filepath.Join(dir, folder)
	e.stateDirs[path] = true
	e.mu.Unlock()
	store, err := state.Open(path, statement, e.logger())
	if err != nil {
		e.mu.Lock()
		delete(e.stateDirs, path)
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: INSERT INTO '%s': %w", ErrStateDir, options.Cut(name), err)
	}
	return &jobState{Store: store, free: func() {
		e.mu.Lock()
		delete(e.stateDirs, path)
		e.mu.Unlock()
	}}, nil
}

// jobState is a job's state folder. Closing it (at the job's end) frees
// the folder, so that the session's next job into the table, a STOP JOB
// and the same INSERT again say, continues from it.
type jobState struct {
	*state.Store
	free func()
	// txn is the job's sink when it writes in transactions that commit
	// with the state (flow.TxnWriter); nil otherwise.
	txn flow.TxnWriter
}

// txnTimeout bounds the calls a commit makes to a transactional sink.
const txnTimeout = time.Minute

// Commit stores a batch's state (query.State) and, for a sink that writes
// in transactions, the token of the transaction that holds the batch's
// rows, in one write; then it commits that transaction. A process that
// dies in between leaves the token, and the next run commits the
// transaction (joinTxn) before it writes anything.
func (s *jobState) Commit(keys, values [][]byte, records []flow.Origin) error {
	if s.txn == nil {
		return s.Store.Commit(keys, values, records)
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnTimeout)
	defer cancel()
	token, err := s.txn.Prepare(ctx)
	if err != nil {
		return err
	}
	if err := s.Store.CommitTxn(keys, values, records, token); err != nil {
		return err
	}
	if token == nil {
		return nil
	}
	if err := s.txn.Commit(ctx); err != nil {
		return err
	}
	// Committed: the token goes before the next transaction begins. A run
	// that found it after that one began would end that one instead (an
	// EndTxn names the producer and epoch, not the transaction).
	return s.Store.CommitTxn(nil, nil, nil, nil)
}

// joinTxn ties a sink that writes exactly once in transactions to the
// job's state: it needs one, and the transaction a previous run of the
// job left prepared in it is finished first.
func (e *Engine) joinTxn(ctx context.Context, name string, w flow.Writer, store *jobState) error {
	tw, ok := w.(flow.TxnWriter)
	if !ok || !tw.Transactional() {
		if store == nil {
			return nil
		}
		token, err := store.Txn()
		if err != nil {
			return fmt.Errorf("%w: INSERT INTO '%s': %w", ErrStateDir, name, err)
		}
		if token != nil {
			return fmt.Errorf("%w: INSERT INTO '%s': the job's state in %s holds a transaction of its sink that a previous run left unfinished, and table '%s' no longer writes in transactions; set its 'sink.delivery-guarantee' back to 'exactly-once' so that the transaction is finished, or use another state directory",
				ErrStateDir, name, store.Dir(), name)
		}
		return nil
	}
	if store == nil {
		return fmt.Errorf("%w: INSERT INTO '%s': table '%s' writes exactly once, in Kafka transactions committed with the job's state, and this job keeps none: "+
			"set a state directory (SET 'state-dir' = '/var/lib/kshare', or kshare run --state-dir) for a GROUP BY or window aggregation over a 'kafka-sharegroup' table, or write 'at-least-once'",
			ErrNotExactlyOnce, name, name)
	}
	store.txn = tw
	token, err := store.Txn()
	if err == nil && token != nil {
		rctx, cancel := context.WithTimeout(ctx, txnTimeout)
		err = tw.Recover(rctx, token)
		cancel()
		if err == nil {
			// Committed, or its rows written again in a transaction now
			// open: that one commits as every other does (its token
			// stored first), and the token goes.
			err = store.Commit(nil, nil, nil)
		}
	}
	if err != nil {
		store.txn = nil
		return fmt.Errorf("%w: INSERT INTO '%s': %w", ErrStateDir, name, err)
	}
	return nil
}

func (s *jobState) Close() error {
	err := s.Store.Close()
	s.free()
	return err
}

// stateFolder is a table name as a folder name: letters, digits, '-',
// '_' and '.' kept, anything else '_'.
func stateFolder(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "_" + string(b)
	}
	return string(b)
}

// logger is the engine's logger, slog.Default() when none was set.
func (e *Engine) logger() *slog.Logger {
	if e.log == nil {
		return slog.Default()
	}
	return e.log
}
