package kafka

// This file declares, as data, what a 'kafka' table may say: its WITH clause
// keys and its metadata keys. The cluster keys (bootstrap.servers and the
// properties.* client and security keys) and the topic keys are package
// kafkaclient's, the same declarations a kafka-sharegroup table has.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/kafkaclient"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// Name is the value of 'connector' that selects this connector.
const Name = "kafka"

// Keys of the WITH clause besides the cluster's (kafkaclient.ClusterOptions).
const (
	OptTopic            = kafkaclient.OptTopic
	OptTopicPattern     = kafkaclient.OptTopicPattern
	OptStartupMode      = "scan.startup.mode"
	OptStartupTimestamp = "scan.startup.timestamp-millis"
	OptStartupOffsets   = "scan.startup.specific-offsets"
	OptBoundedMode      = "scan.bounded.mode"
	OptBoundedTimestamp = "scan.bounded.timestamp-millis"
	OptBoundedOffsets   = "scan.bounded.specific-offsets"
	OptBatchSize        = kafkarecord.OptBatchSize
	OptIsolationLevel   = "properties.isolation.level"

	IsolationUncommitted = "read_uncommitted"
	IsolationCommitted   = "read_committed"
)

// Values of 'scan.startup.mode' and 'scan.bounded.mode', as Flink spells them.
const (
	ModeEarliest        = "earliest-offset"
	ModeLatest          = "latest-offset"
	ModeTimestamp       = "timestamp"
	ModeSpecificOffsets = "specific-offsets"
	ModeGroupOffsets    = "group-offsets"
	ModeUnbounded       = "unbounded"
)

const groupAdvice = "kshare's 'kafka' connector joins no consumer group and commits no offsets, so there are no group offsets to start or end at; " +
	"use earliest-offset, latest-offset, timestamp or specific-offsets (or the 'kafka-sharegroup' connector to consume as a group)"

const offsetsForm = "'partition:0,offset:42;partition:1,offset:300'"

// Options are the keys of a 'kafka' table's WITH clause, besides
// 'connector' and 'format', which the table layer reads.
var Options = &options.Set{
	Owner:    "connector 'kafka'",
	Validate: validate,
	Options: slices.Concat([]options.Option{
		kafkaclient.Topic,
		described(kafkaclient.TopicPattern, "Regular expression (Go RE2 syntax, matched against the whole name) of the topics to read; "+
			"the topics are those that match when a query opens (topics created later are not picked up)."),
	}, positions[0].options(), positions[1].options(), []options.Option{
		kafkarecord.BatchSize,
		isolationLevel,
		kafkaclient.BrokerUnavailableTimeout,
		kafkaclient.Bootstrap,
	}, kafkaclient.Client, kafkaclient.Refused, []options.Option{
		{Key: kafkaclient.OptDiscoveryInterval, Refused: "a query reads the partitions its topics have when it opens; new topics and partitions are not picked up"},
		{Key: "properties.group.id", Refused: "a plain reader joins no consumer group; leave it out (the 'kafka-sharegroup' connector reads as a share group)"},
		{Key: "properties.auto.offset.reset", Refused: "use 'scan.startup.mode'"},
		{Key: "properties.enable.auto.commit", Refused: "a plain reader commits no offsets"},
		{Key: "properties.key.deserializer", Refused: "the record key is the 'key' metadata column (key BYTES METADATA VIRTUAL)"},
		{Key: "properties.value.deserializer", Refused: "values are decoded by the table's 'format'"},
	}, sinkOptions, []options.Option{
		{Key: "sink.parallelism", Refused: "an INSERT writes from one producer per job; run more jobs (more processes of one pipeline) to write in parallel"},
		{Key: "key.fields-prefix", Refused: "key columns are named as the value's; leave it out"},
	}),
}

// position declares where a read starts or where it ends: a mode, and the
// keys that two of the modes read.
type position struct {
	mode, ts, offs string
	first          string // the default mode, with the modes of both ends after it
	modeDesc       string
	tsDesc         string // after "milliseconds since 1970-01-01 00:00:00 UTC"
	offsDesc       string // after "the offset of each partition"
}

// positions are the start's and the end's.
var positions = [2]position{
	{mode: OptStartupMode, ts: OptStartupTimestamp, offs: OptStartupOffsets, first: ModeEarliest,
		modeDesc: "Where each partition is read from: 'earliest-offset' its first record, 'latest-offset' its end (only records produced after the query opens), " +
			"'timestamp' the first record at or after 'scan.startup.timestamp-millis', 'specific-offsets' the offsets 'scan.startup.specific-offsets' gives " +
			"(partitions it does not list start at their first record). 'group-offsets', Flink's default, is refused: no consumer group is joined.",
		offsDesc: "to start at"},
	{mode: OptBoundedMode, ts: OptBoundedTimestamp, offs: OptBoundedOffsets, first: ModeUnbounded,
		modeDesc: "Where the query ends: 'unbounded' never (it waits for new records until stopped); 'latest-offset' at each partition's end when the query opens; " +
			"'timestamp' before the first record at or after 'scan.bounded.timestamp-millis'; 'specific-offsets' before the offsets 'scan.bounded.specific-offsets' gives " +
			"(partitions it does not list are not read). A bounded query ends by itself once every partition reached its bound. 'group-offsets' is refused: no consumer group is joined.",
		tsDesc: "; records from then on are not read", offsDesc: "to end before (not read)"},
}

