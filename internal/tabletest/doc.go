// Package tabletest holds what the tests of the table layer and of the
// packages above it (query, sqlshell, the Go API) share: a connector whose
// tables live in memory (Connector, Source) and record what became of every
// row, a format that decodes nothing, the building of batches from JSON
// rows or ids, the reading back of a Parquet file, and Arrow memory that
// fails the test when it leaks (CheckedAlloc).
//
// The fakes follow the flow.Acker contract to the letter, so a test sees
// what a consumer did with each batch (its log) and what each row's fate
// was (its verdicts), the way the real connector would settle them.
//
// It is for tests only. It may import flow (the runtime contracts its fakes
// implement), table (the registry and the binding), types (the columns)
// and options; it never imports a real connector, so that a test of the
// planner runs without Kafka.
package tabletest
