package query

import (
	"strconv"
	"time"

	"github.com/kshare/kshare/options"
)

// Setting keys, as SET 'key' = 'value' names them.
const (
	// SettingOutput is how a shell prints results: 'table' (aligned
	// columns), 'csv' or 'json' (one object per line). The query engine
	// itself ignores it.
	SettingOutput = "output"
	// SettingIdleTimeout ends a query that received no record for that
	// long (Options.IdleTimeout): '30s', '500ms', or a number of
	// milliseconds; '0' waits until cancelled.
	SettingIdleTimeout = "idle-timeout"
	// SettingMaxRows ends a query after that many rows (Options.MaxRows);
	// '0' means no bound.
	SettingMaxRows = "max-rows"
)

// SettingOptions declares the session settings; SET and RESET accept these
// keys and no others.
var SettingOptions = &options.Set{
	Owner: "the session",
	Options: []options.Option{
		{Key: SettingOutput, Type: options.Enum, Allowed: []string{"table", "csv", "json"}, Default: "table",
			Description: "How the shell prints results: 'table' (aligned columns), 'csv' or 'json' (one object per line)."},
		{Key: SettingIdleTimeout, Type: options.Duration, Default: "0",
			Description: "End a query when no record arrived for this long ('30s', '500ms', or milliseconds); '0' waits until cancelled."},
		{Key: SettingMaxRows, Type: options.Int, Min: 0, HasMin: true, Default: "0",
			Description: "End a query after this many result rows, as a LIMIT would; '0' means no bound."},
	},
}

// Settings are a session's settings, which SET and RESET change. The zero
// value is not the default: start from DefaultSettings.
type Settings struct {
	Output      string
	IdleTimeout time.Duration
	MaxRows     int64
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
func (s *Settings) Set(key, value string) error {
	v, err := options.Parse([]options.KV{{Key: key, Value: value}}, nil, SettingOptions)
	if err != nil {
		return err
	}
	o, _ := SettingOptions.Lookup(key)
	s.apply(o.Key, v)
	return nil
}

// Reset sets key back to its default; an empty key resets every setting.
func (s *Settings) Reset(key string) error {
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

func (s *Settings) apply(key string, v options.Values) {
	switch key {
	case SettingOutput:
		s.Output = v.String(key)
	case SettingIdleTimeout:
		s.IdleTimeout = v.Duration(key)
	case SettingMaxRows:
		s.MaxRows = v.Int(key)
	}
}

// List is every setting with its current value, sorted by key, as SET
// alone shows them.
func (s Settings) List() []options.KV {
	return []options.KV{
		{Key: SettingIdleTimeout, Value: s.IdleTimeout.String()},
		{Key: SettingMaxRows, Value: strconv.FormatInt(s.MaxRows, 10)},
		{Key: SettingOutput, Value: s.Output},
	}
}

// Apply copies the settings a query obeys into o.
func (s Settings) Apply(o *Options) {
	o.IdleTimeout = s.IdleTimeout
	o.MaxRows = s.MaxRows
}
