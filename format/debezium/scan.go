package debezium

import (
	"errors"
	"fmt"

	"github.com/kshare/kshare/format/json"
)

// The envelope is read by the json format's scanner over the value's bytes
// (json.ScanObject and the rest): it checks the JSON grammar of the whole
// value, as strictly as the json format reads values, and notes where
// "before", "after" and "op" are, without copying. The rows themselves are
// then handed to the json format, which reads them again into columns. The
// scanner bounds nesting from the envelope (json.MaxDepth), so a row inside
// it, one level down, never meets a nesting the json format's own bound,
// which counts from the row, refuses.

// scanErr is a problem found in a value; field is its path, empty for a
// value that is not JSON (msg says at which byte).
type scanErr struct {
	field string
	msg   string
}

func (e *scanErr) Error() string { return e.msg }

func syntaxErr(off int, format string, args ...any) *scanErr {
	return &scanErr{msg: fmt.Sprintf("invalid JSON at byte %d of the value: ", off) + fmt.Sprintf(format, args...)}
}

// asScanErr is err, from the scanner or from a member, as a *scanErr.
func asScanErr(err error) *scanErr {
	var se *scanErr
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return se
	}
	return &scanErr{msg: err.Error()}
}

func skipWS(data []byte, i int) int { return json.SkipSpace(data, i) }

// skipValue checks the value at data[i], at nesting depth, and returns the
// position after it.
func skipValue(data []byte, i, depth int) (int, *scanErr) {
	end, err := json.SkipValue(data, i, depth)
	return end, asScanErr(err)
}

// scanString checks the string whose opening quote is at data[i] and
// returns the position after its closing quote and whether it holds
// escapes.
func scanString(data []byte, i int) (end int, escaped bool, err *scanErr) {
	end, escaped, serr := json.ScanString(data, i)
	return end, escaped, asScanErr(serr)
}

// member is told each field of an object scanObject reads (see
// json.Member).
type member func(name []byte, escaped bool, at, depth int) (int, *scanErr)

// scanObject checks the object at data[i], at nesting depth, and returns
// the position after it; visit scans each field's value.
func scanObject(data []byte, i, depth int, visit member) (int, *scanErr) {
	end, err := json.ScanObject(data, i, depth, func(name []byte, escaped bool, at, depth int) (int, error) {
		end, err := visit(name, escaped, at, depth)
		if err != nil {
			return 0, err
		}
		return end, nil
	})
	return end, asScanErr(err)
}

// unquote is the content of a string that scanString accepted, quotes
// excluded, with its escapes resolved.
func unquote(content []byte) string { return json.Unquote(content) }

func snippet(tok []byte) string  { return json.Snippet(tok) }
func describeByte(c byte) string { return json.DescribeByte(c) }
