package kafka

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// The sink's keys, as Flink names them.
const (
	OptKeyFormat          = "key.format"
	OptKeyFields          = "key.fields"
	OptValueFieldsInclude = "value.fields-include"
	OptSinkPartitioner    = "sink.partitioner"
	OptDeliveryGuarantee  = "sink.delivery-guarantee"
	OptSinkUnavailable    = "sink.broker-unavailable-timeout"
	OptSinkOnRefused      = "sink.on-refused-record"
	OptSinkDeadLetter     = "sink.dead-letter.topic"
	OptCompression        = "properties.compression.type"
)

// Values of the sink's enums.
const (
	IncludeAll       = "ALL"
	IncludeExceptKey = "EXCEPT_KEY"

	PartitionerDefault    = "default"
	PartitionerFixed      = "fixed"
	PartitionerRoundRobin = "round-robin"

	GuaranteeAtLeastOnce = "at-least-once"
	GuaranteeNone        = "none"
	GuaranteeExactlyOnce = "exactly-once"

	RefusedFail       = "fail"
	RefusedDeadLetter = "dead-letter"
)

// sinkOptions are the keys only INSERT INTO reads; a SELECT from the table
// ignores them, as Flink's source does.
var sinkOptions = []options.Option{
	{Key: OptKeyFormat, Type: options.String, Check: checkKeyFormat,
		Description: "Format of the record key written by INSERT INTO (a registered format that writes, such as 'json' or 'raw'), made of the 'key.fields' columns; without it records have no key."},
	{Key: OptKeyFields, Type: options.String, Check: checkKeyFields,
		Description: "Physical columns that make the record key, separated by ';' ('id;region'), written in 'key.format'; required with it."},
	{Key: OptValueFieldsInclude, Type: options.Enum, Default: IncludeAll, Allowed: []string{IncludeAll, IncludeExceptKey},
		Description: "Which physical columns the record value holds: 'ALL' of them, or 'EXCEPT_KEY' those not in 'key.fields'."},
	{Key: OptSinkPartitioner, Type: options.Enum, Default: PartitionerDefault, Allowed: []string{PartitionerDefault, PartitionerFixed, PartitionerRoundRobin},
		Description: "Partition of each written record: 'default' by the hash of its key (records without a key stick to a partition per batch), " +
			"'fixed' partition 0 (Flink's: each writer one partition; an INSERT has one writer), 'round-robin' each partition in turn."},
	{Key: OptDeliveryGuarantee, Type: options.Enum, Default: GuaranteeAtLeastOnce, Allowed: []string{GuaranteeAtLeastOnce, GuaranteeNone, GuaranteeExactlyOnce},
		Description: "'at-least-once': a source record is accepted only once every row it gave was acknowledged by the sink's brokers (acks=all, idempotent producer); " +
			"'none': accepted once its rows are handed to the producer, so a failed produce loses them; " +
			"'exactly-once': rows written in Kafka transactions committed with the job's state, so a read_committed reader sees each row once across crashes " +
			"(needs a state directory and an aggregate or window query)."},
	{Key: OptTransactionalIDPrefix, Type: options.String,
		Description: "With 'sink.delivery-guarantee' = 'exactly-once': the prefix of the producer's transactional.id ('-0' is appended); by default 'kshare-' and the topic. " +
			"Two jobs writing exactly once at the same time need different prefixes: a producer with the same id fences the other's."},
	// 60 s, as 'scan.broker-unavailable-timeout': a broker restart or a
	// leader's failover (seconds to a few tens of seconds) is ridden out;
	// a sink gone for good fails the job within a minute rather than
	// holding its source records unseen.
	{Key: OptSinkUnavailable, Type: options.Duration, Default: "60s", BareMillis: true,
		Description: "How long INSERT INTO waits for the sink's brokers to acknowledge a record while they do not answer before the job fails " +
			"(the source records of its unacknowledged rows are released); the job says at once that it cannot reach Kafka and is retrying, " +
			"and goes on when they answer; '0' waits forever."},
	{Key: OptSinkOnRefused, Type: options.Enum, Default: RefusedFail, Allowed: []string{RefusedFail, RefusedDeadLetter},
		Description: "What a row does whose record the sink topic refuses (larger than its max.message.bytes, say): 'fail' fails the job and releases the source records of its batch; " +
			"'dead-letter' produces the record to 'sink.dead-letter.topic' with kshare.error, kshare.topic and kshare.table headers, and the row counts as written once that produce is acknowledged " +
			"(if it fails too, the job fails as under 'fail')."},
	// Kafka's producer compresses nothing unless told (franz-go's default
	// is snappy): the default a Flink user's sink has.
	{Key: OptCompression, Type: options.Enum, Default: "none", Allowed: []string{"none", "gzip", "snappy", "lz4", "zstd"},
		Description: "Compression of the record batches INSERT INTO writes, as the Kafka producer's compression.type: 'none' (its default) costs no CPU and sends the most bytes."},
	{Key: OptSinkDeadLetter, Type: options.String, Check: kafkaclient.CheckTopic,
		Description: "With 'sink.on-refused-record' = 'dead-letter': the topic, on the sink's cluster, that refused records go to; it must exist when the INSERT starts, " +
			"and take records the sink topic does not (a larger max.message.bytes)."},
}

