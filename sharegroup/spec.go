package sharegroup

// This file declares, as data, what a kafka-sharegroup table may say: its
// WITH clause keys and its metadata keys. The table layer parses and checks
// a CREATE TABLE against these declarations, and the tables of
// docs/connectors.md are generated from them. The keys that reach the
// cluster and name the topics are package kafkaclient's, the batch size and
// the metadata keys package kafkarecord's, listed here among the
// connector's own. It imports only options, kafkaclient and kafkarecord,
// so that table's tests can read it.

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
)

// Keys of the WITH clause.
const (
	OptShareGroupID      = "share-group-id"
	OptParallelism       = "source.parallelism"
	OptStartupMode       = "scan.startup.mode"
	OptDeliveryGuarantee = "scan.delivery-guarantee"
	OptOnDecodeError     = "scan.on-decode-error"
	OptOnEvalError       = "scan.on-eval-error"
	OptDeadLetterTopic   = "scan.dead-letter.topic"

	OptMaxPollRecords   = "properties.max.poll.records"
	OptShareAcquireMode = "properties.share.acquire.mode"
)

// Values of the enumerated options, as declared (Parse returns this spelling
// whatever the case the user wrote).
const (
	StartupGroupOffsets   = "group-offsets"
	StartupEarliestOffset = "earliest-offset"
	StartupLatestOffset   = "latest-offset"
	GuaranteeAtLeastOnce  = "at-least-once"
	GuaranteeAtMostOnce   = "at-most-once"
	OnDecodeErrorFail     = "fail"
	OnDecodeErrorReject   = "reject"
	OnDecodeErrorRelease  = "release"
	OnDecodeErrorDead     = "dead-letter"
	AcquireBatchOptimized = "batch_optimized"
	AcquireRecordLimit    = "record_limit"
)

const sourceOnly = "the kafka-sharegroup connector only reads; it has no sink"

const (
	keyAdvice   = "the record key is the 'key' metadata column (key BYTES METADATA VIRTUAL)"
	startAdvice = "a share group has no per-partition start; 'scan.startup.mode' takes group-offsets, earliest-offset or latest-offset"
)

const (
	// defaultMaxPollRecords is franz-go's and Kafka's default, the most
	// records one member takes at once when the table does not say (see
	// pollDefault). With no prefetch it is also what one member holds.
	defaultMaxPollRecords = 500
	// partitionRecordLocks is the broker's default cap on the records of
	// one partition locked at once (group.share.partition.max.record.locks).
	// A member that asks while the cap is reached gets nothing, so members
	// whose polls together exceed it sit idle.
	partitionRecordLocks = 2000
)

// PartitionRecordLocks is the broker's default cap on the records of one
// partition locked at once (group.share.partition.max.record.locks), for
// readers that size polls to fit under it.
const PartitionRecordLocks = partitionRecordLocks

// pollDefault is the default 'properties.max.poll.records' of a table of
// 'source.parallelism' members: 500, less when that many members' polls
// would exceed the broker's per-partition lock cap on one partition.
func pollDefault(v options.Values) string {
	return strconv.Itoa(max(1, min(defaultMaxPollRecords, partitionRecordLocks/int(v.Int(OptParallelism)))))
}

