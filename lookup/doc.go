// Package lookup is the runtime of a lookup join (FROM s JOIN t FOR
// SYSTEM_TIME AS OF s.proc_time ON s.k = t.k): a Source whose batches are
// s's rows, each followed by the columns of t's rows whose key equals the
// row's. The keys of a batch are looked up together, once each, in one call
// of t's flow.Lookuper (a PostgreSQL query, for a 'jdbc' table), after
// those found in a cache of the last keys looked up (Flink's
// 'lookup.cache' = 'PARTIAL').
//
// What becomes of each record stays with s's source and the reader: a row
// that found several matches gives several rows, and its record is settled
// as a whole (flow.MapAck); a row of an inner join that found none gives
// no row and its record is accepted with its batch, as a row WHERE
// filters out is; a LEFT JOIN gives it once, with NULLs for t's columns. A
// lookup that fails is tried again 'lookup.max-retries' times; then its
// batch's records are released, for the share group to hand out again,
// and the read ends with the error. Nothing is accepted for a row that was
// not joined.
//
// It may import flow (the contracts of the source it wraps and of the
// Lookuper it calls), types (the columns) and options; it never imports
// the planner (query), which makes its Source when it plans a join, nor a
// connector.
package lookup
