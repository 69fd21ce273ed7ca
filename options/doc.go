// Package options declares what a WITH clause may say, as data, and turns the
// raw key/value pairs of a table definition into typed values in one parse and
// validate step that reports every problem at once.
//
// A connector and a format each declare a Set. The table layer parses a WITH
// clause against the connector's set and the format's set together, so an
// unknown key is reported once, with the keys that would have been accepted.
//
// It owns the declarations (Set, Option: a key's type, default, bounds,
// allowed values, aliases and whether it is a secret), their reading
// (Parse into Values, with an error per problem and a "did you mean" for
// a misspelled key), Flink's spelling of durations and sizes, the same
// durations as command-line flags (DurationVar), and the Markdown tables
// of docs/connectors.md (Markdown).
//
// It is at the bottom of the layers: it may import internal/errlist only,
// so that table, every connector, format and sink can declare their keys
// with it.
package options
