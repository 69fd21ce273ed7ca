package query

import (
	"fmt"
	"strings"

	"github.com/kshare/kshare/options"
)

// FlinkSetting says what kshare does with a key of Flink's SQL client or of
// Flink's configuration, so that a script written for Flink's SQL client
// runs instead of stopping at its first SET.
type FlinkSetting struct {
	// Setting is the kshare setting the key maps to; empty when kshare has
	// nothing to map it to (the key is then accepted and changes nothing).
	Setting string
	// Map turns the key's value into the setting's; nil keeps it as it is.
	Map func(value string) (string, error)
	// Why is said in the notice: what kshare does instead, or how the
	// mapping reads.
	Why string
}

// FlinkSettings are the keys Flink SQL scripts commonly start with, by key.
// Keys under FlinkPrefixes that are not here are accepted with a notice too.
var FlinkSettings = map[string]FlinkSetting{
	"sql-client.execution.result-mode":    {Setting: SettingOutput, Map: resultMode},
	"sql-client.display.max-column-width": {Setting: SettingMaxColumnWidth},
	"sql-client.execution.max-table-result.rows": {
		Why: "kshare keeps no result table; 'max-rows' ends a query after N rows"},
	"table.exec.emit.early-fire.delay": {Setting: SettingEarlyFire},
	"table.exec.emit.early-fire.enabled": {
		Why: "early firing is on when 'window.early-fire' (Flink's 'table.exec.emit.early-fire.delay') is above 0"},
	"table.exec.source.idle-timeout": {Setting: SettingSourceIdle},
	"table.exec.emit.allow-lateness": {Setting: SettingAllowedLateness},
	"execution.runtime-mode": {
		Why: "a share group is a stream; kshare always reads it as one"},
	"table.local-time-zone": {
		Why: "kshare shows TIMESTAMP_LTZ in UTC"},
	"parallelism.default": {
		Why: "a table's consumers are its 'source.parallelism' option"},
	"execution.checkpointing.interval": {Setting: SettingCheckpointInterval},
	"execution.checkpointing.dir":      {Setting: SettingStateDir, Map: localDir},
	"state.checkpoints.dir":            {Setting: SettingStateDir, Map: localDir},
}

// FlinkPrefixes are the namespaces of Flink's configuration. A key under
// one of them is Flink's, never kshare's (whose settings have no dots).
var FlinkPrefixes = []string{
	"sql-client.", "table.", "execution.", "pipeline.", "parallelism.", "state.", "restart-strategy.",
	"taskmanager.", "jobmanager.", "python.", "rest.", "high-availability.", "metrics.", "cluster.",
}

func lookupFlink(key string) (FlinkSetting, bool) {
	k := strings.ToLower(strings.TrimSpace(key))
	if f, ok := FlinkSettings[k]; ok {
		return f, true
	}
	for _, p := range FlinkPrefixes {
		if strings.HasPrefix(k, p) {
			return FlinkSetting{Why: "a Flink job setting"}, true
		}
	}
	return FlinkSetting{}, false
}

// resultMode maps Flink's result modes to kshare's outputs of the same
// names: 'table' (an aggregate's result kept up to date in place),
// 'tableau' and 'changelog'. A query without aggregation prints its rows as
// they arrive in 'table' as in 'tableau'.
func resultMode(v string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(v)); m {
	case "tableau", "table", "changelog":
		return m, nil
	}
	return "", fmt.Errorf("must be one of 'tableau', 'table', 'changelog', got '%s'", options.Cut(v))
}

// localDir maps a Flink checkpoint directory, a URI, to a local path:
// 'file:///var/lib/x' is '/var/lib/x'; a path is itself; another scheme
// (s3://, hdfs://) is refused, since kshare keeps state on the local disk.
func localDir(v string) (string, error) {
	if rest, ok := strings.CutPrefix(v, "file://"); ok {
		return rest, nil
	}
	if i := strings.Index(v, "://"); i > 0 {
		return "", fmt.Errorf("must be a local directory ('/var/lib/kshare/job1' or 'file:///var/lib/kshare/job1'): kshare keeps state on the machine's disk, got '%s'", options.Cut(v))
	}
	return v, nil
}
