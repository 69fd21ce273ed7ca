// Package render turns Arrow values of Flink SQL types into Flink's text:
// what the shell, the print sink and the CSV files of the filesystem sink
// show, and what CAST(x AS STRING) gives (Formatter, CastString). The
// readers it renders through (IntReader, InstantReader, ...) yield each
// kind of value as one Go type whatever its Arrow type; the casts and
// kernels of expressions (package expr) read values with them too.
//
// It may import types (the types it renders), arrow, and the arithmetic of
// dates, times and decimals it shares with the formats (internal/calendar,
// internal/decimal); nothing that plans or runs queries, so that a sink
// that prints values does not link the planner.
package render
