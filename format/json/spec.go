package json

// This file declares, as data, the options of the json format. It imports
// only options, so that table's tests can read it.

import "github.com/kshare/kshare/options"

// Keys of the WITH clause that the json format reads.
const (
	OptFailOnMissingField = "json.fail-on-missing-field"
	OptIgnoreParseErrors  = "json.ignore-parse-errors"
	OptTimestampStandard  = "json.timestamp-format.standard"

	// The keys below are read when writing only.
	OptMapNullKeyMode             = "json.map-null-key.mode"
	OptMapNullKeyLiteral          = "json.map-null-key.literal"
	OptEncodeDecimalAsPlainNumber = "json.encode.decimal-as-plain-number"
	OptEncodeIgnoreNullFields     = "json.encode.ignore-null-fields"
)

// Values of 'json.map-null-key.mode'.
const (
	MapNullKeyFail    = "FAIL"
	MapNullKeyDrop    = "DROP"
	MapNullKeyLiteral = "LITERAL"
)

// Values of 'json.timestamp-format.standard'.
const (
	TimestampSQL     = "SQL"
	TimestampISO8601 = "ISO-8601"
)

// Options are the json format's keys, namespaced 'json.' as in Flink.
var Options = &options.Set{
	Owner:    "format 'json'",
	Validate: Validate,
	Options: []options.Option{
		{Key: OptFailOnMissingField, Type: options.Bool, Default: "false",
			Description: "A value without a field of the table is an error; otherwise the column is NULL (and a NOT NULL column is an error either way)."},
		{Key: OptIgnoreParseErrors, Type: options.Bool, Default: "false",
			Description: "A field that does not fit its column becomes NULL (a NOT NULL one fails its enclosing row), and a value that is not JSON is skipped and counted, instead of either being a decode error."},
		{Key: OptTimestampStandard, Type: options.Enum, Default: TimestampSQL, Allowed: []string{TimestampSQL, TimestampISO8601},
			Description: "How TIMESTAMP and TIMESTAMP_LTZ values are written: 'SQL' as 'yyyy-MM-dd HH:mm:ss.s{precision}' (LTZ with a 'Z'), " +
				"'ISO-8601' as 'yyyy-MM-ddTHH:mm:ss.s{precision}' (LTZ with a 'Z'). Read and written."},
		{Key: OptMapNullKeyMode, Type: options.Enum, Default: MapNullKeyFail, Allowed: []string{MapNullKeyFail, MapNullKeyDrop, MapNullKeyLiteral},
			Description: "Writing: what Flink does with a NULL key of a MAP. Accepted so that Flink's DDL runs as it is; " +
				"kshare's maps (Arrow's) never hold a NULL key, so it changes nothing."},
		{Key: OptMapNullKeyLiteral, Type: options.String, Default: "null",
			Description: "Writing: the key Flink writes for a NULL key of a MAP with 'json.map-null-key.mode' 'LITERAL'; accepted, and as inert as that key."},
		{Key: OptEncodeDecimalAsPlainNumber, Type: options.Bool, Default: "false",
			Description: "Writing: a DECIMAL is always written in plain digits (0.000000027); otherwise as Java's BigDecimal.toString writes it, " +
				"in scientific notation below 10^-6 (2.7E-8). Either way every digit of the scale is kept."},
		{Key: OptEncodeIgnoreNullFields, Type: options.Bool, Default: "false",
			Description: "Writing: a NULL column or ROW field is left out of its object instead of being written as null."},
	},
}

// Validate checks the rules between the json format's keys; Parse calls it
// (Options.Validate) once every value has parsed.
func Validate(v options.Values) error {
	// Flink refuses this pair too: skipping every bad value would hide the
	// very missing fields that the user asked to fail on.
	if v.Bool(OptFailOnMissingField) && v.Bool(OptIgnoreParseErrors) {
		return options.Errorf(options.ErrConflict, OptFailOnMissingField,
			"'%s' and '%s' exclude each other: a missing field would be skipped, not fail; set one of them", OptFailOnMissingField, OptIgnoreParseErrors)
	}
	return nil
}
