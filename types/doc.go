// Package types is kshare's model of Flink SQL's data types: a type's kind,
// parameters and nullability (DataType), its text as Flink writes it, the
// rules of what a type can hold, and its mapping to and from Arrow types,
// which is how every batch in kshare carries its values. Names in SQL text
// are quoted here too (QuoteIdent, QuoteString), since a type's text
// quotes its ROW fields. It is the bottom of the SQL layers and imports
// none of the project's packages: tables, formats, expressions and the
// planner all build on it.
package types
