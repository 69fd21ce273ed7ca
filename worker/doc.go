// Package worker runs a function on each row of a query, many rows at once,
// and settles each row's record by what the function said: done (accept),
// failed (release: the broker delivers it again, its delivery count rising)
// or never to work (reject). It is what kshare.Work and `kshare work` are
// built on: the Go API hands rows to a Go function, the command to a
// program (see Command).
//
// # Delivery
//
// A record is accepted only once its row is done: the rows of a batch are
// settled together when the batch's last row is done, each with its own
// outcome. A batch stays held until then, and the connector renews the
// locks of its records for as long as that takes, so a row that runs
// longer than the group's lock duration is not handed to another consumer
// meanwhile. A row is started only when a worker is free to start it: the
// pool takes the next row from the query when a worker asks for one.
//
// It owns the pool (Run, New), the two ways a program does the work
// (Command: a process per row; Persistent: long-lived copies that answer
// each row with a JSON line, through internal/procpool), where a finished
// row's output goes (OutFile, TableOut), the pool's Prometheus counts, and
// Tune, which sizes a kafka-sharegroup table's polls for slow rows.
//
// It may import query (the rows it takes), flow (the settling of records
// and the writer TableOut writes to), table (the bound table Tune reads and
// the decoder of TableOut), types (the columns), options,
// internal/procpool, and sharegroup for the names of the options Tune sets;
// it imports no other connector.
package worker
