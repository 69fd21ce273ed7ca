// Package parse is kshare's one reader of Flink SQL text. Every statement,
// whether the shell cuts it from a script, the Go API runs it or the
// export command reads it, goes through this package's lexer: one set of
// rules for quotes ('...' with a doubled ' for a quote and no backslash escapes,
// `...` for names), comments, numbers and invalid UTF-8, and one place
// (line and column, the column in characters) for every error.
//
// What it holds:
//
//   - Lexer and Token: the tokens of a script with their byte offsets;
//     Position turns an offset into line:column.
//   - Parse: a script into typed statements (table.CreateTable,
//     table.Select, ...), with every clause Flink has and kshare refuses
//     reported by name. A new statement is an entry of statementKinds and
//     its parse method.
//   - Type and TypeAt: the one parser of Flink type names, used by CREATE
//     TABLE, by CAST in package expr and by the format tests.
//   - IsCommand: which first words start a statement that is not a query,
//     from the same table of statements Parse dispatches on.
//
// Its users: sqlshell.Split cuts a script into statements with the Lexer
// (a ';' in a quote or comment never ends one); the query package rewrites
// the Flink spellings that xwb1989/sqlparser, the SELECT grammar, lacks
// (CAST targets, typed literals) on the Lexer's tokens, and places
// sqlparser's errors with them.
//
// Why a package of its own: the SQL grows (INSERT INTO, SHOW JOBS, window
// table functions, many functions), and text read in three places drifts
// apart; here it is read once. Why the statement types stay in package table:
// the catalog's Exec takes them, and table must not import parse (parse
// builds table's Definition and statements, and their types of package
// types), so imports run one way, parse -> table. ErrInvalidDefinition stays
// in table for the same reason: Definition.Validate returns it for a
// definition built in Go.
//
// It may import table (the statements it builds), types (the type names it
// reads), options and internal/errlist (the errors of a script, reported
// together). Nothing here performs I/O.
package parse
