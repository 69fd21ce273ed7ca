// Package sinks holds the connectors that only write and need nothing
// outside the process, Flink's sinks for looking at or timing a pipeline:
//
//   - 'print' writes each row to standard output (or standard error) as
//     Flink's print connector does: +I[1, ann], or id> +I[1, ann] with a
//     'print-identifier';
//   - 'blackhole' discards every row, acknowledging it at once, to measure
//     what a pipeline costs without a destination.
//
// Both take an updating query's changes (flow.ChangelogSink), as Flink's
// do: INSERT INTO a print table of a GROUP BY prints -U[...] and +U[...]
// as groups change.
//
// Neither takes a 'format' (table.FormatFree): print renders rows in
// Flink's text form (render.Formatter, as the shell's changelog output
// does), blackhole renders nothing. Neither can be read: a query over
// their tables fails at Open, naming INSERT INTO as their use.
//
// Importing this package registers both connectors. Package
// sinks/filesystem is the 'filesystem' connector, which writes files.
package sinks
