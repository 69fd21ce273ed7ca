package options

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testSet exercises every type and feature of a declaration; the fuzz
// target parses against it too.
func testSet() *Set {
	return &Set{
		Owner: "connector 'test'",
		Options: []Option{
			{Key: "servers", Aliases: []string{"properties.servers"}, Type: String, Required: true, Description: "Where to connect."},
			{Key: "group", Type: String, Required: true},
			{Key: "topic", Type: String, OneOf: "topic"},
			{Key: "topic-pattern", Type: String, OneOf: "topic", Check: func(v string) error {
				if _, err := regexp.Compile(v); err != nil {
					return errors.New("must be a regular expression")
				}
				return nil
			}},
			{Key: "parallelism", Aliases: []string{"scan.parallelism"}, Type: Int, Default: "1", Min: 1, HasMin: true},
			{Key: "mode", Type: Enum, Allowed: []string{"group-offsets", "earliest-offset"}, Default: "group-offsets"},
			{Key: "check", Type: Enum, Allowed: []string{"https", ""}, Default: "https"},
			{Key: "flag", Type: Bool, Default: "false"},
			{Key: "wait", Type: Duration, Default: "500ms"},
			{Key: "password", Type: String, Secret: true},
			{Key: "pin", Type: Int, Secret: true},
			{Key: "group.id", Refused: "use 'group'"},
		},
		Validate: func(v Values) error {
			if v.Bool("flag") && v.Has("password") {
				return Errorf(ErrConflict, "flag", "'flag' and 'password' exclude each other")
			}
			return nil
		},
	}
}

func kvs(pairs ...string) []KV {
	var out []KV
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, KV{pairs[i], pairs[i+1]})
	}
	return out
}

func TestParseDefaultsAndValues(t *testing.T) {
	v, err := Parse(kvs("connector", "x", "properties.servers", "h:1", "group", "g", "topic", "t",
		"scan.parallelism", " 4 ", "mode", "EARLIEST-OFFSET", "check", "", "flag", "TRUE", "wait", "2s"),
		[]string{"connector"}, testSet())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want any }{
		{v.String("servers"), "h:1"},
		{v.Int("parallelism"), int64(4)},
		{v.String("mode"), "earliest-offset"},
		{v.String("check"), ""},
		{v.Has("check"), true},
		{v.Bool("flag"), true},
		{v.Duration("wait").String(), "2s"},
		{v.Has("password"), false},
		{v.Has("connector"), false},
		{strings.Join(v.Keys(), ","), "check,flag,group,mode,parallelism,servers,topic,wait"},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("got %v, want %v", c.got, c.want)
		}
	}
	v, err = Parse(kvs("servers", "h", "group", "g", "topic-pattern", "a.*"), nil, testSet())
	if err != nil {
		t.Fatal(err)
	}
	if v.Int("parallelism") != 1 || v.String("check") != "https" || v.Has("parallelism") {
		t.Errorf("defaults not applied: %v", v)
	}
}

func TestParseCollectsEveryProblem(t *testing.T) {
	_, err := Parse(kvs("topics", "t", "parallelism", "four", "mode", "x", "group.id", "g",
		"password", "hunter2secret", "pin", "12ab", "flag", "yes", "wait", "-1s"), nil, testSet())
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("want Errors, got %T %v", err, err)
	}
	kinds := map[error]int{}
	for _, e := range es {
		kinds[e.Kind]++
	}
	if kinds[ErrUnknownOption] != 2 || kinds[ErrInvalid] != 5 || kinds[ErrMissing] != 1 {
		t.Errorf("kinds %v in %v", kinds, err)
	}
	for _, want := range []error{ErrUnknownOption, ErrInvalid, ErrMissing} {
		if !errors.Is(err, want) {
			t.Errorf("errors.Is(%v) false", want)
		}
	}
	msg := err.Error()
	mustContain(t, "message", msg,
		"unsupported option 'topics' for connector 'test' (did you mean 'topic'?); supported: check, ",
		"'parallelism' must be an integer >= 1, got 'four'",
		"'mode' must be one of 'group-offsets', 'earliest-offset', got 'x'",
		"unsupported option 'group.id' for connector 'test': use 'group'",
		"'pin' must be an integer, got '******'",
		"missing required options 'servers', 'group' and one of 'topic' or 'topic-pattern' for connector 'test'",
	)
	if strings.Contains(msg, "12ab") || strings.Contains(msg, "hunter2") {
		t.Errorf("secret value in message: %s", msg)
	}
}

