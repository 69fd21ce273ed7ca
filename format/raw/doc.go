// Package raw is the 'raw' format: the whole record value is the one
// physical column of the table, as in Flink's raw format.
//
// How a value's bytes become the column:
//
//	CHAR, VARCHAR, STRING   text in 'raw.charset' (UTF-8 by default; also
//	                        US-ASCII, ISO-8859-1, UTF-16BE, UTF-16LE), stored
//	                        as UTF-8; bytes that are not text in the charset
//	                        are an error naming their offset
//	BINARY(n)               exactly n bytes
//	VARBINARY, BYTES        the bytes as they are
//	BOOLEAN                 one byte: 0 is false, anything else true (as Flink)
//	TINYINT                 one byte, two's complement
//	SMALLINT, INT, BIGINT   2, 4, 8 bytes, two's complement, in 'raw.endianness'
//	FLOAT, DOUBLE           4, 8 bytes, IEEE 754, in 'raw.endianness'
//
// A value of another length than the type's is an error. A nil value (a
// Kafka tombstone) is a NULL, and an error for a NOT NULL column; an empty
// value is an empty string or byte string. The declared length of CHAR,
// VARCHAR and VARBINARY is not enforced, as in the json format (Flink
// enforces lengths only at sinks). Errors are *table.DecodeError with the
// column's name as Field.
//
// Writing is the mirror of reading: the column's value is the whole record
// value, text in 'raw.charset', numbers in 'raw.endianness', BOOLEAN as one
// byte 0 or 1, bytes as they are. NULL is no value at all (Encode reports
// null: a Kafka tombstone), as Flink's raw format writes null. A character
// the charset cannot hold is an error naming it, where Java would write '?'.
//
// It may import types (the column's type), table (the Decoder and Encoder
// contracts) and options only; it knows no connector.
package raw
