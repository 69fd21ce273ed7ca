package json

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/types"
)

// Inferred is a schema proposed from sample JSON values by Infer.
type Inferred struct {
	// Columns are the top-level fields of the samples' objects, in the
	// order they were first seen.
	Columns []types.Column
	// Options are the format options the columns need to decode, such as
	// 'json.timestamp-format.standard' = 'ISO-8601' when the timestamps use
	// 'T' between date and time.
	Options map[string]string
	// Rows is how many rows the samples hold (an array value holds one per
	// object), Skipped how many values gave none: not JSON, not an object
	// or array of objects, empty (tombstones) or null.
	Rows, Skipped int
}

// Inference limits. A fraction with more digits than MaxInferredScale, or
// written with an exponent, makes a DOUBLE: such numbers are measurements,
// not amounts. An object with more than MaxInferredFields distinct keys
// across the samples, or whose keys all begin with a digit, is a MAP: its
// keys are data, not field names.
const (
	MaxInferredScale  = 4
	MaxInferredFields = 32
)

// Infer proposes a column per top-level field of values, each a JSON object
// (or an array of objects) as this format decodes them, choosing for each
// field the narrowest type every sample fits:
//
//	true/false                        BOOLEAN
//	integers                          BIGINT (DECIMAL(38, 0) beyond its range)
//	numbers with a fraction           DECIMAL(p, s), or DOUBLE (see MaxInferredScale)
//	"yyyy-MM-dd"                      DATE
//	"yyyy-MM-dd HH:mm:ss[.fff]"       TIMESTAMP(3), or more digits where samples have them
//	the same ending in Z or +hh:mm    TIMESTAMP_LTZ(3)
//	objects                           ROW<...> of their fields, or MAP<STRING, V>
//	arrays                            ARRAY<element type>
//	anything else, or a mix           STRING (the decoder gives a number's or
//	                                  object's JSON text to a STRING column)
//
// A field that is null in every sample is a STRING. Timestamps written with
// 'T' are proposed with 'json.timestamp-format.standard' = 'ISO-8601', which
// holds for the whole table: when some columns use ' ' and others 'T', the
// fewer become STRING.
func Infer(values [][]byte) Inferred {
	root := &shape{}
	var inf Inferred
	for _, v := range values {
		n := root.rows
		if !root.addValue(v) {
			inf.Skipped++
			continue
		}
		inf.Rows += root.rows - n
	}
	iso := root.preferISO()
	for _, name := range root.named() {
		inf.Columns = append(inf.Columns, types.Column{Name: name, Type: root.fields[name].resolve(iso)})
	}
	inf.Options = map[string]string{}
	if iso {
		inf.Options[OptTimestampStandard] = TimestampISO8601
	}
	return inf
}

// shape accumulates what the samples of one field looked like.
type shape struct {
	kinds uint8 // bits of the JSON kinds seen (kindBool, ...)

	// numbers
	bigInt    bool // an integer beyond int64
	intDigits int  // most digits before the point
	scale     int  // most digits after the point
	double    bool // an exponent, or more than MaxInferredScale digits after the point
	huge      bool // a number out of DOUBLE's range

	// strings: each is cleared by a sample that is not of its form
	date, tsSQL, tsISO, tsZone, tsLocal bool
	strings                             int
	frac                                int // most fractional second digits

	// objects
	fields map[string]*shape
	order  []string
	rows   int // objects added at the top level (root only)

	// arrays
	elem *shape
}

const (
	kindBool uint8 = 1 << iota
	kindNumber
	kindString
	kindObject
	kindArray
)

// addValue adds a top-level value: an object, or an array of objects. It
// reports whether the value held any row.
func (s *shape) addValue(v []byte) bool {
	// encoding/json would read invalid UTF-8 as U+FFFD; the decoder
	// refuses such a value, so Infer does too.
	if !utf8.Valid(v) {
		return false
	}
	dec := stdjson.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	x, err := decodeOrdered(dec, 0)
	if err != nil {
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		return false // more than one value
	}
	switch x := x.(type) {
	case *object:
		s.addObject(x)
		s.rows++
		return true
	case []any:
		found := false
		for _, e := range x {
			if o, ok := e.(*object); ok {
				s.addObject(o)
				s.rows++
				found = true
			}
		}
		return found
	}
	return false
}