func TestParseConflicts(t *testing.T) {
	base := []string{"servers", "h", "group", "g"}
	_, err := Parse(kvs(append(base, "topic", "t", "topic-pattern", "t.*")...), nil, testSet())
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "options 'topic' and 'topic-pattern' exclude each other") {
		t.Errorf("got %v", err)
	}
	_, err = Parse(kvs(append(base, "topic", "t", "parallelism", "2", "scan.parallelism", "3", "group", "h")...), nil, testSet())
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("got %v", err)
	}
	mustContain(t, "message", err.Error(),
		"option 'parallelism' is set twice (as 'parallelism' and 'scan.parallelism'); keep one",
		"option 'group' is set twice; keep one",
	)
	// A bad value is still a value given: no "missing" noise about its group.
	_, err = Parse(kvs(append(base, "topic-pattern", "(")...), nil, testSet())
	if errors.Is(err, ErrMissing) || err.Error() != "'topic-pattern' must be a regular expression" {
		t.Errorf("got %v", err)
	}
	// Cross-field rules run once the values are good, and only then.
	_, err = Parse(kvs(append(base, "topic", "t", "flag", "true", "password", "p")...), nil, testSet())
	if !errors.Is(err, ErrConflict) {
		t.Errorf("got %v", err)
	}
	_, err = Parse(kvs(append(base, "flag", "true", "password", "p")...), nil, testSet())
	if errors.Is(err, ErrConflict) {
		t.Errorf("cross-field rule ran despite a missing key: %v", err)
	}
}

func TestParseSeveralSets(t *testing.T) {
	format := &Set{Owner: "format 'json'", Options: []Option{
		{Key: "json.ignore-parse-errors", Type: Bool, Default: "false"},
		{Key: "json.must", Type: String, Required: true},
	}}
	_, err := Parse(kvs("servers", "h", "group", "g", "topic", "t", "json.ignore-parse-eror", "true"),
		[]string{"connector", "format"}, testSet(), format)
	msg := err.Error()
	mustContain(t, "message", msg,
		"unsupported option 'json.ignore-parse-eror' for format 'json' (did you mean 'json.ignore-parse-errors'?); supported: check, connector, flag, format, group,",
		"missing required option 'json.must' for format 'json'",
	)
}

