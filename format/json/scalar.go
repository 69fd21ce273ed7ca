package json

import (
	"bytes"
	"encoding/base64"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/internal/calendar"
	"github.com/kshare/kshare/internal/decimal"
	"github.com/kshare/kshare/types"
)

// parseScalar reads the value at data[i] (not whitespace) for a scalar node
// into sc, appending nothing. It returns the position after the value and
// whether the value was JSON null; the caller decides what null means.
func (n *node) parseScalar(data []byte, i int, sc *scalar, iso bool) (int, bool, *perr) {
	switch c := data[i]; {
	case c == '"':
		end, escaped, err := scanString(data, i)
		if err != nil {
			return 0, false, err
		}
		content := data[i+1 : end-1]
		if escaped {
			n.esc = unescape(n.esc[:0], content)
			content = n.esc
		}
		if why, ok := n.fromString(content, sc, iso); !ok {
			return 0, false, n.mismatch(data[i:end], why)
		}
		return end, false, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return n.fromNumber(data, i, sc)
	case c == 't' || c == 'f':
		word := "true"
		if c == 'f' {
			word = "false"
		}
		end, err := literal(data, i, word)
		if err != nil {
			return 0, false, err
		}
		switch n.kind {
		case types.Boolean:
			sc.t = c == 't'
		case types.Char, types.Varchar:
			sc.b = data[i:end]
		default:
			return 0, false, n.mismatch(data[i:end], "")
		}
		return end, false, nil
	case c == 'n':
		end, err := literal(data, i, "null")
		if err != nil {
			return 0, false, err
		}
		return end, true, nil
	case c == '{' || c == '[':
		end, err := skipValue(data, i, 0)
		if err != nil {
			return 0, false, err
		}
		if n.kind == types.Char || n.kind == types.Varchar {
			// Flink gives a STRING column the JSON text of a nested value;
			// here it is the text as written, not a re-serialization.
			sc.b = data[i:end]
			return end, false, nil
		}
		return 0, false, n.mismatch(data[i:end], "")
	}
	return 0, false, unexpected(data, i, "a value")
}

// mismatch is the error for a value tok that does not fit the node, with an
// optional reason ("out of range").
func (n *node) mismatch(tok []byte, why string) *perr {
	var got string
	switch {
	case len(tok) > 0 && tok[0] == '{':
		got = "an object"
	case len(tok) > 0 && tok[0] == '[':
		got = "an array"
	default:
		got = snippet(tok)
	}
	if why != "" {
		return typeErr("expected %s, got %s (%s)", n.expect, got, why)
	}
	return typeErr("expected %s, got %s", n.expect, got)
}

const whyRange = "out of range"

// fromNumber reads the JSON number at data[i].
func (n *node) fromNumber(data []byte, i int, sc *scalar) (int, bool, *perr) {
	switch n.kind {
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		v, end, st, err := parseIntToken(data, i)
		if err != nil {
			return 0, false, err
		}
		switch {
		case st == numSyntax:
			return 0, false, n.mismatch(data[i:end], "")
		case st == numRange || !n.intFits(v):
			return 0, false, n.mismatch(data[i:end], whyRange)
		}
		sc.i = v
		return end, false, nil
	case types.Decimal:
		if v, end, ok := n.quickDecimal(data, i); ok {
			sc.d = decimal128.FromI64(v)
			return end, false, nil
		}
	}
	// The other kinds read the number's text once its grammar is checked.
	end, _, err := scanNumber(data, i)
	if err != nil {
		return 0, false, err
	}
	tok := data[i:end]
	switch n.kind {
	case types.Decimal:
		d, st := decimal.Parse(tok, n.prec, n.scale)
		if st != decimal.OK {
			return 0, false, n.mismatch(tok, whyRange)
		}
		sc.d = d
	case types.Float, types.Double:
		f, ok := n.parseFloat(tok)
		if !ok {
			return 0, false, n.mismatch(tok, whyRange)
		}
		sc.f = f
	case types.Char, types.Varchar:
		sc.b = tok
	default:
		return 0, false, n.mismatch(tok, "")
	}
	return end, false, nil
}

// digits reads the decimal digits at data[j:], at most n of them, onto u
// (u*10 + each digit) and returns u and the position after them. Callers
// bound n so that u cannot overflow, or check the count themselves. It fits
// the inlining budget, so the fast paths that call it keep a plain loop.
func digits(u int64, data []byte, j, n int) (int64, int) {
	for start := j; j < len(data) && j-start < n; j++ {
		c := data[j] - '0'
		if c > 9 {
			break
		}
		u = u*10 + int64(c)
	}
	return u, j
}

