// Package options declares what a WITH clause may say, as data, and turns the
// raw key/value pairs of a table definition into typed values in one parse and
// validate step that reports every problem at once.
//
// A connector and a format each declare a Set. The table layer parses a WITH
// clause against the connector's set and the format's set together, so an
// unknown key is reported once, with the keys that would have been accepted.
package options

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Type is the kind of value an option takes. Every value is written as a SQL
// string literal in the WITH clause; the type says how it is read.
type Type int

const (
	// String is any text, including the empty string.
	String Type = iota
	// Int is a base-10 integer, bounded below by Option.Min.
	Int
	// Bool is true or false (case-insensitive).
	Bool
	// Enum is one of Option.Allowed (case-insensitive; the declared spelling is kept).
	Enum
	// Duration is a Go duration ("500ms", "2s") or a bare number of milliseconds.
	Duration
)

func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case Int:
		return "integer"
	case Bool:
		return "boolean"
	case Enum:
		return "enum"
	case Duration:
		return "duration"
	}
	return "unknown"
}

// Option declares one key of a WITH clause.
type Option struct {
	// Key is the canonical name, as documented.
	Key string
	// Aliases are other names accepted for the same option (Flink spellings,
	// say 'scan.parallelism' for 'source.parallelism'). Setting two names of
	// one option is an error.
	Aliases []string
	Type    Type
	// Default is the value used when the key is absent; empty means none.
	Default string
	// Required options have no default; their absence is an error.
	Required bool
	// Allowed lists the values of an Enum.
	Allowed []string
	// Min is the smallest accepted Int (only when HasMin).
	Min    int64
	HasMin bool
	// Description is one sentence for the generated documentation.
	Description string
	// Secret values never appear in SHOW CREATE TABLE, errors or logs.
	Secret bool
	// Refused, when set, means the key is known but not supported; the text
	// says what to do instead (a JKS truststore: use PEM files).
	Refused string
}

// Set is the options one component (a connector or a format) accepts.
type Set struct {
	// Owner names the component in messages: "connector 'kafka-sharegroup'".
	Owner   string
	Options []Option
}

// Lookup finds the option that key (or one of its aliases) names.
func (s *Set) Lookup(key string) (*Option, bool) {
	if s == nil {
		return nil, false
	}
	for i := range s.Options {
		o := &s.Options[i]
		if o.Key == key || slices.Contains(o.Aliases, key) {
			return o, true
		}
	}
	return nil, false
}

