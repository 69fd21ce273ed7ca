package connector

// This file declares, as data, what a kafka-sharegroup table may say: its
// WITH clause keys and its metadata keys. The table layer parses and checks
// a CREATE TABLE against these declarations, and the README's tables are
// generated from them. It imports only options, table and format/batch (the
// batch builder, whose default size is the table's), so that table's tests
// can read it.

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Keys of the WITH clause.
const (
	OptBootstrapServers         = "bootstrap.servers"
	OptShareGroupID             = "share-group-id"
	OptTopic                    = "topic"
	OptTopicPattern             = "topic-pattern"
	OptParallelism              = "source.parallelism"
	OptStartupMode              = "scan.startup.mode"
	OptDeliveryGuarantee        = "scan.delivery-guarantee"
	OptOnDecodeError            = "scan.on-decode-error"
	OptOnEvalError              = "scan.on-eval-error"
	OptDeadLetterTopic          = "scan.dead-letter.topic"
	OptBatchSize                = "scan.batch-size"
	OptDiscoveryInterval        = "scan.topic-partition-discovery.interval"
	OptBrokerUnavailableTimeout = "scan.broker-unavailable-timeout"

	OptSecurityProtocol     = "properties.security.protocol"
	OptSASLMechanism        = "properties.sasl.mechanism"
	OptSASLUsername         = "properties.sasl.username"
	OptSASLPassword         = "properties.sasl.password"
	OptSASLJAASConfig       = "properties.sasl.jaas.config"
	OptSSLCALocation        = "properties.ssl.ca.location"
	OptSSLCertLocation      = "properties.ssl.certificate.location"
	OptSSLKeyLocation       = "properties.ssl.key.location"
	OptSSLKeyPassword       = "properties.ssl.key.password"
	OptSSLEndpointAlgorithm = "properties.ssl.endpoint.identification.algorithm"
	OptClientID             = "properties.client.id"
	OptFetchMaxBytes        = "properties.fetch.max.bytes"
	OptFetchMaxWaitMs       = "properties.fetch.max.wait.ms"
	OptRequestTimeoutMs     = "properties.request.timeout.ms"
	OptMaxPollRecords       = "properties.max.poll.records"
	OptShareAcquireMode     = "properties.share.acquire.mode"
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
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
	MechanismPlain        = "PLAIN"
	MechanismScramSHA256  = "SCRAM-SHA-256"
	MechanismScramSHA512  = "SCRAM-SHA-512"
	AcquireBatchOptimized = "batch_optimized"
	AcquireRecordLimit    = "record_limit"
)

