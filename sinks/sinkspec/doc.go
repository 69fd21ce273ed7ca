// Package sinkspec declares the names and keys of the write-only connectors
// of packages sinks ('print', 'blackhole'), sinks/filesystem ('filesystem')
// and sinks/jdbc ('jdbc'), as data and apart from their code: the WITH keys
// with their defaults and checks, the formats a 'filesystem' table may
// write, the delivery guarantees of a 'jdbc' table, and the reading of its
// 'url' (PostgresURL). The DDL tests (internal/ddltest) and the generator of
// docs/connectors.md bind against these declarations without linking the
// sinks themselves: their writers, the PostgreSQL driver, the renderer of
// the print sink.
//
// It may import options only.
package sinkspec
