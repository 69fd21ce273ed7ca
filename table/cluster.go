package table

import (
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// The statements of this file look at and steer a Kafka cluster rather than
// the catalog: Catalog.Exec refuses them (ErrNotCatalogStatement) and the
// engine runs them against the session's cluster.

// ShowTopics is SHOW TOPICS.
type ShowTopics struct{}

// DescribeTopic is DESCRIBE TOPIC name.
type DescribeTopic struct {
	Topic string
}

// ShowShareGroups is SHOW SHARE GROUPS.
type ShowShareGroups struct{}

// DescribeShareGroup is DESCRIBE SHARE GROUP 'g' [MEMBERS | CONFIG]: the
// group's partitions (Part ""), its members or its configs.
type DescribeShareGroup struct {
	Group string
	Part  GroupPart
}

// GroupPart is what DESCRIBE SHARE GROUP shows.
type GroupPart string

const (
	GroupPartitions GroupPart = ""
	GroupMembers    GroupPart = "MEMBERS"
	GroupConfig     GroupPart = "CONFIG"
)

// ResetTarget is where ALTER SHARE GROUP ... RESET TO moves start offsets.
type ResetTarget string

const (
	ResetEarliest  ResetTarget = "EARLIEST"
	ResetLatest    ResetTarget = "LATEST"
	ResetTimestamp ResetTarget = "TIMESTAMP"
	ResetOffset    ResetTarget = "OFFSET"
)

// TimestampLayout is how a RESET TO TIMESTAMP literal is written (seconds
// fraction optional); it is read in UTC.
const TimestampLayout = "2006-01-02 15:04:05"

// ResetShareGroup is ALTER SHARE GROUP 'g' RESET TO EARLIEST | LATEST |
// TIMESTAMP '2026-12-01 10:00:00' | OFFSET n [FOR TOPIC t].
type ResetShareGroup struct {
	Group  string
	To     ResetTarget
	Time   time.Time // TIMESTAMP, in UTC
	Offset int64     // OFFSET
	Topic  string    // FOR TOPIC, or "" for every partition the group has state in
}

// AlterShareGroup is ALTER SHARE GROUP 'g' SET ('key' = 'value', ...): the
// group's configs.
type AlterShareGroup struct {
	Group string
	Set   []options.KV
}

// DropShareGroup is DROP SHARE GROUP 'g'.
type DropShareGroup struct {
	Group string
}

func (*ShowTopics) String() string { return "SHOW TOPICS" }

func (s *DescribeTopic) String() string { return "DESCRIBE TOPIC " + types.QuoteString(s.Topic) }

func (*ShowShareGroups) String() string { return "SHOW SHARE GROUPS" }

func (s *DescribeShareGroup) String() string {
	out := "DESCRIBE SHARE GROUP " + types.QuoteString(s.Group)
	if s.Part != GroupPartitions {
		out += " " + string(s.Part)
	}
	return out
}

func (s *ResetShareGroup) String() string {
	out := "ALTER SHARE GROUP " + types.QuoteString(s.Group) + " RESET TO " + string(s.To)
	switch s.To {
	case ResetTimestamp:
		out += " " + types.QuoteString(s.Time.UTC().Format(TimestampLayout+".999999999"))
	case ResetOffset:
		out += " " + strconv.FormatInt(s.Offset, 10)
	}
	if s.Topic != "" {
		out += " FOR TOPIC " + types.QuoteString(s.Topic)
	}
	return out
}

// String masks nothing: a group's configs hold no secrets.
func (s *AlterShareGroup) String() string {
	pairs := make([]string, len(s.Set))
	for i, kv := range s.Set {
		pairs[i] = types.QuoteString(kv.Key) + " = " + types.QuoteString(kv.Value)
	}
	return "ALTER SHARE GROUP " + types.QuoteString(s.Group) + " SET (" + strings.Join(pairs, ", ") + ")"
}

func (s *DropShareGroup) String() string { return "DROP SHARE GROUP " + types.QuoteString(s.Group) }

// CreateTopic is CREATE TOPIC [IF NOT EXISTS] name [WITH ('key' = 'value',
// ...)]. Options holds the WITH clause's pairs as written, nil without
// one: the engine tells kshare's own keys (the partition count, the
// replication factor) from the topic configs it hands to the broker.
type CreateTopic struct {
	Topic       string
	IfNotExists bool
	Options     []options.KV
}

// DropTopic is DROP TOPIC [IF EXISTS] name: one topic, named exactly.
type DropTopic struct {
	Topic    string
	IfExists bool
}

// String masks nothing: a topic's configs hold no secrets.
func (s *CreateTopic) String() string {
	out := "CREATE TOPIC "
	if s.IfNotExists {
		out += "IF NOT EXISTS "
	}
	out += types.QuoteString(s.Topic)
	if s.Options != nil {
		pairs := make([]string, len(s.Options))
		for i, kv := range s.Options {
			pairs[i] = types.QuoteString(kv.Key) + " = " + types.QuoteString(kv.Value)
		}
		out += " WITH (" + strings.Join(pairs, ", ") + ")"
	}
	return out
}

func (s *DropTopic) String() string {
	out := "DROP TOPIC "
	if s.IfExists {
		out += "IF EXISTS "
	}
	return out + types.QuoteString(s.Topic)
}

func (*CreateTopic) statement() {}
func (*DropTopic) statement()   {}
