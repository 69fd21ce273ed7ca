// Package sinkspec declares the names and keys of the connectors of
// package sinks, apart from their code: the README's generator and the
// DDL tests (internal/ddltest) bind against the declarations without
// linking the print sink's renderer (package query), which package
// table's own tests must not link.
package sinkspec

import "github.com/kshare/kshare/options"

// Print and Blackhole are the connectors' names, as Flink names them.
const Print, Blackhole = "print", "blackhole"

// OptPrintIdentifier and OptStandardError are print's keys, Flink's.
const OptPrintIdentifier, OptStandardError = "print-identifier", "standard-error"

// PrintOptions are the keys of a 'print' table.
var PrintOptions = &options.Set{Owner: "connector 'print'", Options: []options.Option{{
	Key: OptPrintIdentifier, Type: options.String,
	Description: "Prefix of every line, followed by '> ' (orders> +I[1, ann]); without it a line is the row alone.",
}, {
	Key: OptStandardError, Type: options.Bool, Default: "false",
	Description: "Write to standard error instead of standard output.",
}}}

// BlackholeOptions are the keys of a 'blackhole' table: none but
// 'connector'.
var BlackholeOptions = &options.Set{Owner: "connector 'blackhole'"}