func (p position) options() []options.Option {
	// Flink's modes of either end: the default, then the rest.
	allowed := []string{p.first, ModeLatest, ModeTimestamp, ModeSpecificOffsets, ModeGroupOffsets}
	return []options.Option{
		{Key: p.mode, Type: options.Enum, Default: p.first, Allowed: allowed, Description: p.modeDesc},
		{Key: p.ts, Type: options.Int, Min: 0, HasMin: true, Unit: options.Milliseconds,
			Description: "With '" + p.mode + "' = 'timestamp': milliseconds since 1970-01-01 00:00:00 UTC" + p.tsDesc + "."},
		{Key: p.offs, Type: options.String, Check: checkOffsets,
			Description: "With '" + p.mode + "' = 'specific-offsets': the offset of each partition " + p.offsDesc + ", as " + offsetsForm + "."},
	}
}

// described is o with this connector's description.
func described(o options.Option, desc string) options.Option {
	o.Description = desc
	return o
}

// Metadata are the keys a metadata column of a 'kafka' table may read:
// Flink's, which kafkarecord fills for both Kafka connectors.
var Metadata = func() []table.MetadataKey {
	var out []table.MetadataKey
	for _, m := range kafkarecord.Metadata {
		switch m.Key {
		case "delivery-count", "acquisition-deadline":
			// A share group's; a plain reader has neither.
		default:
			out = append(out, m)
		}
	}
	return out
}()

// isolationLevel is the key of which records a read sees, the kafka and
// upsert-kafka readers' (readIsolation).
var isolationLevel = options.Option{Key: OptIsolationLevel, Type: options.Enum, Default: IsolationUncommitted, Allowed: []string{IsolationUncommitted, IsolationCommitted},
	Description: "Which records a read sees: 'read_uncommitted' (Kafka's default) every record, those of transactions aborted or still open too; " +
		"'read_committed' only those of committed transactions (and records written outside transactions), and no further than the first transaction still open: " +
		"how to read a topic an 'exactly-once' sink writes."}

// readIsolation appends to opts the fetch isolation of
// 'properties.isolation.level'.
func readIsolation(v options.Values, opts []kgo.Opt) []kgo.Opt {
	if v.String(OptIsolationLevel) == IsolationCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	return opts
}

// validate checks the rules between keys: the cluster's (kafkaclient.Validate)
// and that each mode has the key it reads and no key it ignores.
func validate(v options.Values) error {
	var errs options.Errors
	if err := kafkaclient.Validate(v); err != nil {
		if es, ok := err.(options.Errors); ok {
			errs = append(errs, es...)
		} else {
			return err
		}
	}
	errs = append(errs, validateSink(v)...)
	for _, m := range positions {
		mode := v.String(m.mode)
		if mode == ModeGroupOffsets {
			errs = append(errs, options.Errorf(options.ErrInvalid, m.mode, "'%s' = '%s' is not supported: %s", m.mode, mode, groupAdvice))
			continue
		}
		// A key that the mode does not read would be silently ignored:
		// most likely the mode was meant to be the one that reads it.
		need := map[string]string{ModeTimestamp: m.ts, ModeSpecificOffsets: m.offs}
		for want, key := range need {
			switch {
			case mode == want && !v.Has(key):
				errs = append(errs, options.Errorf(options.ErrMissing, key, "'%s' = '%s' needs '%s'", m.mode, mode, key))
			case mode != want && v.Has(key):
				errs = append(errs, options.Errorf(options.ErrConflict, key, "'%s' is read only with '%s' = '%s' (it is '%s')", key, m.mode, want, mode))
			}
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *options.Error) int { return strings.Compare(a.Key, b.Key) })
		return errs
	}
	return nil
}

// checkOffsets checks the text of a specific-offsets key.
func checkOffsets(s string) error {
	_, err := parseOffsets(s)
	return err
}

// offsetPair is one partition's entry of a specific-offsets key.
var offsetPair = regexp.MustCompile(`^\s*partition\s*:\s*(\d+)\s*,\s*offset\s*:\s*(\d+)\s*$`)

// parseOffsets reads Flink's 'partition:0,offset:42;partition:1,offset:300'
// into offsets by partition. A trailing ';' is allowed, as Flink allows it.
func parseOffsets(s string) (map[int32]int64, error) {
	out := map[int32]int64{}
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		m := offsetPair.FindStringSubmatch(part)
		if m == nil {
			return nil, fmt.Errorf("must list 'partition:N,offset:M' pairs separated by ';', as %s; got '%s'", offsetsForm, options.Cut(strings.TrimSpace(part)))
		}
		p, perr := strconv.ParseInt(m[1], 10, 32)
		o, oerr := strconv.ParseInt(m[2], 10, 64)
		if perr != nil || oerr != nil {
			return nil, fmt.Errorf("partition or offset out of range in '%s'", options.Cut(strings.TrimSpace(part)))
		}
		if _, dup := out[int32(p)]; dup {
			return nil, fmt.Errorf("gives partition %d twice", p)
		}
		out[int32(p)] = o
	}
	if len(out) == 0 {
		return nil, errors.New("must list at least one 'partition:N,offset:M' pair, as " + offsetsForm)
	}
	return out, nil
}