// Options are the keys of a kafka-sharegroup table's WITH clause, besides
// 'connector' and 'format', which the table layer reads. Validate holds the
// rules between keys.
var Options = &options.Set{
	Owner:    "connector 'kafka-sharegroup'",
	Validate: Validate,
	Options: slices.Concat([]options.Option{
		kafkaclient.Bootstrap,
		{Key: OptShareGroupID, Type: options.String, Required: true,
			Description: "Name of the share group (KIP-932) whose members read the table; every stream of the table joins it, and a group shared with other applications splits the records with them."},
		kafkaclient.Topic,
		kafkaclient.TopicPattern,
		{Key: OptParallelism, Aliases: []string{"scan.parallelism"}, Type: options.Int, Default: "1", Min: 1, HasMin: true,
			Description: "Share consumers (group members) that one stream of the table runs, each with its own Kafka client."},
		{Key: OptStartupMode, Type: options.Enum, Default: StartupGroupOffsets,
			Allowed: []string{StartupGroupOffsets, StartupEarliestOffset, StartupLatestOffset},
			Description: "Where the share group starts: 'group-offsets' leaves the group as it is (a new group starts at the latest records, " +
				"as the broker's share.auto.offset.reset says); 'earliest-offset' and 'latest-offset' set the group's share.auto.offset.reset " +
				"before the first fetch, which only moves a group that has not started yet."},
		{Key: OptDeliveryGuarantee, Type: options.Enum, Default: GuaranteeAtLeastOnce,
			Allowed: []string{GuaranteeAtLeastOnce, GuaranteeAtMostOnce},
			Description: "'at-least-once' accepts a record only after the reader settled the batch holding its rows, so a crash delivers it again; " +
				"'at-most-once' accepts records as soon as they are decoded, so a crash loses them instead."},
		{Key: OptOnDecodeError, Type: options.Enum, Default: OnDecodeErrorFail,
			Allowed: []string{OnDecodeErrorFail, OnDecodeErrorReject, OnDecodeErrorRelease, OnDecodeErrorDead},
			Description: "What a record that the format cannot decode does: 'fail' ends the stream with the error (the record is released); " +
				"'reject' archives it and logs a warning; 'release' hands it back to the group, which delivers it again until the broker's delivery count limit; " +
				"'dead-letter' produces it to 'scan.dead-letter.topic' and accepts it once that produce is acknowledged (released if it fails)."},
		// The evaluation's policy is the source's, not a query setting: its
		// dead letters go to the source's dead-letter topic, and the
		// records it settles are the source's.
		{Key: OptOnEvalError, Type: options.Enum, Default: OnDecodeErrorFail,
			Allowed: []string{OnDecodeErrorFail, OnDecodeErrorReject, OnDecodeErrorRelease, OnDecodeErrorDead},
			Description: "What a record does whose row a query cannot evaluate (a division by zero, an overflow, a CAST that does not fit): 'fail' ends the query with the error (the record is released); " +
				"'reject', 'release' and 'dead-letter' leave the record's rows out of the result and settle the record as 'scan.on-decode-error' does, with the error in the dead letter's kshare.error header. " +
				"Queries without GROUP BY or windows only (a group has folded rows in already), except that a window aggregation settles by it the records " +
				"later than every window they fall in, which update nothing. Needs 'scan.delivery-guarantee' = 'at-least-once'."},
		{Key: OptDeadLetterTopic, Type: options.String, Check: kafkaclient.CheckTopic,
			Description: "With 'scan.on-decode-error' or 'scan.on-eval-error' = 'dead-letter': the topic, on the table's cluster, that records which do not decode (or whose rows cannot be evaluated) are produced to " +
				"with their key, value and headers and kshare.* headers saying why and where from (docs/delivery.md, 'Dead-letter topic'). It must exist when a query opens."},
		kafkarecord.BatchSize,
		kafkaclient.Discovery,
		kafkaclient.BrokerUnavailableTimeout,
	}, kafkaclient.Redescribed(kafkaclient.Client, kafkaclient.OptFetchMaxBytes, fetchWindow), []options.Option{
		{Key: OptMaxPollRecords, Type: options.Int, Default: strconv.Itoa(defaultMaxPollRecords), DefaultFrom: pollDefault,
			Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Records,
			Description: "Most records one member takes from the broker at a time; each stays locked to the member until it is settled. " +
				"The default, Kafka's 500, is lowered to 2000 / 'source.parallelism' when more than 4 members would together exceed the 2000 records of a partition " +
				"that the broker locks at once (group.share.partition.max.record.locks); a table whose setting exceeds that is warned about when it opens. " +
				"Slow readers that share a partition with other tables or processes want small polls (50 for 5 ms of work per row): " +
				"a member holds its whole poll while it works through it. " +
				"Unless the table sets it, a query with a LIMIT or max-rows and no WHERE or aggregation polls no more than that bound, in 'record_limit' mode unless the table sets 'properties.share.acquire.mode'."},
		{Key: OptShareAcquireMode, Type: options.Enum, Allowed: []string{AcquireRecordLimit, AcquireBatchOptimized},
			Description: "Kafka's share.acquire.mode (4.2+). Default: 'batch_optimized' when a stream's members are no more than the partitions of its topics, " +
				"'record_limit' when they outnumber them. 'batch_optimized' (the Java client's default) hands out whole producer batches: " +
				"no batch is split, and on 8 partitions it read 1.6x to 3.3x the records/s of 'record_limit' (docs/delivery.md). 'record_limit' has the broker split batches " +
				"so that a member never holds more than 'properties.max.poll.records' records: with members sharing a partition, 'batch_optimized' " +
				"lets one member take a whole batch of thousands of records and leaves the others idle (1 partition, 4 members: 'record_limit' read 1.4x to 1.8x faster)."},
	}, RefusedConsumerKeys, kafkaclient.Refused, []options.Option{
		{Key: "key.format", Refused: keyAdvice},
		{Key: "key.fields", Refused: keyAdvice},
		{Key: "value.fields-include", Refused: "every physical column is read from the record value"},
		{Key: "scan.startup.specific-offsets", Refused: startAdvice},
		{Key: "scan.startup.timestamp-millis", Refused: startAdvice},
		{Key: "scan.bounded.mode", Refused: "a share group is a queue without an end; stop the query instead"},
		{Key: "sink.partitioner", Refused: sourceOnly},
		{Key: "sink.delivery-guarantee", Refused: sourceOnly},
		{Key: "sink.transactional-id-prefix", Refused: sourceOnly},
		{Key: "sink.parallelism", Refused: sourceOnly},
	}),
}

