package debezium

import (
	stdjson "encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The envelope is read by a small scanner over the value's bytes: it checks
// the JSON grammar of the whole value (as strictly as the json format:
// strings must be UTF-8, escapes and numbers well formed) and notes where
// "before", "after" and "op" are, without copying. The rows themselves are
// then handed to the json format, which reads them again into columns.

// maxDepth bounds the nesting of arrays and objects, counted from the
// envelope, so that a hostile value cannot make the scanner recurse without
// end. A row inside the envelope is one level down, so the json format,
// whose bound counts from the row, never meets a nesting this scanner let
// through.
const maxDepth = 1000

// scanErr is a problem found in a value; field is its path, empty for a
// value that is not JSON (msg says at which byte).
type scanErr struct {
	field string
	msg   string
}

func syntaxErr(off int, format string, args ...any) *scanErr {
	return &scanErr{msg: fmt.Sprintf("invalid JSON at byte %d of the value: ", off) + fmt.Sprintf(format, args...)}
}

func unexpected(data []byte, i int, want string) *scanErr {
	if i >= len(data) {
		return syntaxErr(i, "unexpected end of input, expected %s", want)
	}
	return syntaxErr(i, "unexpected %s, expected %s", describeByte(data[i]), want)
}

func describeByte(c byte) string {
	if c == '\'' {
		return `"'"`
	}
	if c >= 0x21 && c < 0x7f {
		return "'" + string(rune(c)) + "'"
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// scanString checks the string whose opening quote is at data[i] and
// returns the position after its closing quote and whether it holds
// escapes.
func scanString(data []byte, i int) (end int, escaped bool, err *scanErr) {
	ascii := true
	for j := i + 1; j < len(data); {
		switch c := data[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(data[i+1:j]) {
				for k := i + 1; k < j; {
					r, size := utf8.DecodeRune(data[k:j])
					if r == utf8.RuneError && size == 1 {
						return 0, false, syntaxErr(k, "invalid UTF-8 byte 0x%02x in string", data[k])
					}
					k += size
				}
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
					if !isHex(data[k]) {
						return 0, false, syntaxErr(j, "invalid escape '%s'", snippet(data[j:j+6]))
					}
				}
				j += 6
			default:
				return 0, false, syntaxErr(j, "invalid escape '\\%s'", snippet(data[j+1:j+2]))
			}
		case c < 0x20:
			return 0, false, syntaxErr(j, "control character 0x%02x in string (it must be escaped)", c)
		default:
			if c >= 0x80 {
				ascii = false
			}
			j++
		}
	}
	return 0, false, syntaxErr(i, "unterminated string")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber checks the JSON number grammar from data[i].
func scanNumber(data []byte, i int) (int, *scanErr) {
	j := i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && data[j] >= '1' && data[j] <= '9':
		for j < len(data) && isDigit(data[j]) {
			j++
		}
	default:
		return 0, unexpected(data, j, "a digit")
	}
	if j < len(data) && data[j] == '.' {
		j++
		if j >= len(data) || !isDigit(data[j]) {
			return 0, unexpected(data, j, "a digit after the decimal point")
		}
		for j < len(data) && isDigit(data[j]) {
			j++
		}
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		if j >= len(data) || !isDigit(data[j]) {
			return 0, unexpected(data, j, "a digit in the exponent")
		}
		for j < len(data) && isDigit(data[j]) {
			j++
		}
	}
	if j < len(data) && isDigit(data[j]) {
		return 0, syntaxErr(i, "leading zero in number")
	}
	return j, nil
}

func literal(data []byte, i int, word string) (int, *scanErr) {
	if len(data)-i >= len(word) && string(data[i:i+len(word)]) == word {
		return i + len(word), nil
	}
	return 0, syntaxErr(i, "invalid literal, expected %s", word)
}

// skipValue checks the value at data[i], at nesting depth, and returns the
// position after it.
func skipValue(data []byte, i, depth int) (int, *scanErr) {
	if i >= len(data) {
		return 0, unexpected(data, i, "a value")
	}
	switch c := data[i]; {
	case c == '"':
		end, _, err := scanString(data, i)
		return end, err
	case c == '-' || isDigit(c):
		return scanNumber(data, i)
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
		j := skipWS(data, i+1)
		if j < len(data) && data[j] == ']' {
			return j + 1, nil
		}
		for {
			end, err := skipValue(data, j, depth+1)
			if err != nil {
				return 0, err
			}
			j = skipWS(data, end)
			if j < len(data) && data[j] == ',' {
				j = skipWS(data, j+1)
				continue
			}
			if j < len(data) && data[j] == ']' {
				return j + 1, nil
			}
			return 0, unexpected(data, j, "',' or ']'")
		}
	case c == '{':
		return scanObject(data, i, depth, nil)
	}
	return 0, unexpected(data, i, "a value")
}

// member is told each field of an object scanObject reads: the field's
// name as written (quotes excluded, escapes unresolved: escaped says
// whether it has any) and where its value starts. It scans the value and
// returns where the value ends.
type member func(name []byte, escaped bool, at, depth int) (int, *scanErr)

// scanObject checks the object at data[i], at nesting depth, and returns
// the position after it. Each field's value is scanned by visit, or
// skipped when visit is nil.
func scanObject(data []byte, i, depth int, visit member) (int, *scanErr) {
	if depth >= maxDepth {
		return 0, syntaxErr(i, "nesting deeper than %d", maxDepth)
	}
	j := skipWS(data, i+1)
	if j < len(data) && data[j] == '}' {
		return j + 1, nil
	}
	for {
		if j >= len(data) || data[j] != '"' {
			return 0, unexpected(data, j, "a field name")
		}
		end, escaped, err := scanString(data, j)
		if err != nil {
			return 0, err
		}
		name := data[j+1 : end-1]
		j = skipWS(data, end)
		if j >= len(data) || data[j] != ':' {
			return 0, unexpected(data, j, "':'")
		}
		j = skipWS(data, j+1)
		if visit != nil {
			end, err = visit(name, escaped, j, depth+1)
		} else {
			end, err = skipValue(data, j, depth+1)
		}
		if err != nil {
			return 0, err
		}
		j = skipWS(data, end)
		if j < len(data) && data[j] == ',' {
			j = skipWS(data, j+1)
			continue
		}
		if j < len(data) && data[j] == '}' {
			return j + 1, nil
		}
		return 0, unexpected(data, j, "',' or '}'")
	}
}

// unquote is the content of a string that scanString accepted, quotes
// excluded, with its escapes resolved. Only names and "op" values that hold
// escapes come here, which Debezium never writes.
func unquote(content []byte) string {
	var s string
	if err := stdjson.Unmarshal(append(append([]byte{'"'}, content...), '"'), &s); err != nil {
		return string(content)
	}
	return s
}

// maxSnippet bounds how much of a bad value an error message repeats.
const maxSnippet = 40

// snippet shows a piece of JSON text in an error message, ASCII only:
// other characters as \u escapes, invalid bytes as \x escapes, cut after
// maxSnippet characters.
func snippet(tok []byte) string {
	var b strings.Builder
	for i, n := 0, 0; i < len(tok); n++ {
		if n >= maxSnippet {
			b.WriteString("...")
			break
		}
		c := tok[i]
		switch {
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
			i++
		case c < 0x80:
			fmt.Fprintf(&b, "\\x%02x", c)
			i++
		default:
			r, size := utf8.DecodeRune(tok[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				fmt.Fprintf(&b, "\\x%02x", c)
			case r > 0xffff:
				fmt.Fprintf(&b, "\\U%08x", r)
			default:
				fmt.Fprintf(&b, "\\u%04x", r)
			}
			i += size
		}
	}
	return b.String()
}
