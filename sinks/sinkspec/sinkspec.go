package sinkspec

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
)

// Print and Blackhole are the connectors' names, as Flink names them.
const Print, Blackhole = "print", "blackhole"

// OptPrintIdentifier and OptStandardError are print's keys, Flink's.
const OptPrintIdentifier, OptStandardError = "print-identifier", "standard-error"

// PrintOptions are the keys of a 'print' table.
var PrintOptions = &options.Set{Owner: "connector 'print'", Options: []options.Option{{
	Key: OptPrintIdentifier, Type: options.String,
	Description: "Prefix of every line, followed by '> ' (orders> +I[1, ann]); without it a line is the row alone.",
}, {
	Key: OptStandardError, Type: options.Bool, Default: "false",
	Description: "Write to standard error instead of standard output.",
}}}

// BlackholeOptions are the keys of a 'blackhole' table: none but
// 'connector'.
var BlackholeOptions = &options.Set{Owner: "connector 'blackhole'"}

// Filesystem is the name of the connector that writes files into a
// directory, Flink's.
const Filesystem = "filesystem"

// The 'filesystem' table's keys: Flink's, and one of kshare's own
// (OptMaxHeldRows).
const (
	OptPath               = "path"
	OptFileSize           = "sink.rolling-policy.file-size"
	OptRolloverInterval   = "sink.rolling-policy.rollover-interval"
	OptCheckInterval      = "sink.rolling-policy.check-interval"
	OptInactivityInterval = "sink.rolling-policy.inactivity-interval"
	OptMaxHeldRows        = "sink.rolling-policy.max-held-rows"
)

// The 'filesystem' table's formats: FilesystemFormats are the values its
// 'format' takes, FilesystemOwnFormats those the connector writes itself
// (json is the registered format, one object a line).
var (
	FilesystemFormats    = []string{"csv", "json", "parquet"}
	FilesystemOwnFormats = []string{"csv", "parquet"}
)

// FilesystemOptions are the keys of a 'filesystem' table. A part file's
// rows hold their source records unaccepted until the part is committed,
// so the policy that ends a part bounds what a job holds: see the
// filesystem sink in docs/pipelines.md for the figures behind the defaults.
var FilesystemOptions = &options.Set{Owner: "connector 'filesystem'", Options: []options.Option{{
	Key: OptPath, Type: options.String, Required: true,
	Description: "Directory the part files are written into; created (with its parents) when missing. Local paths only.",
}, {
	Key: OptFileSize, Type: options.MemorySize, Default: "128mb", Min: 1 << 10, HasMin: true, Max: 1 << 40, HasMax: true,
	Description: "A part is committed once it holds this much.",
}, {
	Key: OptRolloverInterval, Type: options.Duration, Default: "30 min", BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
	Description: "A part is committed once it has been open this long (checked every 'sink.rolling-policy.check-interval').",
}, {
	Key: OptCheckInterval, Type: options.Duration, Default: "1 min", BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
	Description: "How often the open part's age is checked against 'sink.rolling-policy.rollover-interval'.",
}, {
	Key: OptInactivityInterval, Type: options.Duration, Default: "5 ms", BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
	Description: "A part is committed once no row reached it for this long. Its rows' source records wait for the commit, " +
		"and a share-group member hands out no more until its records are settled, so a quiet part usually means the job waits for it: " +
		"Flink's default is 30 min, kshare's is short for that reason (longer makes fewer, larger parts and a slower job).",
}, {
	Key: OptMaxHeldRows, Type: options.Int, Default: "1000", Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: options.Rows,
	Description: "A part is committed once it holds this many rows, whose records are locked to this job until then: " +
		"keep it under the broker's cap on locked records per partition (group.share.partition.max.record.locks, 2000 by default).",
}}}

// JDBC is the name of the connector that writes into a PostgreSQL table,
// Flink's 'jdbc'.
const JDBC = "jdbc"

// The 'jdbc' table's keys, Flink's.
const (
	OptURL             = "url"
	OptTableName       = "table-name"
	OptUsername        = "username"
	OptPassword        = "password"
	OptFlushMaxRows    = "sink.buffer-flush.max-rows"
	OptFlushInterval   = "sink.buffer-flush.interval"
	OptMaxRetries      = "sink.max-retries"
	OptOnRefused       = "sink.on-refused-record"
	OptSinkParallelism = "sink.parallelism"
	// kshare's: how a source record's rows reach the table.
	OptJDBCGuarantee    = "sink.delivery-guarantee"
	OptExactlyOnceTable = "sink.exactly-once.table"
	OptPruneInterval    = "sink.exactly-once.prune-interval"

	// The keys of a 'jdbc' table looked up in a lookup join, Flink's.
	OptLookupCache             = "lookup.cache"
	OptLookupMaxRows           = "lookup.partial-cache.max-rows"
	OptLookupExpireAfterWrite  = "lookup.partial-cache.expire-after-write"
	OptLookupExpireAfterAccess = "lookup.partial-cache.expire-after-access"
	OptLookupCacheMissingKey   = "lookup.partial-cache.cache-missing-key"
	OptLookupMaxRetries        = "lookup.max-retries"
)