// fetchWindow is what 'properties.fetch.max.bytes' (declared by
// kafkaclient, with its default) means to a share fetch.
const fetchWindow = "The window of each share fetch (Kafka's fetch.max.bytes); the default, 1 MiB, is the Java share consumer's: " +
	"Kafka 4.3 scans the producer batches of the whole window on every share fetch, so franz-go's 50 MiB cost the broker up to 4x the CPU per record and up to half the records/s; " +
	"a larger window brings no more records, since a fetch hands out up to 'properties.max.poll.records' records whatever their size, and a record larger than the window is still fetched."

// RefusedConsumerKeys are the 'properties.*' keys of Kafka's Java consumer
// that a share-group member has no use for, each with what to use instead.
// The engine's session refuses them the same way, since its statements are
// about share groups.
var RefusedConsumerKeys = []options.Option{
	{Key: "properties.group.id", Refused: "a share group is named by 'share-group-id'"},
	{Key: "properties.auto.offset.reset", Refused: "use 'scan.startup.mode' (share consumers refuse a client-side auto.offset.reset; the group's share.auto.offset.reset decides)"},
	{Key: "properties.enable.auto.commit", Refused: "a share group commits no offsets; records are acknowledged as 'scan.delivery-guarantee' says"},
	{Key: "properties.isolation.level", Refused: "set the group config share.isolation.level on the broker"},
	{Key: "properties.key.deserializer", Refused: keyAdvice},
	{Key: "properties.value.deserializer", Refused: "values are decoded by the table's 'format'"},
}

// Metadata are the keys a metadata column of a kafka-sharegroup table may
// read: every key of a record that package kafkarecord fills, those of a
// share group's delivery included.
var Metadata = kafkarecord.Metadata

// Validate checks the rules between keys, the cluster's (kafkaclient.Validate)
// first. Parse calls it (Options.Validate) once every value has parsed, and
// NewSource may call it again.
func Validate(v options.Values) error {
	var errs options.Errors
	if err := kafkaclient.Validate(v); err != nil {
		if !errors.As(err, &errs) {
			return err
		}
	}
	errs = append(errs, validateDeadLetter(v)...)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// validateDeadLetter checks the dead-letter keys against each other and
// against the topics read.
func validateDeadLetter(v options.Values) options.Errors {
	onDecode, onEval, topic := v.String(OptOnDecodeError), v.String(OptOnEvalError), v.String(OptDeadLetterTopic)
	var errs options.Errors
	if onEval != OnDecodeErrorFail && v.String(OptDeliveryGuarantee) == GuaranteeAtMostOnce {
		// At most once accepts the records as they are decoded, before
		// any row is evaluated: nothing is left to settle by the policy.
		errs = append(errs, options.Errorf(options.ErrConflict, OptOnEvalError,
			"'%s' = '%s' needs '%s' = '%s': at most once accepts records before their rows are evaluated",
			OptOnEvalError, onEval, OptDeliveryGuarantee, GuaranteeAtLeastOnce))
	}
	switch {
	case onDecode == OnDecodeErrorDead && topic == "":
		return append(errs, options.Errorf(options.ErrMissing, OptDeadLetterTopic,
			"'%s' = '%s' needs '%s': the topic that records which do not decode are produced to", OptOnDecodeError, OnDecodeErrorDead, OptDeadLetterTopic))
	case onEval == OnDecodeErrorDead && topic == "":
		return append(errs, options.Errorf(options.ErrMissing, OptDeadLetterTopic,
			"'%s' = '%s' needs '%s': the topic that records whose rows cannot be evaluated are produced to", OptOnEvalError, OnDecodeErrorDead, OptDeadLetterTopic))
	case onDecode != OnDecodeErrorDead && onEval != OnDecodeErrorDead && topic != "":
		// The topic would be ignored: the user meant something else.
		return append(errs, options.Errorf(options.ErrConflict, OptDeadLetterTopic,
			"'%s' is used only with '%s' = '%s' (it is '%s') or '%s' = '%s' (it is '%s')",
			OptDeadLetterTopic, OptOnDecodeError, OnDecodeErrorDead, onDecode, OptOnEvalError, OnDecodeErrorDead, onEval))
	case topic == "":
		return errs
	}
	// A dead-letter topic that the table reads would hand each poison
	// record back to the table, which would dead-letter it again, forever.
	if kafkaclient.ReadsTopic(v, topic) {
		errs = append(errs, options.Errorf(options.ErrConflict, OptDeadLetterTopic,
			"'%s' names '%s', a topic the table reads: its records would come back to the table and be dead-lettered again; name another topic",
			OptDeadLetterTopic, options.Cut(topic)))
	}
	return errs
}