var pow10 = [...]int64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// quickDecimal reads the common shape of a decimal, up to 18 digits with
// no more fractional digits than the scale and no exponent, in one pass.
// Anything else (and every error) is left to decimal.Parse.
func (n *node) quickDecimal(data []byte, i int) (int64, int, bool) {
	j := i
	neg := data[j] == '-'
	if neg {
		j++
	}
	start := j
	u, j := digits(0, data, j, len(data))
	nInt := j - start
	if nInt == 0 || (data[start] == '0' && nInt > 1) {
		return 0, 0, false
	}
	nFrac := 0
	if j < len(data) && data[j] == '.' {
		j++
		fs := j
		u, j = digits(u, data, j, len(data))
		nFrac = j - fs
		if nFrac == 0 {
			return 0, 0, false
		}
	}
	// nFrac <= scale and nInt+scale <= 18 keep the scaled value in an int64.
	if nFrac > n.scale || nInt+n.scale > 18 || (j < len(data) && (data[j] == 'e' || data[j] == 'E')) {
		return 0, 0, false
	}
	// Integer digits, leading zero aside, must fit in precision - scale.
	if sig := nInt; !(sig == 1 && data[start] == '0') && sig > n.prec-n.scale {
		return 0, 0, false
	}
	u *= pow10[n.scale-nFrac]
	if neg {
		u = -u
	}
	return u, j, true
}

// numStatus says how parseIntToken read a number.
type numStatus uint8

const (
	numOK     numStatus = iota
	numSyntax           // a number, but not an integer
	numRange            // an integer beyond int64
)

// parseIntToken reads the JSON number at data[i] as an integer in one pass.
// A number with a fraction or an exponent gives numSyntax (it is a number,
// but not an integer), one beyond int64 numRange; a malformed one an error.
func parseIntToken(data []byte, i int) (int64, int, numStatus, *perr) {
	j := i
	neg := false
	if data[j] == '-' {
		neg = true
		j++
	}
	start := j
	var u uint64
	for j < len(data) {
		c := data[j] - '0'
		if c > 9 {
			break
		}
		u = u*10 + uint64(c)
		j++
	}
	digits := j - start
	if digits == 0 || (data[start] == '0' && digits > 1) ||
		(j < len(data) && (data[j] == '.' || data[j] == 'e' || data[j] == 'E')) {
		// The rare shapes: let the full grammar check decide.
		end, isInt, err := scanNumber(data, i)
		if err != nil {
			return 0, 0, 0, err
		}
		if !isInt {
			return 0, end, numSyntax, nil
		}
	}
	// 19 digits always fit in a uint64; beyond that u may have wrapped.
	if digits > 19 || (neg && u > 1<<63) || (!neg && u > math.MaxInt64) {
		return 0, j, numRange, nil
	}
	if neg {
		return -int64(u), j, numOK, nil
	}
	return int64(u), j, numOK, nil
}

func (n *node) intFits(v int64) bool { return v >= n.min && v <= n.max }

// parseFloat reads a number's text without copying it into a string.
func (n *node) parseFloat(s []byte) (float64, bool) {
	bitSize := 64
	if n.kind == types.Float {
		bitSize = 32
	}
	f, err := strconv.ParseFloat(unsafeString(s), bitSize)
	if err != nil {
		return 0, false
	}
	return f, true
}

// unsafeString views b as a string for a call that does not keep it.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// fromString reads the content of a JSON string (escapes resolved) into the
// node's type. Like Flink, numbers and booleans may come as strings ("42",
// "true"), surrounding spaces ignored. It returns a reason to add to the
// error when one helps.
func (n *node) fromString(s []byte, sc *scalar, iso bool) (string, bool) {
	switch n.kind {
	case types.Char, types.Varchar:
		sc.b = s
		return "", true
	case types.Varbinary, types.Binary:
		b, ok := decodeBase64(n.bin[:0], s)
		if !ok {
			return "", false
		}
		n.bin = b
		if n.kind == types.Binary && len(b) != n.width {
			return strconv.Itoa(len(b)) + " bytes", false
		}
		sc.b = b
		return "", true
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		v, err := strconv.ParseInt(unsafeString(bytes.TrimSpace(s)), 10, 64)
		if err != nil {
			if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
				return whyRange, false
			}
			return "", false
		}
		if !n.intFits(v) {
			return whyRange, false
		}
		sc.i = v
		return "", true
	case types.Decimal:
		d, st := decimal.Parse(bytes.TrimSpace(s), n.prec, n.scale)
		switch st {
		case decimal.Syntax:
			return "", false
		case decimal.Range:
			return whyRange, false
		}
		sc.d = d
		return "", true
	case types.Float, types.Double:
		t := bytes.TrimSpace(s)
		if bytes.IndexByte(t, '_') >= 0 {
			// Go's ParseFloat takes digit separators; Java's does not.
			return "", false
		}
		bitSize := 64
		if n.kind == types.Float {
			bitSize = 32
		}
		f, err := strconv.ParseFloat(unsafeString(t), bitSize)
		if err != nil {
			if e, ok := err.(*strconv.NumError); ok && e.Err == strconv.ErrRange {
				return whyRange, false
			}
			return "", false
		}
		sc.f = f
		return "", true
	case types.Boolean:
		t := unsafeString(bytes.TrimSpace(s))
		switch {
		case strings.EqualFold(t, "true"):
			sc.t = true
		case strings.EqualFold(t, "false"):
			sc.t = false
		default:
			return "", false
		}
		return "", true
	case types.Date:
		days, rest, ok := calendar.ParseDate(s, calendar.Fixed)
		if !ok || len(rest) != 0 {
			return "", false
		}
		sc.i = days
		return "", true
	case types.Time:
		nanos, rest, ok := calendar.ParseTime(s, calendar.Fixed)
		if !ok || len(rest) != 0 {
			return "", false
		}
		sc.i = calendar.Truncate(nanos, n.t.Precision) / n.perUnit
		return "", true
	case types.Timestamp, types.TimestampLTZ:
		v, ok := n.parseTimestamp(s, iso)
		if !ok {
			return "", false
		}
		sc.i = v
		return "", true
	}
	return "", false
}

