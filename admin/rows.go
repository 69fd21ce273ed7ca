package admin

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kshare/kshare/types"
)

// Row is one row of a result: Columns names the columns and Types gives
// their types (the same for every row of a type, so a zero value answers
// too), Strings gives this row's values in that order, "" where a value is
// unknown (NULL). Partitions, counts and offsets are INT or BIGINT, so
// that a result written as JSON has them as numbers; the rest is STRING.
type Row interface {
	Columns() []string
	Types() []*types.DataType
	Strings() []string
}

// The column types of the rows; a DataType is immutable, so they are
// shared.
var (
	str    = types.StringType()
	int32T = types.IntType()
	int64T = types.BigIntType()
)

// Table renders rows for a statement's result: the column names and one
// string slice per row.
func Table[R Row](rows []R) (columns []string, values [][]string) {
	var zero R
	columns = zero.Columns()
	values = make([][]string, len(rows))
	for i, r := range rows {
		values[i] = r.Strings()
	}
	return columns, values
}

// Unknown marks a number the broker did not give (a share-partition that
// has no state yet has neither start offset nor lag; a broker that will not
// say a log's size).
const Unknown = -1

func num(n int64) string {
	if n < 0 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// TopicRow is one row of SHOW TOPICS.
type TopicRow struct {
	Name       string
	Partitions int
	// Records is the sum over partitions of end - start offset: what the
	// log holds, counting compacted-away offsets and transaction markers.
	Records int64
	// Size is the bytes of the leaders' logs, or Unknown.
	Size int64
}

func (TopicRow) Columns() []string        { return []string{"name", "partitions", "records", "size"} }
func (TopicRow) Types() []*types.DataType { return []*types.DataType{str, int32T, int64T, int64T} }
func (r TopicRow) Strings() []string {
	return []string{r.Name, strconv.Itoa(r.Partitions), num(r.Records), num(r.Size)}
}

// TopicPartition is one row of DESCRIBE TOPIC.
type TopicPartition struct {
	Partition   int32
	Leader      int32 // broker id, or Unknown when the partition has none
	StartOffset int64 // first offset the log holds
	EndOffset   int64 // offset the next record will get
	Records     int64 // EndOffset - StartOffset
}

func (TopicPartition) Columns() []string {
	return []string{"partition", "leader", "start offset", "end offset", "records"}
}
func (TopicPartition) Types() []*types.DataType {
	return []*types.DataType{int32T, int32T, int64T, int64T, int64T}
}
func (r TopicPartition) Strings() []string {
	return []string{strconv.Itoa(int(r.Partition)), num(int64(r.Leader)), num(r.StartOffset), num(r.EndOffset), num(r.Records)}
}

// TopicDescription is what DESCRIBE TOPIC shows.
type TopicDescription struct {
	Name       string
	Partitions []TopicPartition // by partition
	// Configs are the topic's configs that matter to a reader (ReaderConfigs).
	Configs []Config
}

// Config is one config of a topic or group with where its value comes from
// (Kafka's names: GROUP_CONFIG, DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG,
// DEFAULT_CONFIG, ...).
type Config struct {
	Name   string
	Value  string
	Source string
}

func (Config) Columns() []string        { return []string{"name", "value", "source"} }
func (Config) Types() []*types.DataType { return []*types.DataType{str, str, str} }
func (r Config) Strings() []string      { return []string{r.Name, r.Value, r.Source} }

// GroupRow is one row of SHOW SHARE GROUPS.
type GroupRow struct {
	Name    string
	State   string // Empty, Stable, ... as the broker says
	Members int
	Topics  []string // sorted: the topics the group has start offsets in or its members subscribe to
	// Lag is the sum of the partitions' lags the broker knows, Unknown if
	// it knows none.
	Lag int64
}

func (GroupRow) Columns() []string        { return []string{"name", "state", "members", "topics", "lag"} }
func (GroupRow) Types() []*types.DataType { return []*types.DataType{str, str, int32T, str, int64T} }
func (r GroupRow) Strings() []string {
	return []string{r.Name, r.State, strconv.Itoa(r.Members), strings.Join(r.Topics, ", "), num(r.Lag)}
}

// GroupPartition is one row of DESCRIBE SHARE GROUP: a topic-partition the
// group has state in or is assigned.
type GroupPartition struct {
	Topic     string
	Partition int32
	// StartOffset is the share-partition start offset: every record before
	// it is settled (accepted, rejected, archived); records after it may be
	// settled too, out of order, or in flight. Kafka 4.3 reports the offset
	// it last persisted, which may trail: after a reader accepted every
	// record of a partition it can still say 0 (with lag 0). Unknown before
	// the group first reads the partition.
	StartOffset int64
	EndOffset   int64 // the partition's end offset, or Unknown
	// Lag is the broker's count of records from StartOffset to the end that
	// are not yet settled (KIP-1226), or Unknown.
	Lag     int64
	Members []string // ids of the members assigned the partition, sorted
	// Estimated marks a partition the group has not read yet, which the
	// broker gives no state for: StartOffset and Lag are where the group's
	// share.auto.offset.reset (earliest or latest) will start it.
	Estimated bool
}

func (GroupPartition) Columns() []string {
	return []string{"topic", "partition", "start offset", "end offset", "lag", "members"}
}
func (GroupPartition) Types() []*types.DataType {
	return []*types.DataType{str, int32T, int64T, int64T, int64T, str}
}
func (r GroupPartition) Strings() []string {
	return []string{r.Topic, strconv.Itoa(int(r.Partition)), num(r.StartOffset), num(r.EndOffset), num(r.Lag), strings.Join(r.Members, ", ")}
}

// Member is one row of DESCRIBE SHARE GROUP ... MEMBERS.
type Member struct {
	MemberID string
	ClientID string
	Host     string
	// Assignment maps each assigned topic to its partitions, sorted.
	Assignment map[string][]int32
}

func (Member) Columns() []string        { return []string{"member id", "client id", "host", "assignment"} }
func (Member) Types() []*types.DataType { return []*types.DataType{str, str, str, str} }
func (r Member) Strings() []string {
	return []string{r.MemberID, r.ClientID, r.Host, FormatAssignment(r.Assignment)}
}

// FormatAssignment writes an assignment as "t1[0,1], t2[3]", topics sorted.
func FormatAssignment(a map[string][]int32) string {
	var topics []string
	for _, t := range slices.Sorted(maps.Keys(a)) {
		parts := make([]string, len(a[t]))
		for j, p := range a[t] {
			parts[j] = strconv.Itoa(int(p))
		}
		topics = append(topics, t+"["+strings.Join(parts, ",")+"]")
	}
	return strings.Join(topics, ", ")
}

// GroupDescription is what DESCRIBE SHARE GROUP shows.
type GroupDescription struct {
	Name       string
	State      string
	Partitions []GroupPartition // by topic, then partition
	Members    []Member         // by member id
}

// ResetRow is one row of ALTER SHARE GROUP ... RESET: a partition's start
// offset before and after.
type ResetRow struct {
	Topic     string
	Partition int32
	Before    int64 // Unknown when the group had no state for the partition
	After     int64
}

func (ResetRow) Columns() []string {
	return []string{"topic", "partition", "start offset before", "start offset after"}
}
func (ResetRow) Types() []*types.DataType {
	return []*types.DataType{str, int32T, int64T, int64T}
}
func (r ResetRow) Strings() []string {
	return []string{r.Topic, strconv.Itoa(int(r.Partition)), num(r.Before), num(r.After)}
}
