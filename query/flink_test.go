package query

import (
	"strings"
	"testing"
	"time"
)

// The SETs a Flink SQL script starts with run: mapped where kshare has the
// behaviour, accepted with a one-line notice where it has not.
func TestFlinkSettings(t *testing.T) {
	s := DefaultSettings()
	s.Output = "csv"
	for _, c := range []struct{ key, value, note string }{
		{"sql-client.execution.result-mode", "TABLEAU", "'sql-client.execution.result-mode' = 'TABLEAU' is kshare's 'output' = 'tableau'"},
		{"sql-client.execution.result-mode", "changelog", "'sql-client.execution.result-mode' = 'changelog' is kshare's 'output' = 'changelog'"},
		{"sql-client.execution.result-mode", "table", "'sql-client.execution.result-mode' = 'table' is kshare's 'output' = 'table'"},
		{"sql-client.display.max-column-width", "30", "'sql-client.display.max-column-width' = '30' is kshare's 'max-column-width' = '30'"},
		{"execution.runtime-mode", "streaming", "'execution.runtime-mode' is a Flink setting kshare has no use for (a share group is a stream; kshare always reads it as one); accepted, nothing changed"},
		{"pipeline.name", "orders-job", "'pipeline.name' is a Flink setting kshare has no use for (a Flink job setting); accepted, nothing changed"},
		{"table.exec.emit.allow-lateness", "1 h", "'table.exec.emit.allow-lateness' = '1 h' is kshare's 'window.allowed-lateness' = '1 h'"},
		{"table.exec.state.ttl", "1 h", "'table.exec.state.ttl' is a Flink setting kshare has no use for (a Flink job setting); accepted, nothing changed"},
	} {
		note, err := s.Set(c.key, c.value)
		if err != nil || note != c.note {
			t.Errorf("SET %s = %s: %v\n got  %q\n want %q", c.key, c.value, err, note, c.note)
		}
	}
	if s.Output != "table" || s.MaxColumnWidth != 30 || s.AllowedLateness != time.Hour {
		t.Errorf("settings after the Flink SETs: %+v", s)
	}
	if err := s.Reset("sql-client.display.max-column-width"); err != nil || s.MaxColumnWidth != DefaultSettings().MaxColumnWidth {
		t.Errorf("RESET of a mapped Flink key: %v, %+v", err, s)
	}
	if err := s.Reset("pipeline.name"); err != nil {
		t.Errorf("RESET of an unmapped Flink key: %v", err)
	}
	if _, err := s.Set("sql-client.display.max-column-width", "wide"); err == nil {
		t.Error("SET sql-client.display.max-column-width = wide: no error")
	}
}

// 'window.allowed-lateness' reaches a query's Options: its default is
// DefaultAllowedLateness, and '0' is no lateness, which Options spell as a
// negative value (their zero is the default).
func TestAllowedLatenessSetting(t *testing.T) {
	s := DefaultSettings()
	var o Options
	s.Apply(&o)
	if s.AllowedLateness != DefaultAllowedLateness || allowedLateness(o) != DefaultAllowedLateness.Milliseconds() {
		t.Errorf("default: setting %v, query's lateness %d ms; want %v", s.AllowedLateness, allowedLateness(o), DefaultAllowedLateness)
	}
	if _, err := s.Set(SettingAllowedLateness, "0"); err != nil {
		t.Fatal(err)
	}
	s.Apply(&o)
	if allowedLateness(o) != 0 || allowedLateness(Options{}) != DefaultAllowedLateness.Milliseconds() {
		t.Errorf("'0': query's lateness %d ms, want 0; Options{}'s %d ms, want the default", allowedLateness(o), allowedLateness(Options{}))
	}
	if _, err := s.Set(SettingAllowedLateness, "-1s"); err == nil {
		t.Error("SET 'window.allowed-lateness' = '-1s': no error")
	}
}

// Flink's checkpoint directory keys are kshare's 'state-dir': a file:// URI
// is its path, a path itself, and a remote file system is refused with
// what to write instead.
func TestStateDirSetting(t *testing.T) {
	s := DefaultSettings()
	if s.StateDir != "" {
		t.Fatalf("default state-dir %q, want in memory", s.StateDir)
	}
	for _, c := range []struct{ key, value, want string }{
		{"execution.checkpointing.dir", "file:///var/lib/kshare/job1", "/var/lib/kshare/job1"},
		{"state.checkpoints.dir", "/tmp/ck", "/tmp/ck"},
		{SettingStateDir, "state", "state"},
	} {
		if _, err := s.Set(c.key, c.value); err != nil || s.StateDir != c.want {
			t.Errorf("SET '%s' = '%s': %v, state-dir %q, want %q", c.key, c.value, err, s.StateDir, c.want)
		}
	}
	_, err := s.Set("execution.checkpointing.dir", "s3://bucket/ck")
	if err == nil || !strings.Contains(err.Error(), "must be a local directory") || s.StateDir != "state" {
		t.Errorf("SET 'execution.checkpointing.dir' = 's3://bucket/ck': %v (state-dir now %q)", err, s.StateDir)
	}
	if err := s.Reset("execution.checkpointing.dir"); err != nil || s.StateDir != "" {
		t.Errorf("RESET: %v, state-dir %q", err, s.StateDir)
	}
}
