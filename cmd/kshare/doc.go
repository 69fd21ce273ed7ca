// Command kshare is kshare's command line: the SQL shell over Kafka share
// groups (kshare shell, what kshare runs with no command), and the commands
// around it: export (a SELECT's rows to a CSV, Arrow IPC or Parquet file),
// work (a program run on each row), run (a script's INSERT INTO pipelines
// as a service, with health endpoints and a drain on SIGTERM), demo (the
// shell on an embedded broker producing orders), broker (a local kfake
// broker) and produce (standard input's lines to a topic). With
// --metrics-addr it serves the Prometheus metrics of the share groups it
// reads and their lag.
//
// Each subcommand lives in its own file and registers itself from init with
// register; main only dispatches. Subcommands parse their own flags with
// their own flag.FlagSet.
//
// It may import the root package (the engine), sqlshell (the shell), worker,
// admin, kafkaclient, sharegroup (the share groups being read, for the lag
// metric), model (the models' call metrics), pipeline (the jobs' metrics),
// parse, query, table, types (the columns of the rows it writes), options and
// format/json. It is the top of the layers: nothing imports it.
package main
