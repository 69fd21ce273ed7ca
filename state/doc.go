// Package state keeps a query's state in a directory, so that a query
// started again on it continues where it stopped: the groups of an
// aggregate query and the identities of the records they folded, as
// query.State describes them. It is what `kshare run --state-dir DIR` and
// SET 'execution.checkpointing.dir' open, one directory per job.
//
// The directory is a Pebble store (an embedded LSM key-value store, the
// one CockroachDB keeps its data in), so that the state is bounded by the
// disk rather than memory, each write is atomic, and a crash at any
// instant leaves the last complete write. A directory remembers the query
// that wrote it: another query is refused, rather than mixing its groups
// into ones it cannot read.
//
// It may import flow (the record identities and share-group offsets) and
// nothing else of kshare's.
package state
