package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kshare/kshare/internal/kafkatest"
)

// jsonColumns are a column of every type the json format writes.
const jsonColumns = "id INT, tiny TINYINT, small SMALLINT, big BIGINT, f FLOAT, d DOUBLE, amount DECIMAL(10, 2), flag BOOLEAN, " +
	"s STRING, bin BYTES, dt DATE, tm TIME(3), ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3), " +
	"arr ARRAY<INT>, m MAP<STRING, INT>, r ROW<a INT, b STRING>"

// jsonRecords are the records of the test's topic, in Flink's json format
// (which the table reads), and jsonRows the rows as Flink's json format
// writes them back: the text every path must give.
var (
	jsonRecords = []string{
		`{"id":1,"tiny":-128,"small":32767,"big":9223372036854775807,"f":0.1,"d":"NaN","amount":12.5,"flag":true,` +
			`"s":"tab\t quote\" back\\ <&> \u00e9 \ud83d\ude00 \u0001","bin":"AAEC/w==","dt":"2023-11-14","tm":"22:13:20.5",` +
			`"ts":"2023-11-14 22:13:20.000","ltz":"2023-11-14 22:13:20.123Z","arr":[1,null,3],"m":{"k":7,"n":null},"r":{"a":1,"b":"x"}}`,
		`{"id":2,"tiny":0,"small":-1,"big":0,"f":-0.0,"d":"-Infinity","amount":-0.05,"flag":false,` +
			`"s":"","bin":"","dt":"1969-12-31","tm":"00:00:00","ts":"1969-12-31 23:59:59.999","ltz":"1970-01-01 00:00:00Z",` +
			`"arr":[],"m":{},"r":{"a":null,"b":null}}`,
		`{"id":3,"d":1.5e10}`,
	}
	jsonRows = []string{
		`{"id":1,"tiny":-128,"small":32767,"big":9223372036854775807,"f":0.1,"d":"NaN","amount":12.50,"flag":true,` +
			`"s":"tab\t quote\" back\\ <&> ` + "\u00e9 \U0001f600" + ` \u0001","bin":"AAEC/w==","dt":"2023-11-14","tm":"22:13:20.5",` +
			`"ts":"2023-11-14 22:13:20","ltz":"2023-11-14 22:13:20.123Z","arr":[1,null,3],"m":{"k":7,"n":null},"r":{"a":1,"b":"x"}}`,
		`{"id":2,"tiny":0,"small":-1,"big":0,"f":-0,"d":"-Infinity","amount":-0.05,"flag":false,` +
			`"s":"","bin":"","dt":"1969-12-31","tm":"00:00:00","ts":"1969-12-31 23:59:59.999","ltz":"1970-01-01 00:00:00Z",` +
			`"arr":[],"m":{},"r":{"a":null,"b":null}}`,
		`{"id":3,"tiny":null,"small":null,"big":null,"f":null,"d":15000000000,"amount":null,"flag":null,` +
			`"s":null,"bin":null,"dt":null,"tm":null,"ts":null,"ltz":null,"arr":null,"m":null,"r":null}`,
	}
)

// TestJSONSameEverywhere: the same rows, read from one topic, come out as
// the same text from the three places kshare writes rows as JSON: what a
// program run by kshare work reads on its standard input, the shell's
// --output json, and a sink of format 'json' (a filesystem table); and that
// text is Flink's json format's.
func TestJSONSameEverywhere(t *testing.T) {
	addr := kafkatest.Bootstrap(t)
	topic := kafkatest.Topic(t, addr, 1)
	values := make([][]byte, len(jsonRecords))
	for i, r := range jsonRecords {
		values[i] = []byte(r)
	}
	kafkatest.Produce(t, addr, topic, values...)
	dir := t.TempDir()
	// Each path reads every record, with a share group of its own.
	source := func(name string) string {
		path := filepath.Join(dir, "src-"+name+".sql")
		ddl := fmt.Sprintf("CREATE TABLE src (%s) WITH ('connector' = 'kafka-sharegroup', 'bootstrap.servers' = '%s', 'topic' = '%s', "+
			"'share-group-id' = '%s-%s', 'scan.startup.mode' = 'earliest-offset', 'format' = 'json');\n",
			jsonColumns, addr, topic, kafkatest.GroupName(t), name)
		if err := os.WriteFile(path, []byte(ddl), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	n := strconv.Itoa(len(jsonRecords))
	kshare := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(t.Context(), stdio{in: strings.NewReader(""), out: &out, err: &errb}, args); code != 0 {
			t.Fatalf("kshare %s: exit status %d; stderr:\n%s", strings.Join(args, " "), code, errb.String())
		}
		return out.String()
	}

	// kshare work: one row at a time, each appended to a file by the
	// program as it read it. The pool reads with two members, so the rows
	// may come in either order: every text is compared with its lines
	// sorted.
	input := filepath.Join(dir, "input.jsonl")
	prog := filepath.Join(dir, "prog.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\ncat >> '"+input+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	kshare("work", "--init", source("work"), "--query", "SELECT * FROM src", "--concurrency", "1", "--max-rows", n, "--", prog)
	work := wholeLines(t, input, false)

	shell := kshare("--output", "json", "-f", source("shell"), "-e", "SELECT * FROM src LIMIT "+n)

	parts := filepath.Join(dir, "parts")
	sink := filepath.Join(dir, "sink.sql")
	if err := os.WriteFile(sink, []byte(fmt.Sprintf("CREATE TABLE sink (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');\n",
		jsonColumns, parts)), 0o644); err != nil {
		t.Fatal(err)
	}
	kshare("-f", source("sink"), "-f", sink, "-e", "SET 'idle-timeout' = '5s'", "-e", "INSERT INTO sink SELECT * FROM src")
	final, open := partFiles(t, parts)
	if len(final) != 1 || len(open) != 0 {
		t.Fatalf("the sink wrote parts %v (in progress: %v), want one part of the one partition's rows", final, open)
	}
	written := wholeLines(t, filepath.Join(parts, final[0]), false)

	want := sortedLines(strings.Join(jsonRows, "\n") + "\n")
	for _, got := range []struct{ name, text string }{{"kshare work's input", sortedLines(work)}, {"--output json", sortedLines(shell)}, {"the json sink", sortedLines(written)}} {
		if got.text == want {
			continue
		}
		gl, wl := strings.Split(got.text, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			g, w := "(none)", "(none)"
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("%s, line %d:\n got %s\nwant %s", got.name, i+1, g, w)
			}
		}
	}
}

// sortedLines is text with its lines sorted, so that texts holding the
// same lines in another order compare equal.
func sortedLines(text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}
