// Package json is the 'json' format: it decodes record values holding JSON
// into the Arrow columns of a table, and encodes rows into such values, as
// Flink's JSON format does.
//
// A value is one JSON object, one row; a top-level array of objects gives
// one row per element; the value null, an empty value (a Kafka tombstone)
// and null elements of an array give no row. Fields match columns by exact
// name; unknown fields are ignored; a missing field is null, or an error
// with 'json.fail-on-missing-field'. A field that appears twice takes its
// last value, and every occurrence must fit its column. The same rules hold
// inside ROW values, at any depth.
//
// How JSON values become SQL values:
//
//	TINYINT..BIGINT   an integer number (1.0 and 1e3 are not), or a string
//	                  holding one ("42"); out of range is an error, never a wrap
//	FLOAT, DOUBLE     a number, or a string holding one ("1.5", "NaN", "Infinity")
//	DECIMAL(p, s)     a number or a string holding one, read exactly from its
//	                  text; digits below s round half up (as Flink does); more
//	                  than p-s integer digits is an error
//	BOOLEAN           true or false, or the strings "true" and "false" (any case)
//	CHAR, VARCHAR     a string; a number or a boolean gives its text as
//	                  written, an object or array its JSON text as written.
//	                  Declared lengths are not enforced (Flink enforces them
//	                  only at sinks)
//	BINARY, VARBINARY a base64 string (standard alphabet, padding optional);
//	                  BINARY(n) needs exactly n bytes
//	DATE              "yyyy-MM-dd"
//	TIME(p)           "HH:mm[:ss[.fffffffff]]"
//	TIMESTAMP(p)      "yyyy-MM-dd HH:mm[:ss[.fffffffff]]", or with 'T' for ' '
//	                  when 'json.timestamp-format.standard' is 'ISO-8601'
//	TIMESTAMP_LTZ(p)  the same followed by 'Z' (Flink's form) or an offset
//	                  +hh:mm / -hh:mm (an extension), converted to UTC
//	ARRAY<T>          an array
//	MAP<K, V>         an object; each key is read as K reads a string
//	ROW<...>          an object
//
// Fractional seconds beyond a column's precision are truncated, as Flink's
// CAST to a lower precision does. JSON null fits any nullable type; into a
// NOT NULL type it is an error.
//
// With 'json.ignore-parse-errors', a field of a row (at any depth) whose
// value does not fit becomes null, as in Flink; where the field is NOT NULL
// the failure moves to the enclosing field, and a value that fails at the
// top, or that is not JSON at all, is skipped: Decode returns an error
// wrapping table.ErrSkipped, for the connector to count. An array element
// or map entry that does not fit fails its whole array or map.
//
// Invalid UTF-8 anywhere in a string makes a value not JSON (RFC 8259). A
// \u escape of a lone surrogate becomes U+FFFD, as in Go's encoding/json.
//
// Errors are *table.DecodeError: Field is the path of the value at fault
// ("quantity", "items[2].sku", "attrs['color']", "[1].qty" for the second
// element of a top-level array; empty when the value is not JSON, whose
// message says at which byte of the value), Msg says what was expected and what was
// found: expected INT, got "two".
//
// A decoder reads the value's bytes in place: field names are matched
// against the columns without copying, numbers are parsed from their text,
// strings are appended straight from the value unless they hold escapes.
//
// Writing is the mirror of reading, as Flink's JSON format writes:
//
//	TINYINT..BIGINT   a number
//	FLOAT, DOUBLE     the shortest number that reads back as the same value,
//	                  in plain digits from 1e-6 to 1e21 (15000000000, 1e-7);
//	                  NaN and the infinities as the strings "NaN",
//	                  "Infinity", "-Infinity" (as Jackson writes them).
//	                  Jackson writes Java's Double.toString (1.5E10, 1.0),
//	                  whose digits depend on the JVM (before Java 19 not
//	                  always the shortest: 4.9E-324); any JSON reader,
//	                  Flink's included, reads the same value from both
//	DECIMAL(p, s)     a number with its s fractional digits, exact; as Java's
//	                  BigDecimal.toString (scientific when the value is below
//	                  10^-6: 2.7E-8, 0E-10) unless
//	                  'json.encode.decimal-as-plain-number'
//	BOOLEAN           true or false
//	CHAR, VARCHAR     a string, escaped only where JSON requires it (the
//	                  quote, the backslash, control characters), as
//	                  Jackson does: <, > and & stay as they are, and text
//	                  is UTF-8 as it is; a string that is not UTF-8 is an
//	                  error, never replaced by U+FFFD
//	BINARY, VARBINARY base64, standard alphabet with padding
//	DATE              "yyyy-MM-dd"
//	TIME(p)           "HH:mm:ss[.f]", fractional digits up to p, trailing
//	                  zeros dropped (Flink writes whole seconds only; this
//	                  keeps what the column holds)
//	TIMESTAMP(p)      "yyyy-MM-dd HH:mm:ss[.f]" ('T' for ' ' with ISO-8601),
//	                  fractional digits as for TIME: 22:13:20 for a
//	                  TIMESTAMP(3) on the second, not 22:13:20.000, as
//	                  java.time's formatter in Flink's format writes it
//	TIMESTAMP_LTZ(p)  the same in UTC followed by 'Z', which marks the
//	                  instant (Flink's SQL standard: 2023-11-14 22:13:20Z)
//	ARRAY, MAP, ROW   an array, an object (keys as a string of the key's
//	                  text), an object with the fields in declared order
//
// NULL is null, or an absent field with 'json.encode.ignore-null-fields'.
// An Arrow map holds no NULL key, so 'json.map-null-key.*' (accepted, as in
// Flink's DDL) has nothing to decide.
// A value has no whitespace. What the decoder could not read back is an
// error, never a silent change: a year outside 0000..9999, a string that
// is not UTF-8, a TIME outside one day. Errors are *table.EncodeError.
//
// A RowEncoder writes rows the same way for callers without a sink: the
// shell's 'json' output and the rows kshare work hands a program are the
// text a json sink writes.
//
// It may import types (the columns' types), table (the Decoder and Encoder
// contracts), options (its keys) and the arithmetic of internal/calendar and
// internal/decimal. It knows no connector: a connector hands it values and
// gets rows.
package json