const pemAdvice = "Java key stores are not supported; use PEM files: 'properties.ssl.ca.location' for the CA certificates, " +
	"'properties.ssl.certificate.location' and 'properties.ssl.key.location' for a client certificate"

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
	Options: []options.Option{
		{Key: OptBootstrapServers, Aliases: []string{"properties.bootstrap.servers"}, Type: options.String, Required: true,
			Check:       checkServers,
			Description: "Brokers to bootstrap from, as host:port pairs separated by commas."},
		{Key: OptShareGroupID, Type: options.String, Required: true,
			Description: "Name of the share group (KIP-932) whose members read the table; every stream of the table joins it, and a group shared with other applications splits the records with them."},
		{Key: OptTopic, Type: options.String, OneOf: "topic", Check: checkTopics,
			Description: "Topic to read, or several separated by ';' ('orders;refunds')."},
		{Key: OptTopicPattern, Type: options.String, OneOf: "topic", Check: checkPattern,
			Description: "Regular expression (Go RE2 syntax, matched against the whole name) of the topics to read; topics created later are picked up."},
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
				"Queries without GROUP BY or windows only; needs 'scan.delivery-guarantee' = 'at-least-once'."},
		{Key: OptDeadLetterTopic, Type: options.String, Check: checkTopic,
			Description: "With 'scan.on-decode-error' or 'scan.on-eval-error' = 'dead-letter': the topic, on the table's cluster, that records which do not decode (or whose rows cannot be evaluated) are produced to " +
				"with their key, value and headers and kshare.* headers saying why and where from (README 'Dead-letter topic'). It must exist when a query opens."},
		{Key: OptBatchSize, Type: options.Int, Default: strconv.Itoa(batch.DefaultSize), Min: 1, HasMin: true, Unit: options.Rows,
			Description: "Most rows of one Arrow batch, unless the reader asks for another bound when it opens a stream."},
		{Key: OptDiscoveryInterval, Type: options.Duration, Default: "30s", BareMillis: true,
			Description: "How often the members look for new topics matching 'topic-pattern' and new partitions (Flink's option of the same name; its default there is 5 minutes)."},
		// 60 s: longer than a broker restart or a leader's failover (seconds
		// to a few tens of seconds), so a query rides those out; short
		// enough that a script or an export without a broker ends with an
		// error within a minute rather than waiting unseen.
		{Key: OptBrokerUnavailableTimeout, Type: options.Duration, Default: "60s", BareMillis: true,
			Description: "How long a query waits while no broker answers before it ends with an error (the shell says at once that it cannot reach Kafka and is retrying); '0' retries forever."},

		{Key: OptSecurityProtocol, Type: options.Enum, Default: ProtocolPlaintext,
			Allowed:     []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL},
			Description: "How to talk to the brokers, as Kafka's security.protocol."},
		{Key: OptSASLMechanism, Type: options.Enum, Allowed: []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512},
			Description: "SASL mechanism; required with SASL_PLAINTEXT and SASL_SSL."},
		{Key: OptSASLUsername, Type: options.String,
			Description: "SASL user; with 'properties.sasl.password', or give both in 'properties.sasl.jaas.config'."},
		{Key: OptSASLPassword, Type: options.String, Secret: true,
			Description: "SASL password; never shown by SHOW CREATE TABLE, errors or logs."},
		{Key: OptSASLJAASConfig, Type: options.String, Secret: true,
			Description: "Kafka's JAAS line, read for its username=\"...\" and password=\"...\" (PlainLoginModule or ScramLoginModule); never shown."},
		{Key: OptSSLCALocation, Type: options.String,
			Description: "PEM file of the CA certificates to trust; the system's pool when absent."},
		{Key: OptSSLCertLocation, Type: options.String,
			Description: "PEM file of the client certificate, with 'properties.ssl.key.location'."},
		{Key: OptSSLKeyLocation, Type: options.String,
			Description: "PEM file of the client certificate's private key."},
		{Key: OptSSLKeyPassword, Type: options.String, Secret: true,
			Description: "Password of an encrypted private key; never shown."},
		{Key: OptSSLEndpointAlgorithm, Type: options.Enum, Default: "https", Allowed: []string{"https", ""},
			Description: "'https' checks that the broker's certificate names the host connected to; empty turns the check off."},
		{Key: OptClientID, Type: options.String,
			Description: "Client id the brokers see in their logs and quotas."},
		// The default, 1 MiB, is the Java share consumer's. franz-go's own,
		// 50 MiB, costs the broker dearly: Kafka 4.3 walks every
		// producer-batch header inside the window on each share fetch
		// (about 4,000 reads per fetch at 50 MiB against 86 at 1 MiB) and
		// gave half the records/s (issue 10). Large records need no larger
		// window: Kafka 4.3 hands out a whole poll regardless (measured: 500
		// records of 20 kB, 10 MB, in one ShareFetch of MaxBytes 1 MiB; a
		// 1.5 MiB record in one too), so the window bounds the scan, not
		// what one fetch brings (TestFetchWindowLargeRecords).
		{Key: OptFetchMaxBytes, Type: options.Int, Default: "1048576", Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Bytes,
			Description: "The window of each share fetch (Kafka's fetch.max.bytes); the default, 1 MiB, is the Java share consumer's: " +
				"Kafka 4.3 scans the producer batches of the whole window on every share fetch, so franz-go's 50 MiB cost the broker up to 4x the CPU per record and up to half the records/s; " +
				"a larger window brings no more records, since a fetch hands out up to 'properties.max.poll.records' records whatever their size, and a record larger than the window is still fetched."},
		// 500 ms is Kafka's own default; franz-go's 5 s makes an idle query
		// slow to notice Close and slow to see the first record. franz-go
		// refuses less than 10 ms, and the wire field is an int32.
		{Key: OptFetchMaxWaitMs, Type: options.Int, Default: "500", Min: 10, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Milliseconds,
			Description: "How long a broker may wait for records before answering a fetch."},
		// It bounds a first contact with the cluster before Open reports it
		// unreachable, and each request after. franz-go takes it as its
		// request timeout overhead, which it keeps within 100 ms to 15 min.
		{Key: OptRequestTimeoutMs, Type: options.Int, Default: "10000", Min: 100, HasMin: true, Max: 900000, HasMax: true, Unit: options.Milliseconds,
			Description: "How long to wait for a broker's answer to a request."},
		{Key: OptMaxPollRecords, Type: options.Int, Default: strconv.Itoa(defaultMaxPollRecords), DefaultFrom: pollDefault,
			Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Records,
			Description: "Most records one member takes from the broker at a time; each stays locked to the member until it is settled. " +
				"The default, Kafka's 500, is lowered to 2000 / 'source.parallelism' when more than 4 members would together exceed the 2000 records of a partition " +
				"that the broker locks at once (group.share.partition.max.record.locks); a table whose setting exceeds that is warned about when it opens. " +
				"Slow readers that share a partition with other tables or processes want small polls (50 for 5 ms of work per row): " +
				"a member holds its whole poll while it works through it."},
		{Key: OptShareAcquireMode, Type: options.Enum, Allowed: []string{AcquireRecordLimit, AcquireBatchOptimized},
			Description: "Kafka's share.acquire.mode (4.2+). Default: 'batch_optimized' when a stream's members are no more than the partitions of its topics, " +
				"'record_limit' when they outnumber them. 'batch_optimized' (the Java client's default) hands out whole producer batches: " +
				"no batch is split, and on 8 partitions it read 1.6x to 3.3x the records/s of 'record_limit' (README 'Delivery'). 'record_limit' has the broker split batches " +
				"so that a member never holds more than 'properties.max.poll.records' records: with members sharing a partition, 'batch_optimized' " +
				"lets one member take a whole batch of thousands of records and leaves the others idle (1 partition, 4 members: 'record_limit' read 1.4x to 1.8x faster)."},

		{Key: "properties.group.id", Refused: "a share group is named by 'share-group-id'"},
		{Key: "properties.auto.offset.reset", Refused: "use 'scan.startup.mode' (share consumers refuse a client-side auto.offset.reset; the group's share.auto.offset.reset decides)"},
		{Key: "properties.enable.auto.commit", Refused: "a share group commits no offsets; records are acknowledged as 'scan.delivery-guarantee' says"},
		{Key: "properties.isolation.level", Refused: "set the group config share.isolation.level on the broker"},
		{Key: "properties.key.deserializer", Refused: keyAdvice},
		{Key: "properties.value.deserializer", Refused: "values are decoded by the table's 'format'"},
		{Key: "properties.ssl.truststore.location", Refused: pemAdvice},
		{Key: "properties.ssl.truststore.password", Refused: pemAdvice, Secret: true},
		{Key: "properties.ssl.truststore.type", Refused: pemAdvice},
		{Key: "properties.ssl.keystore.location", Refused: pemAdvice},
		{Key: "properties.ssl.keystore.password", Refused: pemAdvice, Secret: true},
		{Key: "properties.ssl.keystore.type", Refused: pemAdvice},
		{Key: "properties.sasl.kerberos.service.name", Refused: "GSSAPI (Kerberos) is not supported; use 'properties.sasl.mechanism' PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
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
	},
}

