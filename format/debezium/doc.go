// Package debezium is the 'debezium-json' format: a table's changelog as
// Debezium's JSON change events, read and written as Flink's debezium-json
// format does. It is a table.ChangelogFormat: each value is a change with a
// kind, not a row to append.
//
// A value is an object {"before": <row>|null, "after": <row>|null, "op":
// "c"|"r"|"u"|"d", ...}, whose other fields (source, ts_ms, transaction)
// are not read; with 'debezium-json.schema-include' it is Kafka Connect's
// {"schema": ..., "payload": <that object>}, and the schema is not read
// either. Reading:
//
//	"c" (create), "r" (a snapshot's read)   one +I row, "after"
//	"u" (update)                            a -U row, "before", then a +U
//	                                        row, "after"
//	"d" (delete)                            one -D row, "before"
//	no value, an empty one, JSON null       no change: no row, no error
//	                                        (Debezium's tombstone after a
//	                                        delete); so is a null "payload"
//
// The rows are read by the json format (format/json), with the json keys
// that this format's keys map onto ('debezium-json.ignore-parse-errors' is
// 'json.ignore-parse-errors', and so on: see spec.go), so that types,
// timestamps, decimals and errors are exactly a json table's. A change
// appends all its rows or none: an update's two rows are read as one JSON
// array. Errors are *table.DecodeError with the path of the field in the
// change ("op", "before", "after.price", "payload.before.id"); a value
// that is not JSON says at which byte. An update or a delete without
// "before" says that Debezium writes it only when the source table logs its
// old rows whole (PostgreSQL's REPLICA IDENTITY FULL). With
// 'debezium-json.ignore-parse-errors' every such value is skipped instead
// (an error wrapping table.ErrSkipped).
//
// Writing is Flink's: a +I or +U row is {"before":null,"after":<row>,
// "op":"c"}, a -U or -D row {"before":<row>,"after":null,"op":"d"}, the row
// written by the json format; Encode writes an insert. kshare writes no
// schema: 'debezium-json.schema-include' is refused for writing.
//
// It may import format/json (the rows), table (the format contracts), flow
// (the kinds of a change's rows), types (the columns) and options (its
// keys); it knows no connector.
package debezium
