// Package pipeline runs INSERT INTO ... SELECT jobs: it reads a query's
// result batches, writes each to a sink and settles the batch's source
// records only once the sink acknowledged every row of it. A batch the sink
// refuses, or that is still unacknowledged when the job stops, has its
// records released, never accepted: the broker hands them out again. That
// is the delivery promise across the hop: at least once, end to end.
//
// Several batches are in flight at once (Options.InFlight): a batch is taken
// out of the query with query.Rows.Hold, so that reading goes on while the
// sink's acknowledgements come back. An updating query (GROUP BY, windows)
// goes only into a sink that takes changes (flow.ChangelogSink), one batch
// at a time: its batches replace earlier rows and are settled in order.
//
// Stop ends a job at once: what is in flight is released. Drain ends it
// gently, as a service that is told to stop should: it stops reading (the
// source gives back at once what it fetched ahead), lets the batches in
// flight be acknowledged within a bound, and releases only what is left.
//
// It may import query (the rows it reads), flow (the sinks' contracts) and
// table (a job's state and counts); it knows no connector, sink or format
// by name.
package pipeline