func TestClosest(t *testing.T) {
	keys := []string{"topic", "topic-pattern", "bootstrap.servers"}
	for in, want := range map[string]string{
		"topics": "topic", "TOPIC": "topic", "bootstrap.server": "bootstrap.servers",
		"zzzzzzzz": "", "topic-patern": "topic-pattern",
	} {
		if got := Closest(in, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	got := Markdown(testSet())
	mustContain(t, "markdown", got,
		"| Key | Type | Default | Required | Description |\n| --- | --- | --- | --- | --- |\n",
		"| `servers` (also `properties.servers`) | string |  | yes | Where to connect. |\n",
		"| `topic` | string |  | one of `topic`, `topic-pattern` |  |\n",
		"| `parallelism` (also `scan.parallelism`) | integer >= 1 | `1` | no |  |\n",
		"| `check` | `https`, empty | `https` | no |  |\n",
		"| `password` | string (secret) |  | no |  |\n",
		"| `group.id` | use 'group' |\n",
	)
}

func TestLooksSecret(t *testing.T) {
	for k, want := range map[string]bool{
		"properties.sasl.pasword": false, "properties.sasl.password": true,
		"properties.sasl.jaas.config": true, "properties.ssl.key.password": true, "topic": false,
		"api-key": true, "x-apikey": true, "key.fields": false,
	} {
		if LooksSecret(k) != want {
			t.Errorf("LooksSecret(%q) = %v", k, !want)
		}
	}
}

// rangeSet declares what a Kafka client's settings need: an int32 range,
// milliseconds, and a default computed from another option.
func rangeSet() *Set {
	return &Set{Owner: "connector 'test'", Options: []Option{
		{Key: "members", Type: Int, Default: "1", Min: 1, HasMin: true},
		{Key: "wait.ms", Type: Int, Default: "500", Min: 10, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: Milliseconds},
		{Key: "poll", Type: Int, Default: "500", Min: 1, HasMin: true, Max: math.MaxInt32, HasMax: true, Unit: Records,
			DefaultFrom: func(v Values) string { return strconv.FormatInt(min(500, 2000/v.Int("members")), 10) }},
		{Key: "below", Type: Int, Max: 9, HasMax: true},
	}}
}

// TestIntRangeUnitAndComputedDefault: the declaration alone bounds a
// value, scales it by its unit and computes its default.
func TestIntRangeUnitAndComputedDefault(t *testing.T) {
	v, err := Parse(nil, nil, rangeSet())
	if err != nil {
		t.Fatal(err)
	}
	if v.Int32("poll") != 500 || v.Duration("wait.ms") != 500*time.Millisecond || v.Has("poll") {
		t.Errorf("defaults: poll %d, wait %s, set %v", v.Int32("poll"), v.Duration("wait.ms"), v.Has("poll"))
	}
	v, err = Parse(kvs("members", "16", "wait.ms", "2147483647"), nil, rangeSet())
	if err != nil {
		t.Fatal(err)
	}
	if v.Int32("poll") != 125 || v.Duration("wait.ms") != math.MaxInt32*time.Millisecond {
		t.Errorf("computed: poll %d, wait %s", v.Int32("poll"), v.Duration("wait.ms"))
	}
	// A value the user sets wins over the computed default.
	if v, err = Parse(kvs("members", "16", "poll", "300"), nil, rangeSet()); err != nil || v.Int32("poll") != 300 {
		t.Errorf("set: poll %d, %v", v.Int32("poll"), err)
	}
	_, err = Parse(kvs("poll", "2147483648", "wait.ms", "5", "below", "10", "members", "0"), nil, rangeSet())
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(%v, ErrInvalid) false", err)
	}
	mustContain(t, "message", err.Error(),
		"'poll' must be an integer from 1 to 2147483647, got '2147483648'",
		"'wait.ms' must be an integer from 10 to 2147483647, got '5'",
		"'below' must be an integer <= 9, got '10'",
		"'members' must be an integer >= 1, got '0'",
	)
	mustContain(t, "markdown", Markdown(rangeSet()),
		"| `wait.ms` | integer from 10 to 2147483647, in ms | `500` | no |  |\n",
		"| `poll` | integer from 1 to 2147483647, in records | `500` | no |  |\n",
		"| `below` | integer <= 9 |  | no |  |\n",
	)
}

// TestFloat: a Float reads decimal numbers within its declared range, and
// its declaration says the range in messages and in the documentation.
func TestFloat(t *testing.T) {
	set := &Set{Owner: "provider 'test'", Options: []Option{
		{Key: "temperature", Type: Float, MinFloat: 0, HasMin: true, MaxFloat: 2, HasMax: true},
		{Key: "rate", Type: Float, Default: "0", MinFloat: 0, HasMin: true},
		{Key: "any", Type: Float},
	}}
	v, err := Parse(kvs("temperature", " 0.25 ", "any", "-1e3"), nil, set)
	if err != nil {
		t.Fatal(err)
	}
	if v.Float("temperature") != 0.25 || v.Float("any") != -1000 || v.Float("rate") != 0 || v.Has("rate") {
		t.Errorf("values: %v %v %v", v.Float("temperature"), v.Float("any"), v.Float("rate"))
	}
	_, err = Parse(kvs("temperature", "2.5", "rate", "-0.1", "any", "NaN"), nil, set)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("errors.Is(%v, ErrInvalid) false", err)
	}
	mustContain(t, "message", err.Error(),
		"'temperature' must be a number from 0 to 2, got '2.5'",
		"'rate' must be a number >= 0, got '-0.1'",
		"'any' must be a number, got 'NaN'",
	)
	mustContain(t, "markdown", Markdown(set),
		"| `temperature` | number from 0 to 2 |  | no |  |\n",
		"| `rate` | number >= 0 | `0` | no |  |\n",
		"| `any` | number |  | no |  |\n",
	)
}

// TestInt32NeedsADeclaredRange: reading an option as an int32 that its
// declaration does not bound to one is a programming error.
func TestInt32NeedsADeclaredRange(t *testing.T) {
	v, err := Parse(nil, nil, rangeSet())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Int32 of an option without an int32 range did not panic")
		}
	}()
	v.Int32("members")
}

// mustContain reports each of wants that got, the text of what, lacks.
func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, got)
		}
	}
}