// splitFields reads a ';'-separated list of column names.
func splitFields(s string) []string { return splitList(s, ";") }

// splitList reads a list separated by sep, its items trimmed, empty ones
// dropped.
func splitList(s, sep string) []string {
	var out []string
	for _, f := range strings.Split(s, sep) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

var errNoKeyFields = errors.New("must name at least one column")

// checkKeyFormat asks the registry, the one list of formats, whether the
// key's format exists and writes.
func checkKeyFormat(s string) error {
	f, err := table.LookupFormat(s)
	if err != nil {
		return err
	}
	if _, ok := f.(table.EncodingFormat); !ok {
		return fmt.Errorf("format '%s' reads but does not write values", s)
	}
	return nil
}

func checkKeyFields(s string) error {
	if len(splitFields(s)) == 0 {
		return errNoKeyFields
	}
	return nil
}

// validateGuarantee checks that a transactional id prefix goes with
// 'exactly-once', which reads it: the kafka and upsert-kafka sinks' rule.
func validateGuarantee(v options.Values) options.Errors {
	if v.Has(OptTransactionalIDPrefix) && v.String(OptDeliveryGuarantee) != GuaranteeExactlyOnce {
		return options.Errors{options.Errorf(options.ErrConflict, OptTransactionalIDPrefix, "'%s' is used only with '%s' = '%s' (it is '%s')", OptTransactionalIDPrefix, OptDeliveryGuarantee, GuaranteeExactlyOnce, v.String(OptDeliveryGuarantee))}
	}
	return nil
}

// validateSink checks the sink's rules between keys.
func validateSink(v options.Values) options.Errors {
	errs := validateGuarantee(v)
	if v.String(OptDeliveryGuarantee) == GuaranteeExactlyOnce && v.String(OptSinkOnRefused) == RefusedDeadLetter {
		errs = append(errs, options.Errorf(options.ErrConflict, OptSinkOnRefused, "'%s' = '%s' cannot go with '%s' = '%s': a dead letter is written outside the transaction; use '%s' = '%s'",
			OptSinkOnRefused, RefusedDeadLetter, OptDeliveryGuarantee, GuaranteeExactlyOnce, OptSinkOnRefused, RefusedFail))
	}
	// A key format with nothing to write, or key columns with no format
	// to write them in, would be silently ignored.
	switch {
	case v.Has(OptKeyFormat) && !v.Has(OptKeyFields):
		errs = append(errs, options.Errorf(options.ErrMissing, OptKeyFields, "'%s' needs '%s': the columns the key is made of", OptKeyFormat, OptKeyFields))
	case v.Has(OptKeyFields) && !v.Has(OptKeyFormat):
		errs = append(errs, options.Errorf(options.ErrMissing, OptKeyFormat, "'%s' needs '%s': the format the key is written in", OptKeyFields, OptKeyFormat))
	}
	// As the source's dead-letter keys: each is useless without the other,
	// and the sink topic itself would refuse the record again.
	dead, dlq := v.String(OptSinkOnRefused) == RefusedDeadLetter, v.String(OptSinkDeadLetter)
	switch {
	case dead && dlq == "":
		errs = append(errs, options.Errorf(options.ErrMissing, OptSinkDeadLetter, "'%s' = '%s' needs '%s': the topic refused records are produced to", OptSinkOnRefused, RefusedDeadLetter, OptSinkDeadLetter))
	case !dead && dlq != "":
		errs = append(errs, options.Errorf(options.ErrConflict, OptSinkDeadLetter, "'%s' is used only with '%s' = '%s' (it is '%s')", OptSinkDeadLetter, OptSinkOnRefused, RefusedDeadLetter, v.String(OptSinkOnRefused)))
	case dead && slices.Contains(splitFields(v.String(OptTopic)), dlq):
		errs = append(errs, options.Errorf(options.ErrConflict, OptSinkDeadLetter, "'%s' names '%s', the sink topic itself, which would refuse the record again; name another topic", OptSinkDeadLetter, options.Cut(dlq)))
	}
	if v.String(OptValueFieldsInclude) == IncludeExceptKey && !v.Has(OptKeyFields) {
		errs = append(errs, options.Errorf(options.ErrMissing, OptKeyFields, "'%s' = '%s' needs '%s'", OptValueFieldsInclude, IncludeExceptKey, OptKeyFields))
	}
	return errs
}