// object is a JSON object's members in the order written, a key written
// twice included: the decoder requires every occurrence to fit the column.
type object struct {
	keys []string
	vals []any
}

// errTooDeep stops Infer at the decoder's nesting bound (maxDepth), so
// that a hostile value cannot exhaust the stack.
var errTooDeep = errors.New("json nested too deep")

// decodeOrdered reads one JSON value from dec: objects as *object, arrays
// as []any, numbers as json.Number.
func decodeOrdered(dec *stdjson.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errTooDeep
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case stdjson.Delim('{'):
		o := &object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
		}
		_, err := dec.Token() // '}'
		return o, err
	case stdjson.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ']'
		return a, err
	}
	return t, nil
}

// field returns the shape of field k, adding it (last in order) if it is new.
func (s *shape) field(k string) *shape {
	if s.fields == nil {
		s.fields = map[string]*shape{}
	}
	f, ok := s.fields[k]
	if !ok {
		f = &shape{}
		s.fields[k] = f
		s.order = append(s.order, k)
	}
	return f
}

// addObject adds the fields of o.
func (s *shape) addObject(o *object) {
	if s.fields == nil {
		s.fields = map[string]*shape{}
	}
	for i, k := range o.keys {
		s.field(k).add(o.vals[i])
	}
}

func (s *shape) add(x any) {
	switch x := x.(type) {
	case nil:
	case bool:
		s.kinds |= kindBool
	case stdjson.Number:
		s.kinds |= kindNumber
		s.addNumber(string(x))
	case string:
		s.kinds |= kindString
		s.addString(x)
	case *object:
		s.kinds |= kindObject
		s.addObject(x)
	case []any:
		s.kinds |= kindArray
		if s.elem == nil {
			s.elem = &shape{}
		}
		for _, e := range x {
			s.elem.add(e)
		}
	}
}

func (s *shape) addNumber(n string) {
	if _, err := strconv.ParseFloat(n, 64); err != nil {
		s.huge = true // beyond DOUBLE: only a STRING holds its text
	}
	n = strings.TrimPrefix(n, "-")
	if strings.ContainsAny(n, "eE") {
		s.double = true
		return
	}
	whole, frac, _ := strings.Cut(n, ".")
	s.intDigits = max(s.intDigits, len(whole))
	s.scale = max(s.scale, len(frac))
	if len(frac) > MaxInferredScale {
		s.double = true
	}
	// 19 digits may or may not fit int64; 9223372036854775807 is its top.
	if len(frac) == 0 && (len(whole) > 19 || len(whole) == 19 && whole > "9223372036854775807") {
		s.bigInt = true
	}
}

func (s *shape) addString(v string) {
	if s.strings == 0 {
		s.date, s.tsSQL, s.tsISO, s.tsZone, s.tsLocal = true, true, true, true, true
	}
	s.strings++
	b := []byte(v)
	_, rest, ok := calendar.ParseDate(b, calendar.Fixed)
	if !ok {
		s.date, s.tsSQL, s.tsISO = false, false, false
		return
	}
	if len(rest) == 0 {
		s.tsSQL, s.tsISO = false, false
		return
	}
	s.date = false
	switch rest[0] {
	case ' ':
		s.tsISO = false
	case 'T':
		s.tsSQL = false
	default:
		s.tsSQL, s.tsISO = false, false
		return
	}
	t := rest[1:]
	_, tail, ok := calendar.ParseTime(t, calendar.Fixed)
	if !ok {
		s.tsSQL, s.tsISO = false, false
		return
	}
	if i := bytes.IndexByte(t[:len(t)-len(tail)], '.'); i >= 0 {
		s.frac = max(s.frac, len(t)-len(tail)-i-1)
	}
	if len(tail) == 0 {
		s.tsZone = false
	} else if _, ok := calendar.ParseOffset(tail); ok {
		s.tsLocal = false
	} else {
		s.tsSQL, s.tsISO = false, false
	}
}

// timestamp reports whether every sample is a timestamp, and in which
// separator style.
func (s *shape) timestamp() (sql, iso bool) {
	if s.kinds != kindString || !(s.tsZone || s.tsLocal) {
		return false, false
	}
	return s.tsSQL, s.tsISO
}

