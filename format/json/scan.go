package json

import (
	"unicode/utf8"
)

// The scanner works on the value's bytes and positions in them: no token
// objects, no copies. Every function takes the position of the first byte of
// what it scans and returns the position just past it.
//
// The steps every array and object loop takes (after the opening bracket, after a field name,
// after a member) are the small functions openBracket, colon and afterMember.
// Those loops run for every member of every value, so each step must stay
// within the compiler's inlining budget (80) and cost no call: they return
// where the input went wrong rather than build the error (a call to
// unexpected alone costs more than the budget), and skipWS is a table
// lookup. Check after a change: go build -gcflags=-m=2 ./format/json 2>&1 |
// grep -E 'inline (openBracket|colon|afterMember|skipWS)'.

// maxDepth bounds the nesting of arrays and objects, so that a hostile value
// cannot make the skipper recurse without end. Jackson's default is the same.
const maxDepth = 1000

// space marks JSON's whitespace.
var space = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

func skipWS(data []byte, i int) int {
	for i < len(data) && space[data[i]] {
		i++
	}
	return i
}

// openBracket reads past the opening bracket at data[i] and the
// whitespace after it: more is true, and j where the first member starts,
// unless the closing bracket follows at once (j is then just past it).
func openBracket(data []byte, i int, closing byte) (j int, more bool) {
	j = skipWS(data, i+1)
	if j < len(data) && data[j] == closing {
		return j + 1, false
	}
	return j, true
}

// colon reads the ':' after a field name that ends at end, and the
// whitespace around it; j is where the value starts. When ok is false, j
// is where a ':' was expected.
func colon(data []byte, end int) (j int, ok bool) {
	j = skipWS(data, end)
	if j < len(data) && data[j] == ':' {
		return skipWS(data, j+1), true
	}
	return j, false
}

// afterMember reads what follows a member of an array or object that ends
// at end: a ',' (more is true, and j is where the next member starts) or
// the closing bracket (more is false, j is just past it). When ok is
// false, j is where one of them was expected.
func afterMember(data []byte, end int, closing byte) (j int, more, ok bool) {
	j = skipWS(data, end)
	if j < len(data) {
		switch data[j] {
		case ',':
			return skipWS(data, j+1), true, true
		case closing:
			return j + 1, false, true
		}
	}
	return j, false, false
}

// plain marks the bytes a string scan passes over without a second look:
// printable ASCII other than the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString scans the string whose opening quote is at data[i]. It returns
// the position after the closing quote and whether the string holds escapes
// (then its content must go through unescape). It checks the escapes'
// grammar and that the content is UTF-8, as RFC 8259 requires.
func scanString(data []byte, i int) (end int, escaped bool, err *perr) {
	j := i + 1
	high := false
	for {
		// The common case, a run of plain ASCII, is a tight loop.
		for j < len(data) && plain[data[j]] {
			j++
		}
		if j >= len(data) {
			return 0, false, syntaxErr(i, "unterminated string")
		}
		switch c := data[j]; {
		case c == '"':
			if high && !utf8.Valid(data[i+1:j]) {
				return 0, false, badUTF8(data, i+1, j)
			}
			return j + 1, escaped, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(data) {
				return 0, false, syntaxErr(i, "unterminated string")
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(data) {
					return 0, false, syntaxErr(j, "truncated \\u escape")
				}
				for k := j + 2; k < j+6; k++ {
					if hexVal(data[k]) < 0 {
						return 0, false, syntaxErr(j, "invalid escape '%s'", snippet(data[j:j+6]))
					}
				}
				j += 6
			default:
				return 0, false, syntaxErr(j, "invalid escape '\\%s'", snippet(data[j+1:j+2]))
			}
		case c < 0x20:
			return 0, false, syntaxErr(j, "control character 0x%02x in string (it must be escaped)", c)
		default: // >= 0x80: checked as a whole at the closing quote
			high = true
			j++
		}
	}
}

func badUTF8(data []byte, from, to int) *perr {
	for k := from; k < to; {
		r, size := utf8.DecodeRune(data[k:to])
		if r == utf8.RuneError && size == 1 {
			return syntaxErr(k, "invalid UTF-8 byte 0x%02x in string", data[k])
		}
		k += size
	}
	return syntaxErr(from, "invalid UTF-8 in string")
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func hex4(b []byte) rune {
	return rune(hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3]))
}

