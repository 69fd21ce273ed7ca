// Package query runs SELECT statements over a table's stream: it plans a
// statement against a catalog (Prepare), runs it (Run) and hands out the
// result as Arrow record batches (Rows, an array.RecordReader). It owns the
// statement: the rewrite of Flink's syntax into what the grammar reads
// (rewrite.go), the planning of FROM, joins, windows, GROUP BY and the
// select list, and the runtime of a query (Rows, aggregation, windows,
// joins, epochs and the State). The expressions it plans and evaluates are
// package expr's; it is the Scope their compiler resolves names in.
//
// It may import expr (the expressions), flow (the runtime contracts of the
// tables it reads), lookup (the runtime of a lookup join), table (the
// catalog and its bound tables), parse (the tokens its rewrite reads),
// render (values as text), types (the columns) and options; never a
// connector, a format or a sink.
//
// # The statement
//
//	SELECT * | <expr> [AS <alias>], ... FROM <table> [[AS] <alias>] [WHERE <predicate>]
//	    [GROUP BY <expr>, ...] [HAVING <predicate>] [LIMIT <n>]
//
// where <table> is a table's name or a window table function over one
// (see "Windows"):
//
//	TABLE(TUMBLE(TABLE <table>, DESCRIPTOR(<time attribute>), <size>[, <offset>]))
//	TABLE(HOP(TABLE <table>, DESCRIPTOR(<time attribute>), <slide>, <size>[, <offset>]))
//	TABLE(CUMULATE(TABLE <table>, DESCRIPTOR(<time attribute>), <step>, <max size>[, <offset>]))
//
// or with Flink's named arguments, DATA first: TUMBLE(DATA => TABLE
// <table>, TIMECOL => DESCRIPTOR(<time attribute>), SIZE => <size>[, OFFSET
// => <offset>]), with SLIDE and STEP for HOP's and CUMULATE's.
//
// A table's computed columns (total AS price * quantity in its CREATE
// TABLE) are columns like the others: each is an expression over the
// table's physical and metadata columns, planned with every query and
// evaluated on every source batch, in its declared place among the
// columns (SELECT * shows it there).
//
// Expressions (columns, literals, operators, CAST, CASE, the scalar
// functions SHOW FUNCTIONS lists) and their types are package expr's: see
// its documentation for what each does and where kshare and Flink differ.
//
// Aggregates (in the select list and HAVING): COUNT(*), COUNT(x),
// COUNT(DISTINCT x), SUM, AVG, MIN, MAX, LISTAGG(x [, separator]), DISTINCT
// in any of them, and FILTER (WHERE <predicate>) after any of them, which
// folds in only the rows the predicate is TRUE for (COUNT(*) FILTER (WHERE
// qty > 1)); see "Aggregation".
//
// SELECT DISTINCT a, b is GROUP BY a, b, as in Flink: an updating result
// whose rows are only inserted.
//
// Refused, with an error that says what is supported: ORDER BY, DISTINCT *,
// JOIN, subqueries, UNION, window functions (OVER), SESSION windows,
// Flink's legacy group windows (GROUP BY TUMBLE(ts, size) and TUMBLE_START,
// HOP, SESSION and theirs: the error shows the query written over the
// window TVF instead), WITH, OFFSET,
// functions kshare does not have, DIV and && (MySQL's, which Flink does not
// have). Errors wrap ErrSyntax, ErrNotSelect, ErrUnsupported,
// ErrUnknownColumn, ErrType or ErrEval.
//
// Names ignore case. Quote a name with backticks (`key`, `timestamp`) when it
// is a reserved word; the error for an unquoted reserved word says so. Some
// of Flink's reserved words (partition, offset) also parse unquoted where the
// grammar can tell; quote them anyway if the statement is to run in Flink
// too. String literals have no backslash escapes, as in Flink: 'a\b' is
// three characters. Double quotes are refused (a string in MySQL, a name in
// PostgreSQL: either reading could answer SELECT "name" wrongly), and so are
// Flink's hints (/*+ OPTIONS(...) */), which would change a table's options
// behind its definition.
//
// # Aggregation
//
// A query with GROUP BY or an aggregate call has an updating result, as in
// Flink: its rows are changes of a result table of one row per group
// (Plan.Updating, Rows.Op). A group's first row is an insert (+I); when a
// batch changes it, the old row is retracted (-U) and the new one follows
// (+U); when HAVING stops keeping a group, its row is deleted (-D), and a
// group HAVING starts to keep is inserted. Types are Flink's: COUNT is
// BIGINT NOT NULL; SUM, MIN and MAX have their argument's type, except that
// SUM of DECIMAL(p, s) is DECIMAL(38, s); AVG of an integer type is that type
// (an integer average, truncated toward zero, as in Flink), of DECIMAL(p, s)
// DECIMAL(38, max(6, s)) rounded half away from zero, of FLOAT or DOUBLE
// that type; LISTAGG is STRING. DECIMAL sums are exact. A SUM beyond its
// type is an error (Flink wraps around). Aggregates skip NULLs and are NULL
// over no value; COUNT is 0 then. NULL keys form one group. Every column of
// the select list and HAVING is grouped or inside an aggregate. LIMIT is
// refused (an updating result has no first N rows); Options.MaxRows counts
// changes and ends the query after the batch of changes that reaches it. A
// batch of changes lists the groups in the order the batch touched them,
// each group's changes together, as Flink emits them: -U right before its
// +U (-U[a, 1], +U[a, 2], -U[b, 1], +U[b, 2]), +I or -D alone. A retracted
// row is made again from the group's keys and aggregate results as they
// were: a select list that reads the current time (CURRENT_TIMESTAMP)
// shows it as of the change in the -U row too, as Flink's projection after
// an aggregation does.
//
// The state is one entry per group, with the accumulators of its
// aggregates: it grows with the groups, not with the records, except for
// COUNT(DISTINCT x) (the distinct values) and LISTAGG (its text).
//
// With Options.State (a pipeline's state directory) the groups are kept
// there too (state.go): a batch's records are accepted once a Commit
// stored what it changed, with the other batches of its epoch
// (Options.CheckpointInterval, epoch.go), and a GROUP BY holds at most
// Options.GroupsInMemory groups in memory, reading the others back from
// the State when a row needs them (a filter of their keys, keyfilter.go,
// keeps new keys from asking).
//
// # Windows
//
// A window table function gives each row of its table one row per window
// it falls in, with three more columns: window_start and window_end
// (TIMESTAMP(3) NOT NULL, the end exclusive) and window_time (the window's
// last millisecond, of the time attribute's type). TUMBLE's windows are
// size long, one after another; HOP's are size long, one every slide (size
// a whole multiple of slide); CUMULATE's start every max size and end
// every step within it (max size a whole multiple of step). Windows are
// aligned to the epoch, as Flink's are, shifted by the offset if there is
// one (which may be negative; 10-minute windows with an offset of 1 minute
// are [08:01, 08:11), [08:11, 08:21), ...). A query over one either
// aggregates with GROUP BY window_start, window_end[, ...] (Flink's window
// aggregation), or reads its rows as they are (SELECT * FROM
// TABLE(TUMBLE(...)) [WHERE ...]): a stateless projection whose rows are
// handed out as their records come, each settled through the record it
// came from as any projection's (see Rows; a HOP or CUMULATE record's rows
// are settled as one: a released row releases the record). A record whose
// time is NULL falls in no window, as Flink drops it, and is accepted as
// a row WHERE drops is; a record older than the watermark is not late
// here, as in Flink, since no window waits for it. GROUP BY without
// window_start and window_end is refused.
//
// The time attribute in DESCRIPTOR is the table's WATERMARK column (event
// time) or a column AS PROCTIME() (processing time). The watermark of event
// time is kept per partition (below); of processing time, it is the
// clock. A window closes when the watermark passes
// its end, and its row is emitted then (+I); at the end of a bounded
// source every window closes. A record older than the watermark is late
// (Stats.Late counts them); it is never dropped: it is folded into its
// window, whose row, if emitted already, is updated (-U, +U) at once.
// A closed window's state is kept for Options.AllowedLateness
// ('window.allowed-lateness', 10 minutes by default; Flink's
// table.exec.emit.allow-lateness) after its end, then dropped: the state
// grows with keys x the windows open or within that lateness, never with
// the windows seen. A record for a window already dropped updates nothing
// there: a window never gets a second row. When none of its windows is
// kept, the record is accepted unapplied and Stats.BeyondLateness counts
// it.
//
// Emission policy. With Options.AcceptFolded (the shell's and the Go
// API's queries) a window's records are accepted once folded into its
// state, nothing is held, and each window's row comes once, when the
// watermark passes its end (earlier only with EarlyFire). Without it (a
// pipeline's), the delivery rule holds a window's records (locked to
// this consumer, neither accepted nor released) until a delivered row
// reflects them, and the broker caps the records locked per partition
// (group.share.partition.max.record.locks, 2000 by default): a window
// longer than the cap's worth of records would stall the stream. So the
// running result of every window with unreflected records is emitted as
// updates (+I the first time, then -U/+U) before its close:
//
//   - when the records held reach Options.MaxHeld (the setting
//     'window.max-held-records', 1000 by default: half the broker's
//     default cap, so that one more poll fits under it; the count is over
//     all partitions, which bounds each partition's), and
//   - as soon as the source says it waits for the query
//     (flow.ReaderWaiter: the query took every batch there is, and a
//     kafka-sharegroup member that handed out its poll polls again only
//     once what it brought is settled, so holding on would keep it idle;
//     a slow query thus emits for several batches at once, a fast one for
//     each), and, for a source that cannot say so, when no batch came for
//     Options.HoldLinger (50 ms) while records are held, and
//   - at most Options.EarlyFire after a record came that no delivered row
//     reflects yet, if it is set ('window.early-fire'; Flink's
//     table.exec.emit.early-fire.delay).
//
// Rows before a window's close are therefore the rule on a live share
// group, not the exception: a window's row is final only once the
// watermark passed its end. A source that takes nothing (a flow.Looker:
// the kafka connector, PEEK) locks nothing, so neither MaxHeld nor the
// linger applies to it: each window's row comes once, at its close
// (earlier only with EarlyFire), and again only for a late record.
//
// A source batch is accepted when the caller moves past a batch of changes
// after which every window it changed has had its row emitted; the rows of
// a window that did not change since its last row (or that HAVING hides)
// count as emitted. When the query ends before, the held batches are
// released.
//
// The watermark is kept per partition (Flink keeps it per source split):
// each partition's mark is the largest event time seen in it less the
// WATERMARK's delay, and the watermark is the smallest mark over the
// partitions that are not idle. A stream that names its partitions before
// their records come (flow.Partitioned: kafka-sharegroup names its
// topics' partitions) has each of them hold the watermark back until it
// delivers, so that the partition a share group happens to hand out first
// does not close every window. A partition that delivered nothing for
// Options.SourceIdleTimeout ('window.idle-timeout', Flink's
// table.exec.source.idle-timeout, 10 s by default) is idle and holds
// nothing back; once every partition is, the watermark moves on with
// processing time, so that windows close though no record comes. The
// partitions come from each row's record (flow.RowOrigins); a source that
// cannot tell them is one partition. A query reads one member's share of
// the records: the watermark is this query's, not the group's.
//
// # Delivery
//
// A query delivers at least once: see Rows for what becomes of each record.
// A query ends on LIMIT, on Options.MaxRows, on Options.IdleTimeout, when its
// context ends, on an error, or when the caller closes it; in every case the
// records behind rows the caller has not moved past are released, never
// accepted.
//
// The delivery rule for aggregates: a record is accepted only once a
// delivered row reflects it. Each source batch is folded into the groups at
// once and gives one result batch: the changes of the groups it touched.
// Every record of the batch contributes to a group that batch's rows show,
// so the source batch is accepted when the caller moves past that result
// batch, and released when the query ends before. Records WHERE drops are
// accepted, as in every query; so are those of a batch that changed no
// row (a MAX that stayed, a group HAVING hides), which the rows delivered
// before already reflect. A result row
// reflects many records, so ReleaseRow and RejectRow refuse it
// (ErrUpdating) and Hold refuses the batch; ReleaseBatch releases every
// record of it and ends the query, whose groups cannot forget them. The
// result covers only the records this query received: another consumer in
// the same share group aggregates the others.
package query