// Metadata are the keys a metadata column of a kafka-sharegroup table may
// read. A key is NOT NULL when every record has it.
var Metadata = []table.MetadataKey{
	{Key: "topic", Type: table.StringType().WithNotNull(true), Description: "Topic of the record."},
	{Key: "partition", Type: table.IntType().WithNotNull(true), Description: "Partition of the record."},
	{Key: "offset", Type: table.BigIntType().WithNotNull(true), Description: "Offset of the record in its partition."},
	{Key: "timestamp", Type: table.TimestampLTZType(3).WithNotNull(true), Description: "Timestamp of the record."},
	{Key: "timestamp-type", Type: table.StringType().WithNotNull(true), Description: "'CreateTime', 'LogAppendTime' or 'NoTimestampType'."},
	{Key: "key", Type: table.BytesType(), Description: "Key of the record; NULL for a record without one."},
	{Key: "headers", Type: table.MapType(table.StringType().WithNotNull(true), table.BytesType()).WithNotNull(true),
		Description: "Headers of the record; of a header set twice, the last."},
	{Key: "leader-epoch", Type: table.IntType(), Description: "Leader epoch of the record's partition, NULL when the broker did not say."},
	{Key: "delivery-count", Type: table.IntType().WithNotNull(true), Description: "How many times the share group has delivered the record, this time included."},
	{Key: "acquisition-deadline", Type: table.TimestampLTZType(3),
		Description: "When the member's lock on the record runs out and the broker may deliver it elsewhere."},
}

