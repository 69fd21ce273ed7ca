package options

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kshare/kshare/internal/errlist"
)

// Type is the kind of value an option takes. Every value is written as a SQL
// string literal in the WITH clause; the type says how it is read.
type Type int

const (
	// String is any text, including the empty string.
	String Type = iota
	// Int is a base-10 integer, bounded by Option.Min and Option.Max.
	Int
	// Bool is true or false (case-insensitive).
	Bool
	// Enum is one of Option.Allowed (case-insensitive; the declared spelling is kept).
	Enum
	// Duration is a number with a unit, in Flink's spelling ("500 ms",
	// "30 s", "5 min", "2 hours") or Go's ("500ms", "1m30s"), or "0".
	// A bare number is refused unless the option sets BareMillis: '5' read
	// as 5 ms surprises whoever meant seconds.
	Duration
	// MemorySize is a number of bytes with an optional unit, in Flink's
	// spelling: "128mb", "128 MB", "1 gb", "512 kb", or a bare number of
	// bytes. Units are powers of 1024, as Flink's MemorySize reads them.
	MemorySize
	// Float is a decimal number ("0.7", "2", "1e-3"; not NaN or an
	// infinity), bounded by Option.MinFloat and Option.MaxFloat: Flink's
	// Double options (a model's 'temperature').
	Float
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
	case MemorySize:
		return "memory size"
	case Float:
		return "number"
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
	// BareMillis lets a Duration be a bare number of milliseconds, as
	// Flink's own duration options are: a WITH clause written for Flink
	// ('scan.topic-partition-discovery.interval' = '60000') must mean the
	// same here. Settings of kshare's own leave it off.
	BareMillis bool
	// Min is the smallest accepted Int, MemorySize (in bytes) or
	// Duration (in nanoseconds: int64(time.Second)), only when HasMin.
	Min    int64
	HasMin bool
	// Max is the largest accepted value, as Min (only when HasMax): for an
	// Int the limit of the field that carries it (math.MaxInt32 for a
	// Kafka int32), or of the client that applies it.
	Max    int64
	HasMax bool
	// MinFloat and MaxFloat bound a Float, each only when HasMin or
	// HasMax is set, as Min and Max bound the other types.
	MinFloat, MaxFloat float64
	// Unit is what an Int counts. Values.Duration reads an Int in
	// Milliseconds as a time.Duration, so no caller scales it again.
	Unit Unit
	// DefaultFrom, when set, computes the default from the other values
	// of the set (a poll size from the parallelism), once every value has
	// parsed. Default is then the value it starts from, which the
	// documentation shows; Description says the rule.
	DefaultFrom func(v Values) string
	// Description is one sentence for the generated documentation.
	Description string
	// Secret values never appear in SHOW CREATE TABLE, errors or logs.
	Secret bool
	// Refused, when set, means the key is known but not supported; the text
	// says what to do instead (a JKS truststore: use PEM files).
	Refused string
	// OneOf names a group of options of which exactly one must be set
	// ('topic' or 'topic-pattern'). Parse reports an absent group with the
	// missing keys and two members set as ErrConflict.
	OneOf string
	// Check, when set, validates the value further once its type has been
	// checked (a regular expression that must compile, say). Its error text
	// follows "'key' ": it must not repeat a secret value.
	Check func(value string) error
}

// Unit is what an Int option counts; the documentation shows it.
type Unit string

// Units of Int options.
const (
	Milliseconds Unit = "ms"
	Bytes        Unit = "bytes"
	Records      Unit = "records"
	Rows         Unit = "rows"
)