func (n *node) parseTimestamp(s []byte, iso bool) (int64, bool) {
	days, rest, ok := calendar.ParseDate(s, calendar.Fixed)
	if !ok || len(rest) == 0 {
		return 0, false
	}
	sep := byte(' ')
	if iso {
		sep = 'T'
	}
	if rest[0] != sep {
		return 0, false
	}
	nanos, rest, ok := calendar.ParseTime(rest[1:], calendar.Fixed)
	if !ok {
		return 0, false
	}
	var off int64
	if n.kind == types.TimestampLTZ {
		if off, ok = calendar.ParseOffset(rest); !ok {
			return 0, false
		}
	} else if len(rest) != 0 {
		return 0, false
	}
	nanos = calendar.Truncate(nanos, n.t.Precision)
	secs := days*calendar.SecsPerDay + nanos/calendar.NanosPerSec - off
	return calendar.ToUnit(secs, nanos%calendar.NanosPerSec, n.perUnit)
}

// Strict decoding refuses non-zero padding bits, so that one text means one
// byte string.
var (
	padded   = base64.StdEncoding.Strict()
	unpadded = base64.RawStdEncoding.Strict()
)

// decodeBase64 decodes standard base64, with or without padding, appending
// to dst.
func decodeBase64(dst, s []byte) ([]byte, bool) {
	need := base64.StdEncoding.DecodedLen(len(s)) + 3
	if cap(dst) < need {
		dst = make([]byte, 0, need)
	}
	enc := padded
	if len(s)%4 != 0 {
		enc = unpadded
	}
	m, err := enc.Decode(dst[:need], s)
	if err != nil {
		return dst, false
	}
	return dst[:m], true
}

// appendScalar appends what parseScalar read into sc. Where the builder has
// room it uses UnsafeAppend, which skips Append's capacity check and
// resize closure: this is the hot path of every row.
func (n *node) appendScalar(sc *scalar) {
	switch n.kind {
	case types.TinyInt:
		n.i8.Append(int8(sc.i))
	case types.SmallInt:
		n.i16.Append(int16(sc.i))
	case types.Int:
		if b := n.i32; b.Len() < b.Cap() {
			b.UnsafeAppend(int32(sc.i))
		} else {
			b.Append(int32(sc.i))
		}
	case types.BigInt:
		if b := n.i64; b.Len() < b.Cap() {
			b.UnsafeAppend(sc.i)
		} else {
			b.Append(sc.i)
		}
	case types.Float:
		n.f32.Append(float32(sc.f))
	case types.Double:
		if b := n.f64; b.Len() < b.Cap() {
			b.UnsafeAppend(sc.f)
		} else {
			b.Append(sc.f)
		}
	case types.Boolean:
		n.bl.Append(sc.t)
	case types.Char, types.Varchar, types.Varbinary:
		if b := n.bb; b.Len() < b.Cap() && b.DataCap()-b.DataLen() >= len(sc.b) {
			b.UnsafeAppend(sc.b)
		} else {
			b.Append(sc.b)
		}
	case types.Binary:
		n.fsb.Append(sc.b)
	case types.Decimal:
		if b := n.dec; b.Len() < b.Cap() {
			b.UnsafeAppend(sc.d)
		} else {
			b.Append(sc.d)
		}
	case types.Date:
		n.d32.Append(arrow.Date32(sc.i))
	case types.Time:
		if n.t32 != nil {
			n.t32.Append(arrow.Time32(sc.i))
		} else {
			n.t64.Append(arrow.Time64(sc.i))
		}
	case types.Timestamp, types.TimestampLTZ:
		if b := n.ts; b.Len() < b.Cap() {
			b.UnsafeAppend(arrow.Timestamp(sc.i))
		} else {
			b.Append(arrow.Timestamp(sc.i))
		}
	}
}