// Keys lists the canonical keys, sorted, refused ones left out.
func (s *Set) Keys() []string {
	var keys []string
	for _, o := range s.Options {
		if o.Refused == "" {
			keys = append(keys, o.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// KV is one pair of a WITH clause, in the order written.
type KV struct {
	Key   string
	Value string
}

// Values are the parsed options of one table. Lookups are by canonical key.
type Values struct {
	m   map[string]string
	set map[string]bool // keys the user wrote (after alias resolution)
}

// Has reports whether the user set key (a default does not count).
func (v Values) Has(key string) bool { return v.set[key] }

// String returns the value of key, or its default.
func (v Values) String(key string) string { return v.m[key] }

// Int returns the value of an Int option. Parse has validated it.
func (v Values) Int(key string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(v.m[key]), 10, 64)
	return n
}

// Bool returns the value of a Bool option. Parse has validated it.
func (v Values) Bool(key string) bool { return strings.EqualFold(strings.TrimSpace(v.m[key]), "true") }

// Duration returns the value of a Duration option. Parse has validated it.
func (v Values) Duration(key string) time.Duration {
	d, _ := parseDuration(v.m[key])
	return d
}

// Prefixed returns the set options whose key starts with prefix, with the
// prefix cut off ('properties.client.id' -> 'client.id').
func (v Values) Prefixed(prefix string) map[string]string {
	out := map[string]string{}
	for k, val := range v.m {
		if strings.HasPrefix(k, prefix) && v.set[k] {
			out[strings.TrimPrefix(k, prefix)] = val
		}
	}
	return out
}

// Problem kinds. Every problem of a parse wraps one of these, so callers can
// tell them apart with errors.Is.
var (
	// ErrUnsupported is returned for a key that no set declares.
	ErrUnsupported = errors.New("unsupported option")
	// ErrMissing is returned for a required key that is absent.
	ErrMissing = errors.New("missing required option")
	// ErrInvalid is returned for a value that does not fit its option.
	ErrInvalid = errors.New("invalid option value")
	// ErrDuplicate is returned when one option is set twice (by two names or twice by one).
	ErrDuplicate = errors.New("duplicate option")
)

// Error is one problem of a parse.
type Error struct {
	Kind error // one of the Err* sentinels
	Key  string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Errors is every problem a parse found, in the order of the WITH clause and
// then of the declarations.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Msg
	}
	return strings.Join(msgs, "; ")
}

// Unwrap lets errors.Is and errors.As see each problem.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Parse reads kvs against sets, applies defaults and validates every value.
// Keys in ignore (the 'connector' and 'format' keys, which the table layer
// consumes) are accepted without a declaration. It performs no I/O. The
// returned error, if any, is an Errors holding every problem.
func Parse(kvs []KV, ignore []string, sets ...*Set) (Values, error) {
	v := Values{m: map[string]string{}, set: map[string]bool{}}
	var errs Errors
	seenBy := map[string]string{} // canonical key -> name the user used
	owner := ""
	if len(sets) > 0 {
		owner = sets[0].Owner
	}
	for _, kv := range kvs {
		if slices.Contains(ignore, kv.Key) {
			continue
		}
		o, set := lookup(kv.Key, sets)
		if o == nil {
			errs = append(errs, unsupported(kv.Key, owner, sets))
			continue
		}
		if o.Refused != "" {
			errs = append(errs, &Error{Kind: ErrUnsupported, Key: kv.Key,
				Msg: fmt.Sprintf("unsupported option '%s' for %s: %s", kv.Key, set.Owner, o.Refused)})
			continue
		}
		if prev, dup := seenBy[o.Key]; dup {
			errs = append(errs, &Error{Kind: ErrDuplicate, Key: o.Key,
				Msg: fmt.Sprintf("option '%s' is set twice (as '%s' and '%s'); keep one", o.Key, prev, kv.Key)})
			continue
		}
		seenBy[o.Key] = kv.Key
		if err := check(o, kv.Key, kv.Value); err != nil {
			errs = append(errs, err)
			continue
		}
		v.m[o.Key] = normalize(o, kv.Value)
		v.set[o.Key] = true
	}
	var missing []string
	for _, s := range sets {
		for i := range s.Options {
			o := &s.Options[i]
			if _, ok := seenBy[o.Key]; ok {
				continue
			}
			if o.Required {
				missing = append(missing, o.Key)
				continue
			}
			if o.Default != "" {
				v.m[o.Key] = o.Default
			}
		}
	}
	if len(missing) > 0 {
		quoted := make([]string, len(missing))
		for i, k := range missing {
			quoted[i] = "'" + k + "'"
		}
		word := "option"
		if len(missing) > 1 {
			word = "options"
		}
		errs = append(errs, &Error{Kind: ErrMissing, Key: missing[0],
			Msg: fmt.Sprintf("missing required %s %s for %s", word, strings.Join(quoted, ", "), owner)})
	}
	if len(errs) > 0 {
		return Values{}, errs
	}
	return v, nil
}

func lookup(key string, sets []*Set) (*Option, *Set) {
	for _, s := range sets {
		if o, ok := s.Lookup(key); ok {
			return o, s
		}
	}
	return nil, nil
}

func unsupported(key, owner string, sets []*Set) *Error {
	var all []string
	for _, s := range sets {
		all = append(all, s.Keys()...)
	}
	sort.Strings(all)
	msg := fmt.Sprintf("unsupported option '%s' for %s", key, owner)
	if near := Closest(key, all); near != "" {
		msg += fmt.Sprintf(" (did you mean '%s'?)", near)
	}
	msg += "; supported: " + strings.Join(all, ", ")
	return &Error{Kind: ErrUnsupported, Key: key, Msg: msg}
}

func check(o *Option, name, val string) *Error {
	bad := func(format string, args ...any) *Error {
		return &Error{Kind: ErrInvalid, Key: o.Key, Msg: fmt.Sprintf(format, args...)}
	}
	shown := val
	if o.Secret {
		shown = "******"
	}
	switch o.Type {
	case Int:
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || (o.HasMin && n < o.Min) {
			if o.HasMin {
				return bad("'%s' must be an integer >= %d, got '%s'", name, o.Min, shown)
			}
			return bad("'%s' must be an integer, got '%s'", name, shown)
		}
	case Bool:
		t := strings.TrimSpace(val)
		if !strings.EqualFold(t, "true") && !strings.EqualFold(t, "false") {
			return bad("'%s' must be 'true' or 'false', got '%s'", name, shown)
		}
	case Enum:
		if canonicalEnum(o, val) == "" {
			return bad("'%s' must be one of %s, got '%s'", name, quoteAll(o.Allowed), shown)
		}
	case Duration:
		if d, err := parseDuration(val); err != nil || d < 0 {
			return bad("'%s' must be a duration such as '500ms' or '30s' (or a number of milliseconds), got '%s'", name, shown)
		}
	case String:
		if o.Required && strings.TrimSpace(val) == "" {
			return bad("'%s' must not be empty", name)
		}
	}
	return nil
}

func normalize(o *Option, val string) string {
	if o.Type == Enum {
		return canonicalEnum(o, val)
	}
	return val
}

func canonicalEnum(o *Option, val string) string {
	for _, a := range o.Allowed {
		if strings.EqualFold(a, strings.TrimSpace(val)) {
			return a
		}
	}
	return ""
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Duration(n) * time.Millisecond, nil
	}
	return time.ParseDuration(s)
}

func quoteAll(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	return strings.Join(q, ", ")
}

// Closest returns the candidate nearest to s by edit distance, when it is
// near enough to be a likely typo; otherwise "".
func Closest(s string, candidates []string) string {
	best, bestD := "", len(s)/2+2
	for _, c := range candidates {
		if d := distance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
