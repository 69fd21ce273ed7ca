// Package table is kshare's SQL surface below the query engine: the
// statements and table definitions (their columns typed by package
// types), the binding of a definition to its connector and format,
// the catalog, and the registries that connectors and formats join by
// name, with the interfaces a connector and a format implement to be bound
// (Connector, Format, their optional capabilities). What a bound table
// does at run time (its Source's streams, its Sink's writers) is package
// flow's. Reading SQL text is package parse's job; table does not import
// it.
//
// It may import types (the columns' types), flow (the sources and sinks its
// connectors make, the kinds of a change's rows, a job's counts), options
// (the WITH clauses), internal/named (its registries) and internal/errlist
// (the problems of a binding, reported together).
//
// A script goes through three steps, none of which performs I/O:
//
//	sts, err := parse.Parse(script)      // typed statements, or errors with line:column
//	res, err := catalog.Exec(sts[i])     // CREATE TABLE binds: options, metadata, format
//	stream, err := t.Source.Open(ctx, o) // the connector connects here
//
// SELECT statements are handed on as text (Select.SQL) for the query
// package, SET and RESET as typed statements for the shell.
package table
