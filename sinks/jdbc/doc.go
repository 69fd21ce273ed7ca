// Package jdbc is Flink's 'jdbc' connector, write side, for PostgreSQL:
// INSERT INTO a table with 'connector' = 'jdbc' writes its rows into the
// PostgreSQL table 'table-name' of the database 'url'.
//
// Without a PRIMARY KEY the sink appends: each flush is one transaction
// that COPYs its rows in. With PRIMARY KEY (...) NOT ENFORCED it upserts:
// an insertion or an update after (+I, +U) is INSERT ... ON CONFLICT (key)
// DO UPDATE, a deletion (-D) is DELETE by key, and an update before (-U) is
// dropped, since the +U that follows replaces the row; within one flush
// only a key's last change is written. Such a table takes an updating
// query's changes (flow.ChangelogSink), keyed by the same columns
// (flow.KeyedSink, checked by INSERT INTO).
//
// Delivery is at least once: a batch is acknowledged (its source records
// accepted) only once the transaction holding its rows committed; a flush
// that fails for want of a connection is tried again on a new one
// ('sink.max-retries'), and a commit whose answer was lost may write its
// rows twice (an upsert then writes the same row again; an append has a
// duplicate). A row the server refuses (a constraint, a value out of
// range) fails its batch with a *flow.RowError naming the row; the other
// batches of the flush are written without it. With
// 'sink.on-refused-record' = 'dead-letter' the writer is a
// flow.RefusedBySource: the pipeline settles the row's record by its
// source table's policy and writes the batch again without it.
//
// Sink.Open connects and checks the table before anything is read: that
// it exists, that each column has a PostgreSQL column of a fitting type,
// and for an upsert that the key is the PostgreSQL table's primary key or
// one of its unique constraints.
//
// Tables of this connector cannot be read: a query over one fails at
// Open, naming INSERT INTO as its use.
//
// Importing this package registers the connector.
package jdbc
