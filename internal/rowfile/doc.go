// Package rowfile writes a query's rows as files: CSV (RFC 4180, a NULL an
// empty field, every other value in the shell's text form) and Parquet
// (Snappy-compressed, the Arrow schema kept), and makes a finished file
// durable under its final name (Publish, SyncDir). `kshare export` and the
// 'filesystem' sink both write through it, so a file means the same thing
// from either.
//
// It may import types (the columns) and render (values as text); it knows
// no connector and no query.
package rowfile
