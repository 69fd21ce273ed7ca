package json

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// perr is an error found while decoding one value. It is built where the
// problem is found and gains its path on the way out, so that the hot path
// never formats anything: only a failing value pays for its message.
type perr struct {
	// syntax marks a value that is not JSON at all; json.ignore-parse-errors
	// skips such a value instead of nulling a field.
	syntax bool
	// path holds the steps from the failing value up to the column,
	// innermost first.
	path []step
	msg  string
}

type stepKind uint8

const (
	stepField stepKind = iota
	stepIndex
	stepKey
)

type step struct {
	kind  stepKind
	name  string
	index int
}

func (e *perr) field(name string) *perr {
	e.path = append(e.path, step{kind: stepField, name: name})
	return e
}

func (e *perr) index(i int) *perr {
	e.path = append(e.path, step{kind: stepIndex, index: i})
	return e
}

func (e *perr) key(k string) *perr {
	e.path = append(e.path, step{kind: stepKey, name: k})
	return e
}

// decodeError renders the path outermost first: "items[2].sku", "[1].qty",
// "attrs['color']". Syntax errors carry no field: the value as a whole is
// at fault, and the offset in the message says where.
func (e *perr) decodeError() *table.DecodeError {
	if e.syntax {
		return &table.DecodeError{Msg: e.msg}
	}
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		s := e.path[i]
		switch s.kind {
		case stepField:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		case stepIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case stepKey:
			b.WriteString("[")
			b.WriteString(types.QuoteString(s.name))
			b.WriteString("]")
		}
	}
	return &table.DecodeError{Field: b.String(), Msg: e.msg}
}

func syntaxErr(off int, format string, args ...any) *perr {
	return &perr{syntax: true, msg: fmt.Sprintf("invalid JSON at byte %d of the value: ", off) + fmt.Sprintf(format, args...)}
}

func typeErr(format string, args ...any) *perr {
	return &perr{msg: fmt.Sprintf(format, args...)}
}

// unexpected describes the byte at data[i] for a syntax error.
func unexpected(data []byte, i int, want string) *perr {
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

// maxSnippet bounds how much of a bad value an error message repeats.
const maxSnippet = 40

// snippet shows a piece of JSON text in an error message: ASCII only, with
// other characters as \u escapes (which is how JSON would write them) and
// invalid bytes as \x escapes, cut at maxSnippet characters.
func snippet(tok []byte) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(tok); {
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
		n++
	}
	return b.String()
}
