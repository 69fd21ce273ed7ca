package query

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/options"
)

// Setting keys, as SET 'key' = 'value' names them.
const (
	// SettingOutput is how a shell prints results: 'table' (aligned
	// columns), 'tableau', 'changelog' (Flink's result modes), 'csv' or
	// 'json' (one object per line). The query engine itself ignores it.
	SettingOutput = "output"
	// SettingIdleTimeout ends a query that received no record for that
	// long (Options.IdleTimeout): '30s', '500ms' (a unit is required); '0'
	// waits until cancelled.
	SettingIdleTimeout = "idle-timeout"
	// SettingMaxRows ends a query after that many rows (Options.MaxRows);
	// '0' means no bound.
	SettingMaxRows = "max-rows"
	// SettingMaxColumnWidth is how wide a column of the shell's table
	// output grows: a value wider than that many characters is cut, with
	// "..." at the end, as Flink's SQL client does; '0' shows every value
	// whole, its column as wide as it needs. The query engine ignores it.
	SettingMaxColumnWidth = "max-column-width"
	// SettingEarlyFire emits the running results of open windows at
	// most this long after a record came that no delivered row reflects
	// yet (Options.EarlyFire); '0' waits for the window to close (or for
	// 'window.max-held-records').
	SettingEarlyFire = "window.early-fire"
	// SettingMaxHeld emits the running results of open windows once this
	// many records are held for them (Options.MaxHeld).
	SettingMaxHeld = "window.max-held-records"
	// SettingSourceIdle is how long a partition may deliver nothing before
	// it stops holding an event-time window's watermark back; once every
	// partition is idle the watermark moves on with processing time
	// (Options.SourceIdleTimeout); '0' never does either.
	SettingSourceIdle = "window.idle-timeout"
	// SettingAllowedLateness keeps a closed window's state this long
	// after its end, for late records to update its row
	// (Options.AllowedLateness); '0' drops it once the row is final.
	SettingAllowedLateness = "window.allowed-lateness"
	// SettingStateDir is the directory where the INSERT jobs started
	// after it keep an aggregate's state (a folder per job, see package
	// state), so that a job started again continues its counts; '' keeps
	// it in memory. The engine reads it; a query run alone ignores it.
	SettingStateDir = "state-dir"
	// SettingGroupsInMemory bounds the groups a GROUP BY job with a state
	// directory holds in memory; the others are read back from the
	// directory when a row needs them (Options.GroupsInMemory). '0' holds
	// every group in memory.
	SettingGroupsInMemory = "state-groups-in-memory"
	// SettingCheckpointInterval is the longest a job with a state
	// directory lets the batches its sink confirmed wait to be stored and
	// accepted together (Options.CheckpointInterval); an epoch ends
	// sooner when the share group has nothing more to hand out until
	// they are.
	SettingCheckpointInterval = "checkpoint-interval"
)

// DefaultCheckpointInterval is 'checkpoint-interval”s default, Flink's
// usual choice; a share-group job's epochs end far sooner (see
// SettingCheckpointInterval), so it bounds mostly other sources'.
const DefaultCheckpointInterval = 10 * time.Second