// preferISO counts the timestamp fields (at any depth) written in each
// style and reports whether 'T' wins: the standard is one option for the
// whole table.
func (s *shape) preferISO() bool {
	var sql, iso int
	var walk func(*shape)
	walk = func(s *shape) {
		if s == nil {
			return
		}
		a, b := s.timestamp()
		if a {
			sql++
		}
		if b {
			iso++
		}
		for _, f := range s.fields {
			walk(f)
		}
		walk(s.elem)
	}
	walk(s)
	return iso > sql
}

func (s *shape) resolve(iso bool) *types.DataType {
	switch s.kinds {
	case 0:
		return types.StringType()
	case kindBool:
		return types.BooleanType()
	case kindNumber:
		switch {
		case s.huge && (s.double || s.scale > 0 || s.intDigits > types.MaxDecimalPrecision):
			return types.StringType()
		case s.double:
			return types.DoubleType()
		case s.scale == 0 && !s.bigInt:
			return types.BigIntType()
		case s.scale == 0 && s.intDigits <= types.MaxDecimalPrecision:
			return types.DecimalType(types.MaxDecimalPrecision, 0)
		case s.scale == 0:
			return types.DoubleType()
		}
		// Room for larger amounts than the samples show: at least eight
		// digits before the point.
		p := max(s.intDigits, 8) + s.scale
		if p > types.MaxDecimalPrecision {
			return types.DoubleType()
		}
		return types.DecimalType(p, s.scale)
	case kindString:
		if s.date {
			return &types.DataType{Kind: types.Date}
		}
		sql, isoForm := s.timestamp()
		if (sql && !iso) || (isoForm && iso) {
			p := min(max(s.frac, 3), types.MaxTimePrecision)
			if s.tsLocal {
				return &types.DataType{Kind: types.Timestamp, Precision: p}
			}
			return types.TimestampLTZType(p)
		}
		return types.StringType()
	case kindObject:
		if s.isMap() {
			v := &shape{}
			for _, f := range s.fields {
				v.merge(f)
			}
			return types.MapType(types.StringType(), v.resolve(iso))
		}
		names := s.named()
		if len(names) == 0 {
			return types.StringType() // only {}: its text
		}
		t := &types.DataType{Kind: types.Row}
		for _, name := range names {
			t.Fields = append(t.Fields, types.Field{Name: name, Type: s.fields[name].resolve(iso)})
		}
		return t
	case kindArray:
		elem := s.elem
		if elem == nil {
			elem = &shape{}
		}
		return &types.DataType{Kind: types.Array, Elem: elem.resolve(iso)}
	}
	return types.StringType()
}

// named returns the field names that can be columns or ROW fields, in the
// order first seen: an empty name cannot be declared, and a name that
// differs from an earlier one only in case would be a duplicate (column
// names ignore case). The decoder leaves the fields without a column alone.
func (s *shape) named() []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range s.order {
		low := strings.ToLower(k)
		if k == "" || seen[low] {
			continue
		}
		seen[low] = true
		out = append(out, k)
	}
	return out
}

// isMap tells an object whose keys are data (ids, dates) from a record with
// named fields.
func (s *shape) isMap() bool {
	if len(s.fields) > MaxInferredFields {
		return true
	}
	for k := range s.fields {
		if k == "" || k[0] < '0' || k[0] > '9' {
			return false
		}
	}
	return len(s.fields) > 0
}

// merge adds what o saw to s, for the values of a MAP, which share one type.
func (s *shape) merge(o *shape) {
	s.kinds |= o.kinds
	s.bigInt = s.bigInt || o.bigInt
	s.huge = s.huge || o.huge
	s.double = s.double || o.double
	s.intDigits = max(s.intDigits, o.intDigits)
	s.scale = max(s.scale, o.scale)
	if o.strings > 0 {
		if s.strings == 0 {
			s.date, s.tsSQL, s.tsISO, s.tsZone, s.tsLocal = o.date, o.tsSQL, o.tsISO, o.tsZone, o.tsLocal
		} else {
			s.date, s.tsSQL, s.tsISO = s.date && o.date, s.tsSQL && o.tsSQL, s.tsISO && o.tsISO
			s.tsZone, s.tsLocal = s.tsZone && o.tsZone, s.tsLocal && o.tsLocal
		}
		s.strings += o.strings
		s.frac = max(s.frac, o.frac)
	}
	for _, k := range o.order {
		s.field(k).merge(o.fields[k])
	}
	if o.elem != nil {
		if s.elem == nil {
			s.elem = &shape{}
		}
		s.elem.merge(o.elem)
	}
}
