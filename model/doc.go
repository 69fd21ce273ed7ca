// Package model calls the models that CREATE MODEL declares: the providers
// that 'provider' names, their options declared as data, and the one
// interface, Predictor, through which a query predicts a batch of rows.
//
// What it owns:
//
//   - The provider registry (Register, Registry.Lookup with a "did you
//     mean"), as the connectors' is table's: a provider registers itself
//     by name in init with its keys in an options.Set, from which the
//     documentation's tables come (Common and Every for the keys every
//     model takes).
//   - Binding (Registry.Bind, a table.ModelBinder for the catalog): a
//     definition's options parsed against its provider's keys and
//     Common, and its INPUT and OUTPUT columns checked against what the
//     provider reads and fills, with no I/O and every problem at once.
//   - Predicting (Bound.Open, Predictor): the calls of a model, at most
//     'max-concurrent-operations' at once, paced by 'rate-limit', each
//     bounded by 'timeout' and tried again up to 'retry-num' times when it
//     fails in a way worth retrying; each row's Outcome says what became
//     of it: OK, Retry (with the delay to wait) or RowError (with what is
//     wrong), for the caller to accept, release or reject its record.
//   - The providers: 'openai' (any OpenAI-compatible server's chat
//     completions or embeddings), 'http' (a row POSTed as JSON) and
//     'command' (a local program speaking kshare work --persistent's
//     protocol).
//
// What it may import: options, types (the INPUT and OUTPUT columns' types),
// table (model definitions and their binding), flow (the counts of a model's
// calls), format/json (a row written as JSON and an answer read into columns
// exactly as the json format writes and reads them), internal/named,
// internal/procpool, internal/errlist, arrow-go and the standard library. Not
// query, worker, pipeline or connector: package mlpredict (the table
// ML_PREDICT reads) calls models, so imports run from there to here; a model
// knows nothing of Kafka or of records.
//
// Why Arrow in and out: ML_PREDICT's input is a batch the query already
// holds, and its output joins that batch; a Predictor reads the INPUT
// columns where they are and hands back an OUTPUT batch aligned row for
// row with its input, so that no row is turned into Go values and back.
// The calls themselves speak JSON (a row as the json format writes it, an
// answer read as the json format reads a value), and one decoder appends
// each answer to the OUTPUT columns whole or not at all.
//
// Errors name the model and say what went wrong without any secret: no
// API key, no URL query. A row's position and its record's coordinates are
// the caller's to add.
package model