// Validate checks the rules between keys. Parse calls it (Options.Validate)
// once every value has parsed, and NewSource may call it again.
func Validate(v options.Values) error {
	var errs options.Errors
	conflict := func(key, format string, args ...any) {
		errs = append(errs, options.Errorf(options.ErrConflict, key, format, args...))
	}
	proto := v.String(OptSecurityProtocol)
	sasl := proto == ProtocolSASLPlaintext || proto == ProtocolSASLSSL
	ssl := proto == ProtocolSSL || proto == ProtocolSASLSSL
	// Credentials that the protocol does not use would be dropped, and the
	// client would connect without them: a surprise best told at CREATE.
	if !sasl {
		for _, k := range []string{OptSASLMechanism, OptSASLUsername, OptSASLPassword, OptSASLJAASConfig} {
			if v.Has(k) {
				conflict(k, "'%s' needs '%s' = 'SASL_PLAINTEXT' or 'SASL_SSL' (it is '%s')", k, OptSecurityProtocol, proto)
			}
		}
	}
	if !ssl {
		for _, k := range []string{OptSSLCALocation, OptSSLCertLocation, OptSSLKeyLocation, OptSSLKeyPassword, OptSSLEndpointAlgorithm} {
			if v.Has(k) {
				conflict(k, "'%s' needs '%s' = 'SSL' or 'SASL_SSL' (it is '%s')", k, OptSecurityProtocol, proto)
			}
		}
	}
	if sasl {
		// Kafka's default mechanism, GSSAPI, is not supported: say so rather
		// than pick one that the broker may not enable.
		if !v.Has(OptSASLMechanism) {
			errs = append(errs, options.Errorf(options.ErrMissing, OptSASLMechanism,
				"'%s' = '%s' needs '%s' (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", OptSecurityProtocol, proto, OptSASLMechanism))
		}
		user, pass, jaas := v.Has(OptSASLUsername), v.Has(OptSASLPassword), v.Has(OptSASLJAASConfig)
		switch {
		case jaas && (user || pass):
			conflict(OptSASLJAASConfig, "set either '%s' or '%s' and '%s', not both", OptSASLJAASConfig, OptSASLUsername, OptSASLPassword)
		case !jaas && !(user && pass):
			errs = append(errs, options.Errorf(options.ErrMissing, OptSASLUsername,
				"SASL needs credentials: set '%s' and '%s' (or '%s')", OptSASLUsername, OptSASLPassword, OptSASLJAASConfig))
		}
	}
	// A certificate is useless without its key and the other way round.
	if v.Has(OptSSLCertLocation) != v.Has(OptSSLKeyLocation) {
		errs = append(errs, options.Errorf(options.ErrMissing, OptSSLKeyLocation,
			"a client certificate needs both '%s' and '%s'", OptSSLCertLocation, OptSSLKeyLocation))
	}
	if v.Has(OptSSLKeyPassword) && !v.Has(OptSSLKeyLocation) {
		errs = append(errs, options.Errorf(options.ErrMissing, OptSSLKeyLocation,
			"'%s' needs '%s'", OptSSLKeyPassword, OptSSLKeyLocation))
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
	read := slices.ContainsFunc(strings.Split(v.String(OptTopic), ";"), func(t string) bool { return strings.TrimSpace(t) == topic })
	if p := v.String(OptTopicPattern); p != "" {
		if re, err := regexp.Compile("^(?:" + p + ")$"); err == nil && re.MatchString(topic) {
			read = true
		}
	}
	if read {
		errs = append(errs, options.Errorf(options.ErrConflict, OptDeadLetterTopic,
			"'%s' names '%s', a topic the table reads: its records would come back to the table and be dead-lettered again; name another topic",
			OptDeadLetterTopic, options.Cut(topic)))
	}
	return errs
}

// checkServers wants host:port pairs: a broker address without a port is a
// common slip that would otherwise show only as a connection failure.
func checkServers(s string) error {
	n := 0
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		if hp == "" {
			continue
		}
		i := strings.LastIndexByte(hp, ':')
		if i <= 0 {
			return fmt.Errorf("must list host:port pairs separated by commas, got '%s'", options.Cut(hp))
		}
		if p, err := strconv.Atoi(hp[i+1:]); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("must list host:port pairs separated by commas, got '%s' (port 1 to 65535)", options.Cut(hp))
		}
		n++
	}
	if n == 0 {
		return errors.New("must name at least one broker as host:port")
	}
	return nil
}

// A Kafka topic name is at most 249 of these characters (and not "." or "..").
var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

func checkTopics(s string) error {
	for _, t := range strings.Split(s, ";") {
		t = strings.TrimSpace(t)
		if t == "" {
			return errors.New("must name topics separated by ';', got an empty name")
		}
		if !topicName.MatchString(t) || t == "." || t == ".." {
			return fmt.Errorf("must name topics separated by ';', got '%s' (a topic name is up to 249 letters, digits, '.', '_' and '-')", options.Cut(t))
		}
	}
	return nil
}

// checkTopic wants one topic name.
func checkTopic(s string) error {
	if !topicName.MatchString(s) || s == "." || s == ".." {
		return fmt.Errorf("must name one topic, got '%s' (a topic name is up to 249 letters, digits, '.', '_' and '-')", options.Cut(s))
	}
	return nil
}

func checkPattern(s string) error {
	if strings.TrimSpace(s) == "" {
		return errors.New("must not be empty")
	}
	if _, err := regexp.Compile(s); err != nil {
		return fmt.Errorf("must be a regular expression (Go RE2 syntax): %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return nil
}