// unescape appends the content of a string that scanString accepted (quotes
// excluded) to dst with its escapes resolved. A \u escape of a surrogate
// pair becomes its one character; a lone surrogate, which UTF-8 cannot
// encode, becomes U+FFFD as in Go's encoding/json.
func unescape(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c != '\\' {
			// Copy the run up to the next escape in one append.
			j := i + 1
			for j < len(src) && src[j] != '\\' {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		switch src[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(src[i+2 : i+6])
			i += 6
			if r >= 0xd800 && r < 0xdc00 {
				if i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
					if lo := hex4(src[i+2 : i+6]); lo >= 0xdc00 && lo < 0xe000 {
						r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			} else if r >= 0xdc00 && r < 0xe000 {
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, src[i+1])
		}
		i += 2
	}
	return dst
}

// scanNumber checks the JSON number grammar from data[i] and returns the
// position after the number and whether it is an integer (no fraction, no
// exponent).
func scanNumber(data []byte, i int) (end int, isInt bool, err *perr) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j >= len(data):
		return 0, false, unexpected(data, j, "a digit")
	case data[j] == '0':
		j++
	case data[j] >= '1' && data[j] <= '9':
		j++
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
	default:
		return 0, false, unexpected(data, j, "a digit")
	}
	isInt = true
	if j < len(data) && data[j] == '.' {
		isInt = false
		j++
		if j >= len(data) || data[j] < '0' || data[j] > '9' {
			return 0, false, unexpected(data, j, "a digit after the decimal point")
		}
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		isInt = false
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		if j >= len(data) || data[j] < '0' || data[j] > '9' {
			return 0, false, unexpected(data, j, "a digit in the exponent")
		}
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
	}
	if j < len(data) && data[j] >= '0' && data[j] <= '9' {
		// Only a leading zero can stop the digits early: "01".
		return 0, false, syntaxErr(i, "leading zero in number")
	}
	return j, isInt, nil
}

// literal checks that data[i:] starts with word (true, false, null).
func literal(data []byte, i int, word string) (int, *perr) {
	if len(data)-i >= len(word) && string(data[i:i+len(word)]) == word {
		return i + len(word), nil
	}
	return 0, syntaxErr(i, "invalid literal, expected %s", word)
}

// skipValue scans the value at data[i], checking its grammar, and returns
// the position after it. It is how unknown fields are passed over and how
// the extent of a value that does not fit is found for its error message.
func skipValue(data []byte, i int, depth int) (int, *perr) {
	if i >= len(data) {
		return 0, unexpected(data, i, "a value")
	}
	switch c := data[i]; {
	case c == '"':
		end, _, err := scanString(data, i)
		return end, err
	case c == '-' || (c >= '0' && c <= '9'):
		end, _, err := scanNumber(data, i)
		return end, err
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	case c == '[':
		if depth >= maxDepth {
			return 0, syntaxErr(i, "nesting deeper than %d", maxDepth)
		}
		j, more := openBracket(data, i, ']')
		for more {
			end, err := skipValue(data, j, depth+1)
			if err != nil {
				return 0, err
			}
			var ok bool
			if j, more, ok = afterMember(data, end, ']'); !ok {
				return 0, unexpected(data, j, "',' or ']'")
			}
		}
		return j, nil
	case c == '{':
		if depth >= maxDepth {
			return 0, syntaxErr(i, "nesting deeper than %d", maxDepth)
		}
		j, more := openBracket(data, i, '}')
		for more {
			if j >= len(data) || data[j] != '"' {
				return 0, unexpected(data, j, "a field name")
			}
			end, _, err := scanString(data, j)
			if err != nil {
				return 0, err
			}
			var ok bool
			if j, ok = colon(data, end); !ok {
				return 0, unexpected(data, j, "':'")
			}
			if end, err = skipValue(data, j, depth+1); err != nil {
				return 0, err
			}
			if j, more, ok = afterMember(data, end, '}'); !ok {
				return 0, unexpected(data, j, "',' or '}'")
			}
		}
		return j, nil
	}
	return 0, unexpected(data, i, "a value")
}
