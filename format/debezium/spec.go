package debezium

// This file declares, as data, the options of the debezium-json format and
// how they map onto the json format's, which reads and writes the rows
// inside the envelopes. It imports only options and format/json's
// declarations.

import (
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
)

// Name is the value of the 'format' key.
const Name = "debezium-json"

// Keys of the WITH clause that the debezium-json format reads, Flink's.
const (
	OptSchemaInclude     = "debezium-json.schema-include"
	OptIgnoreParseErrors = "debezium-json.ignore-parse-errors"
	OptTimestampStandard = "debezium-json.timestamp-format.standard"

	// The keys below are read when writing only.
	OptMapNullKeyMode             = "debezium-json.map-null-key.mode"
	OptMapNullKeyLiteral          = "debezium-json.map-null-key.literal"
	OptEncodeDecimalAsPlainNumber = "debezium-json.encode.decimal-as-plain-number"
)

// jsonKeys maps each key that holds for the rows inside the envelope onto
// the json format's key that means the same; the rows are read and written
// by the json format with those values.
var jsonKeys = []struct{ own, json string }{
	{OptIgnoreParseErrors, json.OptIgnoreParseErrors},
	{OptTimestampStandard, json.OptTimestampStandard},
	{OptMapNullKeyMode, json.OptMapNullKeyMode},
	{OptMapNullKeyLiteral, json.OptMapNullKeyLiteral},
	{OptEncodeDecimalAsPlainNumber, json.OptEncodeDecimalAsPlainNumber},
}

// Options are the debezium-json format's keys, namespaced 'debezium-json.'
// as in Flink.
var Options = &options.Set{
	Owner: "format '" + Name + "'",
	Options: []options.Option{
		{Key: OptSchemaInclude, Type: options.Bool, Default: "false",
			Description: "Reading: each value is Kafka Connect's JSON with its schema, {\"schema\": ..., \"payload\": <the change>} " +
				"(the JsonConverter's 'schemas.enable' = 'true'); the schema is not read. kshare writes no schema: a table kshare writes must leave it 'false'."},
		{Key: OptIgnoreParseErrors, Type: options.Bool, Default: "false",
			Description: "A value that is not JSON or not a Debezium change (no \"op\", an unknown one, a missing row) is skipped and counted " +
				"instead of being a decode error, and a field of a row that does not fit its column becomes NULL, as 'json.ignore-parse-errors' does."},
		{Key: OptTimestampStandard, Type: options.Enum, Default: json.TimestampSQL, Allowed: []string{json.TimestampSQL, json.TimestampISO8601},
			Description: "How the rows' TIMESTAMP and TIMESTAMP_LTZ values are read and written, as 'json.timestamp-format.standard': " +
				"'SQL' as 'yyyy-MM-dd HH:mm:ss.s{precision}', 'ISO-8601' with a 'T' between the date and the time."},
		{Key: OptMapNullKeyMode, Type: options.Enum, Default: json.MapNullKeyFail, Allowed: []string{json.MapNullKeyFail, json.MapNullKeyDrop, json.MapNullKeyLiteral},
			Description: "Writing: 'json.map-null-key.mode' for the rows. Accepted so that Flink's DDL runs as it is; " +
				"kshare's maps never hold a NULL key, so it changes nothing."},
		{Key: OptMapNullKeyLiteral, Type: options.String, Default: "null",
			Description: "Writing: 'json.map-null-key.literal' for the rows; accepted, and as inert as the mode."},
		{Key: OptEncodeDecimalAsPlainNumber, Type: options.Bool, Default: "false",
			Description: "Writing: a DECIMAL is written in plain digits (0.000000027) rather than as Java's BigDecimal.toString " +
				"(2.7E-8 below 10^-6), as 'json.encode.decimal-as-plain-number'."},
	},
}

// jsonOptions are the json format's values for the rows inside the
// envelopes: the keys of jsonKeys that v holds, under the json format's
// names.
func jsonOptions(v options.Values) (options.Values, error) {
	var kvs []options.KV
	for _, k := range jsonKeys {
		if s := v.String(k.own); s != "" {
			kvs = append(kvs, options.KV{Key: k.json, Value: s})
		}
	}
	return options.Parse(kvs, nil, json.Options)
}
