// Package sqlshell is kshare's SQL shell: it reads statements (typed at a
// prompt, given with -e, or read from a file), runs them on an engine and
// prints their results. It is thin on purpose: statements are parsed and run
// by the engine (the root package's kshare.Engine); the shell only cuts the
// input into statements, prints, and settles each batch of a query after its
// rows were written.
//
// # Delivery
//
// A SELECT over a kafka-sharegroup table hands out records under a lock, and
// kshare accepts a record only after its row reached its destination. The
// shell keeps that promise by moving on to the next batch (which settles the
// one before as delivered) only after the batch's rows were flushed to the
// output. When a query is stopped while a batch is being printed, every row
// not yet printed is released, so the broker hands its record out again; when
// writing fails, the whole batch is released, because it cannot be known
// which of its rows arrived.
//
// The rows of an aggregate (GROUP BY, COUNT, ...) are changes of its
// result; a batch of them reflects every record of the source batch behind
// it, so it is settled as a whole: printed, its records are accepted;
// stopped or failed in the middle, they are all released.
//
// It owns the cutting of input into statements (Split), the prompt with
// its line editing and history (Interactive), the output formats (Flink's
// 'table', 'tableau' and 'changelog', and 'csv' and 'json'), and the files
// of kshare export (Export: CSV, Arrow IPC or Parquet, a batch's records
// accepted only once the file holds its rows).
//
// It may import query (the rows it prints), parse, table (statements'
// results and jobs), types (the columns), flow (a query's counts), render
// (values as text), format/json (the json output) and internal/rowfile (CSV
// and Parquet files). It does not import the engine: it runs statements through
// its Engine interface, which the command line fills with kshare.Engine.
package sqlshell