// The values of 'lookup.cache'.
const (
	LookupCacheNone    = "NONE"
	LookupCachePartial = "PARTIAL"
)

// The values of 'sink.delivery-guarantee' of a 'jdbc' table.
const (
	JDBCAtLeastOnce = "at-least-once"
	JDBCExactlyOnce = "exactly-once"
)

// The values of a 'jdbc' table's 'sink.on-refused-record'.
const (
	OnRefusedFail       = "fail"
	OnRefusedDeadLetter = "dead-letter"
)

// DefaultExactlyOnceTable is where a 'jdbc' table that writes exactly once
// keeps the records it wrote, by default.
const DefaultExactlyOnceTable = "kshare_written_records"

// JDBCOptions are the keys of a 'jdbc' table. Rows wait in the sink's
// buffer with their source records locked, so the flush bounds are also
// what a job holds: see the 'jdbc' connector in docs/connectors.md.
var JDBCOptions = &options.Set{Owner: "connector 'jdbc'", Options: []options.Option{{
	Key: OptURL, Type: options.String, Required: true, Check: checkJDBCURL,
	Description: "The PostgreSQL database: 'jdbc:postgresql://host:port/database' as Flink writes it, or a 'postgres://' or " +
		"'postgresql://' URL (libpq's form, query parameters such as sslmode included). PostgreSQL is the only database for now. " +
		"A password in it is refused, since the URL is shown: give it as 'password'.",
}, {
	Key: OptTableName, Type: options.String, Required: true,
	Description: "The PostgreSQL table written, 'name' or 'schema.name' (unquoted parts fold to lower case, as in SQL); " +
		"it must exist, with a column of a fitting type for each of the table's columns.",
}, {
	Key: OptUsername, Type: options.String,
	Description: "The user to log in as; overrides a user in 'url'.",
}, {
	Key: OptPassword, Type: options.String, Secret: true,
	Description: "The user's password; overrides one in 'url'. Masked in SHOW CREATE TABLE and never shown in errors or logs.",
}, {
	Key: OptFlushMaxRows, Type: options.Int, Default: "500", Min: 1, HasMin: true, Max: 1 << 20, HasMax: true, Unit: options.Rows,
	Description: "The most rows one transaction writes. Flink's default is 100; 500 is the share-group source's poll " +
		"('properties.max.poll.records'), so that one poll's rows go in one transaction, and stays under the broker's cap on " +
		"records locked per partition (2000 by default), since buffered rows hold their records.",
}, {
	Key: OptFlushInterval, Type: options.Duration, Default: "1 s", BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
	Description: "Accepted so that Flink's DDL runs as it is; Flink flushes at this interval. kshare starts a flush as soon as rows wait " +
		"and the previous flush has committed, so no row waits for a timer: buffered rows hold their source records locked, and a " +
		"share-group member hands out no more records until its last ones are settled.",
}, {
	Key: OptMaxRetries, Type: options.Int, Default: "3", Min: 0, HasMin: true, Max: 100, HasMax: true,
	Description: "How often a flush that failed for want of a connection (the server restarted, the network broke) is tried again, " +
		"on a new connection, with a backoff from 100 ms doubling to 2 s; then the rows fail. A row the server refuses (a constraint) is not retried.",
}, {
	Key: OptOnRefused, Type: options.Enum, Default: OnRefusedFail, Allowed: []string{OnRefusedFail, OnRefusedDeadLetter},
	Description: "What a row does that the server refuses (a constraint, a value out of range): 'fail' fails the job, naming the table, the constraint, " +
		"the row and its source record, whose batch goes back to the share group; 'dead-letter' settles the row's source record by its table's " +
		"policy for rows a query cannot use (its 'scan.on-eval-error' = 'dead-letter' and 'scan.dead-letter.topic', which INSERT checks), " +
		"its kshare.error saying what the server refused, and writes the batch's other rows without it. An aggregate's refused row still fails the job: it reflects many records.",
}, {
	Key: OptJDBCGuarantee, Type: options.Enum, Default: JDBCAtLeastOnce, Allowed: []string{JDBCAtLeastOnce, JDBCExactlyOnce},
	Description: "'at-least-once': a source record is accepted once the transaction holding its rows committed; a record delivered again " +
		"(a crash or a lost acknowledgement between the commit and the accept) is written again. 'exactly-once': each transaction also " +
		"stores the share group, topic, partition and offset of every record whose rows it writes, in 'sink.exactly-once.table', and a " +
		"record delivered again whose identity is there is accepted without writing, so each record's rows are written once, across " +
		"crashes and across several jobs of one share group. Takes an INSERT without GROUP BY or windows from a 'kafka-sharegroup' table.",
}, {
	Key: OptExactlyOnceTable, Type: options.String, Default: DefaultExactlyOnceTable,
	Description: "With 'sink.delivery-guarantee' = 'exactly-once': the PostgreSQL table, 'name' or 'schema.name', that keeps the identities " +
		"of the records written, one row per record, shared by every kshare table that writes exactly once into the database; its streams " +
		"(a share group's topic written into a table) are numbered in the table of the same name with '_streams' after it. Both are created " +
		"at the INSERT's start when missing, which needs the CREATE privilege; see docs/connectors.md for their definitions.",
}, {
	Key: OptPruneInterval, Type: options.Duration, Default: "1 min", BareMillis: true, Min: int64(time.Second), HasMin: true,
	Description: "With 'sink.delivery-guarantee' = 'exactly-once': how often the job asks the share group where it stands on each partition " +
		"(its start offset: every record before it is settled for good and never delivered again) and deletes the rows of " +
		"'sink.exactly-once.table' that name those records, so that the table stays the size of what is in flight.",
}, {
	Key: OptLookupCache, Type: options.Enum, Default: LookupCacheNone, Allowed: []string{LookupCacheNone, LookupCachePartial},
	Description: "In a lookup join (JOIN t FOR SYSTEM_TIME AS OF s.proc_time): 'NONE' looks every batch's keys up in the database; " +
		"'PARTIAL' keeps the rows found for the last keys in memory, bounded by 'lookup.partial-cache.max-rows' and the expiries, " +
		"and asks the database only for the keys it does not keep. A cached row may be older than the database's.",
}, {
	Key: OptLookupMaxRows, Type: options.Int, Min: 1, HasMin: true, Unit: options.Rows,
	Description: "With 'lookup.cache' = 'PARTIAL': the most keys kept (with their rows, or with none when 'cache-missing-key' keeps " +
		"keys without a row); the least recently used goes first. 'PARTIAL' needs it or an expiry.",
}, {
	Key: OptLookupExpireAfterWrite, Type: options.Duration, BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
	Description: "With 'lookup.cache' = 'PARTIAL': a key is looked up again this long after it was.",
}, {
	Key: OptLookupExpireAfterAccess, Type: options.Duration, BareMillis: true, Min: int64(time.Millisecond), HasMin: true,
	Description: "With 'lookup.cache' = 'PARTIAL': a key not used for this long is dropped.",
}, {
	Key: OptLookupCacheMissingKey, Type: options.Bool, Default: "true",
	Description: "With 'lookup.cache' = 'PARTIAL': also keep keys the database has no row for, so that they are not asked for again.",
}, {
	Key: OptLookupMaxRetries, Type: options.Int, Default: "3", Min: 0, HasMin: true, Max: 100, HasMax: true,
	Description: "How often a lookup that failed (the server restarted, a timeout) is tried again, after 100 ms doubling to 2 s; then the " +
		"batch's records are released (the share group hands them out again) and the query fails with the error.",
}, {
	Key: OptSinkParallelism, Type: options.Int, Min: 1, HasMin: true, Max: 1024, HasMax: true,
	Description: "Accepted so that Flink's DDL runs as it is; each INSERT job writes through one connection whatever it says, " +
		"which keeps a key's changes in order.",
}}}

