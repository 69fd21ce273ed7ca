package json

// This file lends the value scanner to formats whose values are JSON
// documents of a shape of their own: 'debezium-json' reads its envelope
// with it, then hands the rows in it to this format. They get the same
// grammar, checked as strictly (strings UTF-8, escapes and numbers well
// formed), with the same messages.

// SyntaxError is a value that is not JSON; its message says at which byte
// of the value and what is wrong there.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return e.Msg }

// MaxDepth bounds the nesting of arrays and objects in a value, counted
// from its outermost.
const MaxDepth = maxDepth

func lent(err *perr) error {
	if err == nil {
		return nil
	}
	return &SyntaxError{Msg: err.msg}
}

// SkipSpace returns the position of the first byte at or after i that is
// not JSON whitespace.
func SkipSpace(data []byte, i int) int { return skipWS(data, i) }

// SkipValue checks the value that starts at data[i], nested depth levels
// deep, and returns the position after it.
func SkipValue(data []byte, i, depth int) (int, error) {
	end, err := skipValue(data, i, depth)
	if err != nil {
		return 0, lent(err)
	}
	return end, nil
}

// ScanString checks the string whose opening quote is at data[i] and
// returns the position after its closing quote and whether it holds
// escapes (Unquote resolves them).
func ScanString(data []byte, i int) (end int, escaped bool, err error) {
	end, escaped, perr := scanString(data, i)
	if perr != nil {
		return 0, false, lent(perr)
	}
	return end, escaped, nil
}

// A Member reads one field of the object ScanObject scans: its name as
// written (quotes excluded, escapes unresolved; escaped says whether it
// has any) and the position at, nested depth levels deep, where its value
// starts. It checks the value and returns the position after it.
type Member func(name []byte, escaped bool, at, depth int) (end int, err error)

// ScanObject checks the object that starts at data[i], nested depth levels
// deep, handing each field to visit, and returns the position after it. An
// error of visit is returned as it is.
func ScanObject(data []byte, i, depth int, visit Member) (int, error) {
	if depth >= maxDepth {
		return 0, lent(syntaxErr(i, "nesting deeper than %d", maxDepth))
	}
	j, more := openBracket(data, i, '}')
	for more {
		if j >= len(data) || data[j] != '"' {
			return 0, lent(unexpected(data, j, "a field name"))
		}
		end, escaped, perr := scanString(data, j)
		if perr != nil {
			return 0, lent(perr)
		}
		name := data[j+1 : end-1]
		var ok bool
		if j, ok = colon(data, end); !ok {
			return 0, lent(unexpected(data, j, "':'"))
		}
		end, err := visit(name, escaped, j, depth+1)
		if err != nil {
			return 0, err
		}
		if j, more, ok = afterMember(data, end, '}'); !ok {
			return 0, lent(unexpected(data, j, "',' or '}'"))
		}
	}
	return j, nil
}

// Unquote is the content of a string ScanString accepted, quotes excluded,
// with its escapes resolved.
func Unquote(content []byte) string { return string(unescape(nil, content)) }

// Snippet shows a piece of JSON text in an error message, ASCII only
// (other characters as \u escapes, invalid bytes as \x escapes), cut after
// 40 characters.
func Snippet(tok []byte) string { return snippet(tok) }

// DescribeByte names a byte in an error message: 'x' for a printable
// one, "byte 0x01" for another.
func DescribeByte(c byte) string { return describeByte(c) }