// SettingOptions declares the session settings; SET and RESET accept these
// keys and no others.
var SettingOptions = &options.Set{
	Owner: "the session",
	Options: []options.Option{
		{Key: SettingOutput, Type: options.Enum, Allowed: []string{"table", "tableau", "changelog", "csv", "json"}, Default: "table",
			Description: "How the shell prints results: 'table' (aligned columns; on a terminal an aggregate's result is kept up to date in place), 'tableau' (every change a row, with its op), 'changelog' (one line per change: +I[...]), 'csv' or 'json' (one object per line)."},
		{Key: SettingIdleTimeout, Type: options.Duration, Default: "0",
			Description: "End a query when no record arrived for this long ('30s', '500ms'; a unit is required); '0' waits until cancelled."},
		{Key: SettingMaxRows, Type: options.Int, Min: 0, HasMin: true, Default: "0",
			Description: "End a query after this many result rows, as a LIMIT would; '0' means no bound."},
		{Key: SettingMaxColumnWidth, Type: options.Int, Min: 0, HasMin: true, Default: "60",
			Description: "In table output, the widest a column grows: values wider than this are cut with '...', as Flink's SQL client does, so that the columns stay aligned; '0' shows values whole, their columns as wide as they need."},
		{Key: SettingEarlyFire, Type: options.Duration, Default: "0",
			Description: "Emit the running result of open windows, as updates, at most this long after a record arrived that no delivered row reflects yet ('10s'); '0' emits a window's row when it closes, or when 'window.max-held-records' says so. Flink's 'table.exec.emit.early-fire.delay'."},
		{Key: SettingMaxHeld, Type: options.Int, Min: 1, HasMin: true, Default: strconv.Itoa(DefaultMaxHeld),
			Description: "Emit the running result of open windows once this many records wait for a delivered row, so that the records locked stay under the broker's cap per partition (group.share.partition.max.record.locks, 2000 by default)."},
		{Key: SettingSourceIdle, Type: options.Duration, Default: DefaultSourceIdleTimeout.String(),
			Description: "An event-time window's (or an interval join's side's) watermark is the smallest over the partitions read (each one's largest event time less the WATERMARK's delay); a partition that delivered no record for this long stops holding it back, and once every partition is idle the watermark moves on with processing time so that open windows close. '0' never does either: a partition then holds the watermark back until it delivers. Flink's 'table.exec.source.idle-timeout'."},
		{Key: SettingStateDir, Type: options.String, Default: "",
			Description: "A directory where each INSERT job started after this keeps the state of its aggregate (GROUP BY, or a window aggregation, whose rows then come once each) in a folder of its own, so that the job, started again on the same directory, continues its counts; the job's records are accepted only once their effect is stored there, and a record delivered again is not counted twice. '' (the default) keeps the state in memory: a job started again counts from nothing. Flink's 'execution.checkpointing.dir'; `kshare run --state-dir`."},
		{Key: SettingGroupsInMemory, Type: options.Int, Min: 0, HasMin: true, Default: strconv.Itoa(DefaultGroupsInMemory),
			Description: "For a GROUP BY job with a state directory: the most groups held in memory. Once more are, those touched longest ago are let go after the next stored batch and read back from the directory when a row of theirs comes, so that the groups a job can keep are bounded by its disk, not its memory. '0' holds every group in memory (the directory then only makes them durable)."},
		{Key: SettingCheckpointInterval, Type: options.Duration, Default: DefaultCheckpointInterval.String(), Min: int64(100 * time.Millisecond), HasMin: true,
			Description: "For an INSERT job with a state directory: the longest the batches its sink confirmed wait to be stored in one synced write (with the sink's transaction, when it writes exactly once) and their records accepted together. An epoch ends sooner when the share group hands out nothing more until its records are settled, or no batch came for 50 ms, so a job whose members handed out several polls stores them at once. At least 100 ms. Flink's 'execution.checkpointing.interval'."},
		{Key: SettingAllowedLateness, Type: options.Duration, Default: DefaultAllowedLateness.String(),
			Description: "Keep a window's state this long after its end (in event time), so that a late record updates its row (-U, +U); after that a late record updates nothing (it never starts a second row for its window) and is counted as late beyond allowed lateness. The state held grows with the keys times the windows open or within this lateness. '0' drops a window's state once its row is final. Flink's 'table.exec.emit.allow-lateness'."},
	},
}

// Settings are a session's settings, which SET and RESET change. The zero
// value is not the default: start from DefaultSettings.
type Settings struct {
	Output         string
	IdleTimeout    time.Duration
	MaxRows        int64
	MaxColumnWidth int64
	EarlyFire      time.Duration
	MaxHeld        int64
	SourceIdle     time.Duration
	// AllowedLateness is 'window.allowed-lateness': 0 drops a window's
	// state once its row is final.
	AllowedLateness time.Duration
	// StateDir is 'state-dir': '' keeps jobs' state in memory.
	StateDir string
	// GroupsInMemory is 'state-groups-in-memory': 0 holds every group.
	GroupsInMemory int64
	// CheckpointInterval is 'checkpoint-interval'.
	CheckpointInterval time.Duration
}

// DefaultSettings are the settings of a new session: output 'table', no
// idle timeout, no row bound.
func DefaultSettings() Settings {
	var s Settings
	_ = s.Reset("")
	return s
}