// Set is the options one component (a connector or a format) accepts.
type Set struct {
	// Owner names the component in messages: "connector 'kafka-sharegroup'".
	Owner   string
	Options []Option
	// Validate, when set, checks the rules between options of the set once
	// every value has parsed (rules that read values need them valid, and a
	// rule about a key the user misspelled would only add noise). An Errors
	// or *Error it returns is reported as is; any other error becomes an
	// ErrInvalid problem.
	Validate func(v Values) error
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

// Secret reports whether key (or an alias) names a secret option of s.
func (s *Set) Secret(key string) bool {
	o, ok := s.Lookup(key)
	return ok && o.Secret
}

// LooksSecret reports whether a key's name suggests a secret (a password,
// a JAAS configuration, a token). It guards text about keys that no set
// declares, a misspelled 'properties.sasl.pasword' say, which could still
// hold a secret value.
func LooksSecret(key string) bool {
	k := strings.ToLower(key)
	// An API key ('api-key', a model provider's) is a password by
	// another name.
	for _, w := range []string{"password", "jaas", "secret", "token", "credential", "private", "api-key", "apikey", "api_key"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
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
	m    map[string]string
	set  map[string]bool    // keys the user wrote (after alias resolution)
	decl map[string]*Option // the declaration of every key of the sets
}

// Has reports whether the user set key (a default does not count).
func (v Values) Has(key string) bool { return v.set[key] }

// Keys lists the canonical keys the user set, sorted.
func (v Values) Keys() []string {
	keys := make([]string, 0, len(v.set))
	for k := range v.set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String returns the value of key, or its default.
func (v Values) String(key string) string { return v.m[key] }

// Int returns the value of an Int option. Parse has validated it.
func (v Values) Int(key string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(v.m[key]), 10, 64)
	return n
}

// Bool returns the value of a Bool option. Parse has validated it.
func (v Values) Bool(key string) bool { return strings.EqualFold(strings.TrimSpace(v.m[key]), "true") }

// Int32 returns the value of an Int option whose declared range fits an
// int32 (a Kafka int32 field): Parse has checked it against that range.
// It panics for an option declared without such a range, which is a
// programming error that any test of the option finds.
func (v Values) Int32(key string) int32 {
	o := v.decl[key]
	if o == nil || o.Type != Int || !o.HasMin || !o.HasMax || o.Min < math.MinInt32 || o.Max > math.MaxInt32 {
		panic(fmt.Sprintf("options: Int32(%q) of an option not declared as an integer within int32", key))
	}
	return int32(v.Int(key))
}

// Float returns the value of a Float option. Parse has validated it.
func (v Values) Float(key string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSpace(v.m[key]), 64)
	return f
}

// Bytes returns the value of a MemorySize option, in bytes. Parse has
// validated it.
func (v Values) Bytes(key string) int64 {
	n, _ := parseMemorySize(v.m[key])
	return n
}

// Duration returns the value of a Duration option, or of an Int option
// in Milliseconds. Parse has validated it.
func (v Values) Duration(key string) time.Duration {
	if o := v.decl[key]; o != nil && o.Type == Int && o.Unit == Milliseconds {
		return time.Duration(v.Int(key)) * time.Millisecond
	}
	d, _ := parseDuration(v.m[key], true)
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
	// ErrUnknownOption is returned for a key that no set declares.
	ErrUnknownOption = errors.New("unsupported option")
	// ErrMissing is returned for a required key that is absent.
	ErrMissing = errors.New("missing required option")
	// ErrInvalid is returned for a value that does not fit its option.
	ErrInvalid = errors.New("invalid option value")
	// ErrDuplicate is returned when one option is set twice (by two names or twice by one).
	ErrDuplicate = errors.New("duplicate option")
	// ErrConflict is returned for options that exclude each other (two
	// members of a OneOf group, or a rule of a Set's Validate).
	ErrConflict = errors.New("conflicting options")
)

// Error is one problem of a parse.
type Error struct {
	Kind error // one of the Err* sentinels
	Key  string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

// Errorf makes a problem of kind about key; cross-field rules (a Set's
// Validate) use it so that callers can tell the kinds apart.
func Errorf(kind error, key, format string, args ...any) *Error {
	return &Error{Kind: kind, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// Errors is every problem a parse found, in the order of the WITH clause and
// then of the declarations.
type Errors []*Error

func (es Errors) Error() string { return errlist.Error(es) }

// Unwrap lets errors.Is and errors.As see each problem.
func (es Errors) Unwrap() []error { return errlist.Unwrap(es) }

// Parse reads kvs against sets, applies defaults and validates every value.
// Keys in ignore (the 'connector' and 'format' keys, which the table layer
// consumes) are accepted without a declaration. It performs no I/O. The
// returned error, if any, is an Errors holding every problem; no problem's
// text holds the value of a secret option.
func Parse(kvs []KV, ignore []string, sets ...*Set) (Values, error) {
	v := Values{m: map[string]string{}, set: map[string]bool{}, decl: map[string]*Option{}}
	for _, s := range sets {
		if s == nil {
			continue
		}
		for i := range s.Options {
			v.decl[s.Options[i].Key] = &s.Options[i]
		}
	}
	var errs Errors
	seenBy := map[string]string{} // canonical key -> name the user used
	listed := false
	for _, kv := range kvs {
		if slices.Contains(ignore, kv.Key) {
			continue
		}
		o, set := lookup(kv.Key, sets)
		if o == nil {
			// The list of supported keys is long: say it once.
			errs = append(errs, unsupported(kv.Key, ignore, sets, !listed))
			listed = true
			continue
		}
		if o.Refused != "" {
			errs = append(errs, &Error{Kind: ErrUnknownOption, Key: kv.Key,
				Msg: fmt.Sprintf("unsupported option '%s' for %s: %s", Cut(kv.Key), set.Owner, o.Refused)})
			continue
		}
		if prev, dup := seenBy[o.Key]; dup {
			msg := fmt.Sprintf("option '%s' is set twice; keep one", Cut(kv.Key))
			if prev != kv.Key {
				msg = fmt.Sprintf("option '%s' is set twice (as '%s' and '%s'); keep one", o.Key, Cut(prev), Cut(kv.Key))
			}
			errs = append(errs, &Error{Kind: ErrDuplicate, Key: o.Key, Msg: msg})
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
	for _, s := range sets {
		if s == nil {
			continue
		}
		var missing []string // quoted keys, and "one of ..." for groups
		first := ""
		groups := map[string][]string{} // group -> member keys, in declaration order
		var order []string
		for i := range s.Options {
			o := &s.Options[i]
			if o.OneOf != "" {
				if _, ok := groups[o.OneOf]; !ok {
					order = append(order, o.OneOf)
				}
				groups[o.OneOf] = append(groups[o.OneOf], o.Key)
				continue
			}
			if _, ok := seenBy[o.Key]; ok || o.Refused != "" {
				continue
			}
			if o.Required {
				missing = append(missing, "'"+o.Key+"'")
				if first == "" {
					first = o.Key
				}
				continue
			}
			if o.Default != "" {
				v.m[o.Key] = o.Default
			}
		}
		for _, g := range order {
			var given []string
			for _, k := range groups[g] {
				if name, ok := seenBy[k]; ok {
					given = append(given, name)
				}
			}
			switch {
			case len(given) == 0:
				missing = append(missing, "one of "+orList(groups[g]))
				if first == "" {
					first = groups[g][0]
				}
			case len(given) > 1:
				errs = append(errs, &Error{Kind: ErrConflict, Key: groups[g][0],
					Msg: fmt.Sprintf("options %s exclude each other; set only one of them", andList(given))})
			}
		}
		if len(missing) > 0 {
			msg := fmt.Sprintf("missing required options %s for %s", joinAnd(missing), s.Owner)
			switch {
			case len(missing) == 1 && strings.HasPrefix(missing[0], "one of"):
				msg = fmt.Sprintf("missing required option: %s for %s", missing[0], s.Owner)
			case len(missing) == 1:
				msg = fmt.Sprintf("missing required option %s for %s", missing[0], s.Owner)
			}
			errs = append(errs, &Error{Kind: ErrMissing, Key: first, Msg: msg})
		}
	}
	// Computed defaults and cross-field rules read values, so they run
	// only once every value is known to be good.
	if len(errs) == 0 {
		for _, s := range sets {
			if s == nil {
				continue
			}
			for i := range s.Options {
				if o := &s.Options[i]; o.DefaultFrom != nil && !v.set[o.Key] {
					v.m[o.Key] = o.DefaultFrom(v)
				}
			}
		}
		for _, s := range sets {
			if s == nil || s.Validate == nil {
				continue
			}
			errs = append(errs, flatten(s.Validate(v))...)
		}
	}
	if len(errs) > 0 {
		return Values{}, errs
	}
	return v, nil
}

func flatten(err error) Errors {
	if err == nil {
		return nil
	}
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}
	}
	return Errors{{Kind: ErrInvalid, Msg: err.Error()}}
}

func lookup(key string, sets []*Set) (*Option, *Set) {
	for _, s := range sets {
		if o, ok := s.Lookup(key); ok {
			return o, s
		}
	}
	return nil, nil
}

// unsupported names the set the key was most likely meant for (the owner of
// the nearest key, so that 'json.ignore-parse-eror' blames the json format)
// and lists every key that would have been accepted.
func unsupported(key string, ignore []string, sets []*Set, list bool) *Error {
	all := slices.Clone(ignore)
	owner := ""
	for _, s := range sets {
		if s == nil {
			continue
		}
		if owner == "" {
			owner = s.Owner
		}
		all = append(all, s.Keys()...)
	}
	sort.Strings(all)
	all = slices.Compact(all)
	near := Closest(key, all)
	if near != "" {
		if _, s := lookup(near, sets); s != nil {
			owner = s.Owner
		}
	}
	msg := "unsupported option '" + Cut(key) + "'"
	if owner != "" {
		msg += " for " + owner
	}
	if near != "" {
		msg += fmt.Sprintf(" (did you mean '%s'?)", near)
	}
	if list {
		msg += "; supported: " + strings.Join(all, ", ")
	}
	return &Error{Kind: ErrUnknownOption, Key: key, Msg: msg}
}

func check(o *Option, name, val string) *Error {
	bad := func(format string, args ...any) *Error {
		return &Error{Kind: ErrInvalid, Key: o.Key, Msg: fmt.Sprintf(format, args...)}
	}
	shown := Cut(val)
	name = Cut(name)
	if o.Secret {
		shown = "******"
	}
	switch o.Type {
	case Int:
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || (o.HasMin && n < o.Min) || (o.HasMax && n > o.Max) {
			return bad("'%s' must be %s, got '%s'", name, intRange(o), shown)
		}
	case Bool:
		t := strings.TrimSpace(val)
		if !strings.EqualFold(t, "true") && !strings.EqualFold(t, "false") {
			return bad("'%s' must be 'true' or 'false', got '%s'", name, shown)
		}
	case Enum:
		if _, ok := canonicalEnum(o, val); !ok {
			return bad("'%s' must be one of %s, got '%s'", name, quoteAll(o.Allowed), shown)
		}
	case Duration:
		d, err := parseDuration(val, o.BareMillis)
		if err != nil || !inRange(o, int64(d)) {
			return bad("'%s' must be a duration%s with a unit such as '500 ms', '30 s' or '5 min' (units: %s), got '%s'", name, rangeSuffix(o), durationUnitsHelp, shown)
		}
	case MemorySize:
		n, err := parseMemorySize(val)
		if err != nil || !inRange(o, n) {
			return bad("'%s' must be a memory size%s such as '512 kb', '128 mb' or '1 gb' (units: %s; a bare number is bytes), got '%s'", name, rangeSuffix(o), memoryUnitsHelp, shown)
		}
	case Float:
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || (o.HasMin && f < o.MinFloat) || (o.HasMax && f > o.MaxFloat) {
			return bad("'%s' must be %s, got '%s'", name, floatRange(o), shown)
		}
	case String:
		if o.Required && strings.TrimSpace(val) == "" {
			return bad("'%s' must not be empty", name)
		}
	}
	if o.Check != nil {
		if err := o.Check(val); err != nil {
			return bad("'%s' %s", name, err.Error())
		}
	}
	return nil
}

func inRange(o *Option, n int64) bool {
	return (!o.HasMin || n >= o.Min) && (!o.HasMax || n <= o.Max)
}

// rangeSuffix says which durations or memory sizes o accepts, " from 1 ms
// to 1 h", " >= 1 kb", or nothing when any is.
func rangeSuffix(o *Option) string {
	show := func(n int64) string {
		if o.Type == MemorySize {
			return FormatBytes(n)
		}
		return FormatDuration(time.Duration(n))
	}
	return bounds(o, show(o.Min), show(o.Max))
}

// intRange says which integers o accepts: "an integer >= 1", "an integer
// from 1 to 2147483647".
func intRange(o *Option) string {
	return "an integer" + bounds(o, strconv.FormatInt(o.Min, 10), strconv.FormatInt(o.Max, 10))
}

// floatRange says which numbers o accepts: "a number from 0 to 2", "a
// number >= 0".
func floatRange(o *Option) string {
	show := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	return "a number" + bounds(o, show(o.MinFloat), show(o.MaxFloat))
}

// bounds says the bounds o has, lo and hi being its minimum and maximum
// as the caller writes them: " from lo to hi", " >= lo", " <= hi", or
// nothing.
func bounds(o *Option, lo, hi string) string {
	switch {
	case o.HasMin && o.HasMax:
		return " from " + lo + " to " + hi
	case o.HasMin:
		return " >= " + lo
	case o.HasMax:
		return " <= " + hi
	}
	return ""
}

func normalize(o *Option, val string) string {
	switch o.Type {
	case Enum:
		c, _ := canonicalEnum(o, val)
		return c
	case Bool:
		return strings.ToLower(strings.TrimSpace(val))
	case Int, Float:
		return strings.TrimSpace(val)
	}
	return val
}

// canonicalEnum returns the declared spelling of val; the empty string can
// be an allowed value (an SSL endpoint check turned off), hence the bool.
func canonicalEnum(o *Option, val string) (string, bool) {
	for _, a := range o.Allowed {
		if strings.EqualFold(a, strings.TrimSpace(val)) {
			return a, true
		}
	}
	return "", false
}

// durationUnits are the unit labels of Flink's TimeUtils (plurals are the
// label plus "s"); Go's compound spellings ("1m30s") are read by
// time.ParseDuration instead.
var durationUnits = map[string]time.Duration{
	"d": 24 * time.Hour, "day": 24 * time.Hour,
	"h": time.Hour, "hour": time.Hour,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"ms": time.Millisecond, "milli": time.Millisecond, "millisecond": time.Millisecond,
	"us": time.Microsecond, "\u00b5s": time.Microsecond, "micro": time.Microsecond, "microsecond": time.Microsecond,
	"ns": time.Nanosecond, "nano": time.Nanosecond, "nanosecond": time.Nanosecond,
}

const durationUnitsHelp = "ms, s, min, h, d"

// parseDuration reads a non-negative duration: "0", a whole number and one
// unit of Flink's, or a Go duration. A bare number is milliseconds only
// where bareMillis says so.
func parseDuration(s string, bareMillis bool) (time.Duration, error) {
	s = strings.TrimSpace(s)
	n, label, err := splitNumber(s, "duration")
	if err != nil {
		return 0, err
	}
	if label == "" {
		if n != 0 && !bareMillis {
			return 0, fmt.Errorf("duration %q has no unit", s)
		}
		return scaleDuration(s, n, time.Millisecond)
	}
	unit, ok := durationUnits[label]
	if !ok && len(label) > 2 && strings.HasSuffix(label, "s") {
		unit, ok = durationUnits[strings.TrimSuffix(label, "s")]
	}
	if ok {
		return scaleDuration(s, n, unit)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("duration %q: unknown unit", s)
	}
	return d, nil
}

func scaleDuration(s string, n int64, unit time.Duration) (time.Duration, error) {
	if n > int64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	return time.Duration(n) * unit, nil
}

func quoteAll(vals []string) string {
	return strings.Join(quoted(vals), ", ")
}

func quoted(vals []string) []string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + v + "'"
	}
	return q
}

// joinAnd writes "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	return joinWith(items, " and ")
}

func joinWith(items []string, last string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + last + items[len(items)-1]
}

func andList(keys []string) string { return joinWith(quoted(keys), " and ") }
func orList(keys []string) string  { return joinWith(quoted(keys), " or ") }

// Closest returns the candidate nearest to s by edit distance, ignoring
// case, when it is near enough to be a likely typo; otherwise "". A
// candidate equal to s is no suggestion.
func Closest(s string, candidates []string) string {
	// Inputs come from users and fuzzers: bound the quadratic work.
	if len(s) > 256 {
		return ""
	}
	ls := strings.ToLower(s)
	best, bestD := "", len(s)/3+1
	for _, c := range candidates {
		if c == s || len(c) > 256 {
			continue
		}
		if d := EditDistance(ls, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b (in bytes), for
// "did you mean" suggestions wherever a name is mistyped.
func EditDistance(a, b string) int {
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

// MaxQuoted is how many bytes of a name or value an error message quotes;
// Cut shortens anything longer. A table, topic or value can be megabytes
// long, and an error that repeats it all buries what it says.
const MaxQuoted = 64

// Cut shortens s to at most MaxQuoted bytes, at a character boundary, with
// "..." after a cut, for quoting a user's name or value in a message. Every
// message that quotes one goes through Cut (or CutTo), so that no input can
// make an error unreadably long.
func Cut(s string) string { return CutTo(s, MaxQuoted) }

// CutTo is Cut with a limit of n bytes.
func CutTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

// splitNumber reads the whole number that s (trimmed) starts with and
// returns it with the rest, lower-cased and trimmed: the unit's label of a
// duration or a memory size (what, for messages).
func splitNumber(s, what string) (int64, string, error) {
	digits := 0
	for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
		digits++
	}
	if digits == 0 {
		return 0, "", fmt.Errorf("%s %q does not start with a number", what, s)
	}
	n, err := strconv.ParseInt(s[:digits], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("%s %q: %w", what, s, err)
	}
	return n, strings.ToLower(strings.TrimSpace(s[digits:])), nil
}

// memoryUnits are the unit labels of Flink's MemorySize, powers of 1024.
var memoryUnits = map[string]int64{
	"b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

const memoryUnitsHelp = "b, kb, mb, gb, tb"

// parseMemorySize reads a whole number of bytes with an optional unit.
func parseMemorySize(s string) (int64, error) {
	n, label, err := splitNumber(strings.TrimSpace(s), "memory size")
	if err != nil {
		return 0, err
	}
	unit := int64(1)
	if label != "" {
		u, ok := memoryUnits[label]
		if !ok {
			return 0, fmt.Errorf("memory size %q: unknown unit", s)
		}
		unit = u
	}
	if n > math.MaxInt64/unit {
		return 0, fmt.Errorf("memory size %q is too large", s)
	}
	return n * unit, nil
}

// FormatBytes writes n bytes in the largest unit that divides it, as
// Flink's MemorySize writes a size: "128mb", "1536kb", "7b".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		label string
		size  int64
	}{{"tb", 1 << 40}, {"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.label
		}
	}
	return strconv.FormatInt(n, 10) + "b"
}

// FormatDuration writes d in the largest of Flink's units that divides
// it: "30 min", "100 ms", "0 ms".
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		label string
		size  time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d != 0 && d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + " " + u.label
		}
	}
	if d == 0 {
		return "0 ms"
	}
	return strconv.FormatInt(int64(d), 10) + " ns"
}
