// Package sinkspec declares the names and keys of the connectors of
// packages sinks and sinks/filesystem, apart from their code: the README's generator and the
// DDL tests (internal/ddltest) bind against the declarations without
// linking the print sink's renderer (package query), which package
// table's own tests must not link.
package sinkspec

import (
	"math"
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
// README's "Connector filesystem" for the figures behind the defaults.
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