// Set changes one setting. An unknown key or a bad value is an error that
// says what is accepted; s is then unchanged.
//
// Keys of Flink's SQL client and of Flink that scripts commonly start with
// are accepted too (see FlinkSettings): those kshare has a behaviour for
// change that setting, the others change nothing. note then says which it
// was, in one line; it is empty for kshare's own keys.
func (s *Settings) Set(key, value string) (note string, err error) {
	if f, ok := lookupFlink(key); ok {
		if f.Setting == "" {
			return fmt.Sprintf("'%s' is a Flink setting kshare has no use for (%s); accepted, nothing changed", options.Cut(key), f.Why), nil
		}
		v := value
		if f.Map != nil {
			if v, err = f.Map(value); err != nil {
				return "", fmt.Errorf("'%s' %w", options.Cut(key), err)
			}
		}
		if err := s.set(f.Setting, v); err != nil {
			return "", fmt.Errorf("'%s' is kshare's '%s': %w", options.Cut(key), f.Setting, err)
		}
		return fmt.Sprintf("'%s' = '%s' is kshare's '%s' = '%s'%s", options.Cut(key), options.Cut(value), f.Setting, v, f.Why), nil
	}
	return "", s.set(key, value)
}

func (s *Settings) set(key, value string) error {
	v, err := options.Parse([]options.KV{{Key: key, Value: value}}, nil, SettingOptions)
	if err != nil {
		return err
	}
	o, _ := SettingOptions.Lookup(key)
	s.apply(o.Key, v)
	return nil
}

// Reset sets key back to its default; an empty key resets every setting.
// A Flink key resets the setting it maps to, if any.
func (s *Settings) Reset(key string) error {
	if f, ok := lookupFlink(key); ok {
		if f.Setting == "" {
			return nil
		}
		key = f.Setting
	}
	if key != "" {
		o, ok := SettingOptions.Lookup(key)
		if !ok {
			// Let Parse word the error, with the supported keys.
			_, err := options.Parse([]options.KV{{Key: key}}, nil, SettingOptions)
			return err
		}
		key = o.Key
	}
	v, err := options.Parse(nil, nil, SettingOptions)
	if err != nil {
		return err
	}
	for _, o := range SettingOptions.Options {
		if key == "" || o.Key == key {
			s.apply(o.Key, v)
		}
	}
	return nil
}

// durations and ints are the settings of those types, by key: apply and
// List read them from here.
func (s *Settings) durations() map[string]*time.Duration {
	return map[string]*time.Duration{SettingIdleTimeout: &s.IdleTimeout, SettingEarlyFire: &s.EarlyFire, SettingSourceIdle: &s.SourceIdle,
		SettingAllowedLateness: &s.AllowedLateness, SettingCheckpointInterval: &s.CheckpointInterval}
}

func (s *Settings) ints() map[string]*int64 {
	return map[string]*int64{SettingMaxRows: &s.MaxRows, SettingMaxColumnWidth: &s.MaxColumnWidth, SettingMaxHeld: &s.MaxHeld,
		SettingGroupsInMemory: &s.GroupsInMemory}
}

func (s *Settings) apply(key string, v options.Values) {
	if d, ok := s.durations()[key]; ok {
		*d = v.Duration(key)
	} else if n, ok := s.ints()[key]; ok {
		*n = v.Int(key)
	} else if key == SettingOutput {
		s.Output = v.String(key)
	} else if key == SettingStateDir {
		s.StateDir = v.String(key)
	}
}

// List is every setting with its current value, sorted by key, as SET
// alone shows them.
func (s Settings) List() []options.KV {
	out := []options.KV{{Key: SettingOutput, Value: s.Output}, {Key: SettingStateDir, Value: s.StateDir}}
	for k, d := range s.durations() {
		out = append(out, options.KV{Key: k, Value: d.String()})
	}
	for k, n := range s.ints() {
		out = append(out, options.KV{Key: k, Value: strconv.FormatInt(*n, 10)})
	}
	slices.SortFunc(out, func(a, b options.KV) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Apply copies the settings a query obeys into o.
func (s Settings) Apply(o *Options) {
	o.IdleTimeout = s.IdleTimeout
	o.MaxRows = s.MaxRows
	o.EarlyFire = s.EarlyFire
	o.MaxHeld = s.MaxHeld
	o.SourceIdleTimeout = s.SourceIdle
	if o.SourceIdleTimeout == 0 {
		o.SourceIdleTimeout = -1 // the setting's '0' is never
	}
	// Options' zero is the default; the setting's '0' is no lateness.
	o.AllowedLateness = s.AllowedLateness
	if o.AllowedLateness == 0 {
		o.AllowedLateness = -1
	}
	o.CheckpointInterval = s.CheckpointInterval
	// The setting's '0' is every group; Options' 0 is the default.
	o.GroupsInMemory = int(s.GroupsInMemory)
	if o.GroupsInMemory == 0 {
		o.GroupsInMemory = -1
	}
}