// JDBCURLForm says which forms 'url' takes, for errors.
const JDBCURLForm = "'jdbc:postgresql://host:port/database', 'postgres://...' or 'postgresql://...'"

// PostgresURL turns 'url' into the URL a PostgreSQL client takes: Flink's
// 'jdbc:postgresql://' form loses its 'jdbc:' prefix. ok is false for a
// URL of another form (another database's JDBC URL).
func PostgresURL(u string) (string, bool) {
	u = strings.TrimSpace(u)
	lower := strings.ToLower(u)
	switch {
	case strings.HasPrefix(lower, "jdbc:postgresql://"):
		return u[len("jdbc:"):], true
	case strings.HasPrefix(lower, "postgresql://"), strings.HasPrefix(lower, "postgres://"):
		return u, true
	}
	return "", false
}

// checkJDBCURL refuses a URL of another database, and one that holds a
// password, which SHOW CREATE TABLE would show: 'password' is the key that
// is masked. Its errors never repeat the URL.
func checkJDBCURL(u string) error {
	if pu, ok := PostgresURL(u); ok {
		p, err := url.Parse(pu)
		if err != nil {
			return fmt.Errorf("is not a URL that can be read; write %s", JDBCURLForm)
		}
		if _, has := p.User.Password(); has || p.Query().Has("password") {
			return errors.New("holds a password, which SHOW CREATE TABLE and the logs would show; give it as 'password', which they mask")
		}
		return nil
	}
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "jdbc:") {
		return fmt.Errorf("names a database other than PostgreSQL, the only one the 'jdbc' connector writes for now; write %s", JDBCURLForm)
	}
	return fmt.Errorf("must be %s", JDBCURLForm)
}
