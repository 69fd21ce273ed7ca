// Package flow is the runtime contracts between the engine and the tables
// it reads and writes: a Source opens a Stream of Batches, Arrow records
// each settled through its Acker (every row accepted, released for
// redelivery or rejected, the Dispositions a share group knows); a Sink
// opens a Writer that confirms what it wrote, with the optional
// capabilities a writer may have (changes, transactions, merges, record
// identities); lookups (Lookuper, VersionedSource), rows kept on disk
// (Keep), row kinds, a row's Origin and the counts a source and a sink
// keep (Stats, SinkStats). Connectors implement these, queries and
// pipelines call them; how a table is declared and bound to its connector
// is package table's. It imports only options and types.
package flow
