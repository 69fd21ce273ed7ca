package json

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"

	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

type config struct {
	failOnMissing bool
	ignore        bool
	iso           bool
	writing       bool // the plan is checked for an encoder: errors say "write"
}

// decoder is the table.Decoder of the json format.
//
// A top-level object is decoded in one pass into slots, one per column,
// and the slots are appended to the builders only once the whole object has
// been read and checked: a bad field leaves the builders untouched. Scalar
// columns (the hot path) are parsed once; a nested column (ARRAY, MAP, ROW)
// is checked in the first pass and walked again to append it, since an
// Arrow builder cannot take back what was appended to its children. A
// top-level array is checked element by element first, then appended.
type decoder struct {
	cfg    config
	cols   []*node
	fields fieldNames
	slots  []slot
	gen    uint32
	seen   int // distinct columns set in the current object
	// quickEnd is where the value quick read ends; a field rather than a
	// second result keeps quick's results in one register.
	quickEnd int
	bound    []array.Builder
	key      []byte // scratch for field names with escapes
}

// slot is one column of the object being decoded, between its scan and its
// commit.
type slot struct {
	gen   uint32 // equals decoder.gen when the current object set it
	null  bool
	start int // nested columns: where the value starts
	sc    scalar
}

var _ table.Decoder = (*decoder)(nil)

// Decode implements table.Decoder. A nil or empty value (a Kafka tombstone)
// and the JSON value null give no row, as in Flink. Decode keeps no
// reference to value or to cols once it returns; the builders stay the
// caller's, who releases them.
func (d *decoder) Decode(value []byte, cols []array.Builder) (int, error) {
	if len(value) == 0 {
		return 0, nil
	}
	d.bind(cols)
	// The common value, one compact object, without the call to decode.
	if value[0] == '{' {
		end, err := d.scanRoot(value, 0)
		if err == nil && end < len(value) {
			err = trailing(value, end)
		}
		if err == nil {
			d.commit(value)
			return 1, nil
		}
		return 0, d.fail(err)
	}
	rows, err := d.decode(value)
	if err != nil {
		return 0, d.fail(err)
	}
	return rows, nil
}

// fail turns a decoding error into the one Decode returns.
func (d *decoder) fail(err *perr) error {
	de := err.decodeError()
	if d.cfg.ignore {
		return fmt.Errorf("%w: %w", table.ErrSkipped, de)
	}
	return de
}

func (d *decoder) bind(cols []array.Builder) {
	if len(cols) != len(d.cols) {
		d.badBuilders(cols)
	}
	for i, b := range cols {
		if !sameBuilder(b, d.bound[i]) {
			d.rebind(i, b)
		}
	}
}

func (d *decoder) rebind(i int, b array.Builder) {
	d.cols[i].bind(b)
	d.bound[i] = b
}

func (d *decoder) badBuilders(cols []array.Builder) {
	panic(fmt.Sprintf("json: Decode given %d builders for %d physical columns", len(cols), len(d.cols)))
}

// sameBuilder is b == c for builders, which are pointers. Comparing the two
// words of the interfaces directly saves the runtime's generic interface
// comparison on every column of every Decode call.
func sameBuilder(b, c array.Builder) bool {
	x := (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	y := (*[2]unsafe.Pointer)(unsafe.Pointer(&c))
	return x[0] == y[0] && x[1] == y[1]
}

func (d *decoder) decode(value []byte) (int, *perr) {
	i := skipWS(value, 0)
	if i >= len(value) {
		return 0, syntaxErr(i, "no value, only whitespace")
	}
	switch value[i] {
	case '{':
		end, err := d.scanRoot(value, i)
		if err == nil {
			err = trailing(value, end)
		}
		if err != nil {
			return 0, err
		}
		d.commit(value)
		return 1, nil
	case '[':
		rows, end, err := d.rootArray(value, i, false)
		if err == nil {
			err = trailing(value, end)
		}
		if err != nil {
			return 0, err
		}
		if rows > 0 {
			if _, _, err := d.rootArray(value, i, true); err != nil {
				panic("json: a checked array failed on append: " + err.msg)
			}
		}
		return rows, nil
	case 'n':
		end, err := literal(value, i, "null")
		if err == nil {
			err = trailing(value, end)
		}
		return 0, err
	}
	end, err := skipValue(value, i, 0)
	if err == nil {
		err = trailing(value, end)
	}
	if err != nil {
		return 0, err
	}
	return 0, typeErr("expected a JSON object or an array of objects, got %s", snippet(value[i:end]))
}

func trailing(data []byte, end int) *perr {
	if j := skipWS(data, end); j < len(data) {
		return trailingErr(data, j)
	}
	return nil
}

func trailingErr(data []byte, j int) *perr {
	return syntaxErr(j, "unexpected %s after the value", describeByte(data[j]))
}

// rootArray decodes a top-level array, one row per object; null elements
// give no row, as in Flink. With emit false it only checks; with emit true
// it appends every row, which cannot fail once a check has passed.
func (d *decoder) rootArray(data []byte, i int, emit bool) (rows, end int, err *perr) {
	j, more := openBracket(data, i, ']')
	for k := 0; more; k++ {
		if j >= len(data) {
			return 0, 0, unexpected(data, j, "a value")
		}
		switch data[j] {
		case '{':
			e, err := d.scanRoot(data, j)
			if err != nil {
				return 0, 0, err.index(k)
			}
			if emit {
				d.commit(data)
			}
			rows++
			j = e
		case 'n':
			e, err := literal(data, j, "null")
			if err != nil {
				return 0, 0, err
			}
			j = e
		default:
			e, err := skipValue(data, j, 1)
			if err != nil {
				return 0, 0, err
			}
			return 0, 0, typeErr("expected a JSON object, got %s", describeValue(data[j:e])).index(k)
		}
		var ok bool
		if j, more, ok = afterMember(data, j, ']'); !ok {
			return 0, 0, unexpected(data, j, "',' or ']'")
		}
	}
	return rows, j, nil
}

func describeValue(tok []byte) string {
	if len(tok) > 0 && tok[0] == '[' {
		return "an array"
	}
	return snippet(tok)
}

// scanRoot reads the object at data[i] into the slots.
func (d *decoder) scanRoot(data []byte, i int) (int, *perr) {
	d.gen++
	if d.gen == 0 {
		// After 2^32 objects: clear the slots so that none looks current.
		for c := range d.slots {
			d.slots[c].gen = 0
		}
		d.gen = 1
	}
	d.seen = 0
	j, more := openBracket(data, i, '}')
	for next := 0; more; {
		if j >= len(data) || data[j] != '"' {
			return 0, unexpected(data, j, "a field name")
		}
		// fieldNames.match by hand, saving a call on the hottest path.
		col, end := -1, 0
		var err *perr
		if fs := &d.fields; next < len(fs.names) && fs.plain[next] {
			name := fs.names[next]
			if e := j + 1 + len(name); e < len(data) && data[e] == '"' && string(data[j+1:e]) == name {
				col, end = next, e+1
			}
		}
		if end == 0 {
			if col, end, err = d.fields.lookup(data, j, &d.key); err != nil {
				return 0, err
			}
		}
		var ok bool
		if j, ok = colon(data, end); !ok {
			return 0, unexpected(data, j, "':'")
		}
		if j >= len(data) {
			return 0, unexpected(data, j, "a value")
		}
		switch {
		case col < 0:
			j, err = skipValue(data, j, 1)
		case d.cols[col].fast == fastInt:
			// An integer of at most 18 digits, the commonest value,
			// read here by hand: inlined this case runs markedly faster
			// (measured); the other shapes did not, so they stay in
			// quick. Anything else goes to rootField.
			next = col + 1
			n, sl := d.cols[col], &d.slots[col]
			k := j
			neg := data[k] == '-'
			if neg {
				k++
			}
			start := k
			u, k := digits(0, data, k, 18)
			if k == start || (data[start] == '0' && k > start+1) || k == len(data) {
				j, err = d.rootField(col, data, j)
				break
			}
			if c := data[k]; c-'0' <= 9 || c == '.' || c == 'e' || c == 'E' {
				j, err = d.rootField(col, data, j)
				break
			}
			if neg {
				u = -u
			}
			if u < n.min || u > n.max {
				j, err = d.rootField(col, data, j)
				break
			}
			sl.sc.i = u
			if sl.gen != d.gen {
				sl.gen = d.gen
				d.seen++
			}
			sl.null = false
			j = k
		case d.quick(col, data, j) > 0:
			next = col + 1
			j = d.quickEnd
		default:
			next = col + 1
			j, err = d.rootField(col, data, j)
		}
		if err != nil {
			return 0, err
		}
		if j, more, ok = afterMember(data, j, '}'); !ok {
			return 0, unexpected(data, j, "',' or '}'")
		}
	}
	if d.seen < len(d.cols) {
		for c, n := range d.cols {
			if d.slots[c].gen != d.gen {
				if err := d.missing(n); err != nil {
					return 0, err.field(n.name)
				}
			}
		}
	}
	return j, nil
}

// fieldNames maps the field names of an object (the columns of the top
// level, the fields of a ROW) to positions.
type fieldNames struct {
	names []string
	plain []bool // names[i] is printable ASCII without quote or backslash
	index map[string]int
}

func (fn *fieldNames) add(name string) {
	fn.index[name] = len(fn.names)
	fn.names = append(fn.names, name)
	fn.plain = append(fn.plain, isPlain(name))
}

// match reads the field name at data[j] and returns its position (-1 for
// none) and the position after the name. Producers write fields in one
// order, usually the table's, so the field after the last one matched is
// tried first, by comparing bytes in place: a plain name followed by a
// quote is that name, with no scan and no hashing.
func (fn *fieldNames) match(data []byte, j, next int, scratch *[]byte) (int, int, *perr) {
	if next < len(fn.names) && fn.plain[next] {
		name := fn.names[next]
		if e := j + 1 + len(name); e < len(data) && data[e] == '"' && string(data[j+1:e]) == name {
			return next, e + 1, nil
		}
	}
	return fn.lookup(data, j, scratch)
}

// lookup is match without the guess: scan the name, then hash it.
func (fn *fieldNames) lookup(data []byte, j int, scratch *[]byte) (int, int, *perr) {
	end, escaped, err := scanString(data, j)
	if err != nil {
		return 0, 0, err
	}
	key := data[j+1 : end-1]
	if escaped {
		*scratch = unescape((*scratch)[:0], key)
		key = *scratch
	}
	if c, ok := fn.index[string(key)]; ok {
		return c, end, nil
	}
	return -1, end, nil
}

// quick reads the value at data[j] of column col into its slot if it has
// one of the shapes that make up nearly every value: a decimal of up to 18
// digits and no more fractional digits than the scale, a string of plain
// ASCII (scanRoot reads integers itself). It returns 0, and leaves the value
// to rootField, otherwise. This is rootField, parseScalar and their callees
// for the common case in one call: Go spills every live register around a
// call, and the hot path is mostly calls otherwise.
func (d *decoder) quick(col int, data []byte, j int) int {
	n := d.cols[col]
	sl := &d.slots[col]
	switch n.fast {
	case fastDecimal:
		if c := data[j]; c != '-' && c-'0' > 9 {
			return 0
		}
		v, end, ok := n.quickDecimal(data, j)
		if !ok {
			return 0
		}
		sl.sc.d = decimal128.FromI64(v)
		d.quickEnd = end
	case fastString:
		if data[j] != '"' {
			return 0
		}
		k := j + 1
		for k < len(data) && plain[data[k]] {
			k++
		}
		if k == len(data) || data[k] != '"' {
			return 0
		}
		sl.sc.b = data[j+1 : k]
		d.quickEnd = k + 1
	default:
		return 0
	}
	if sl.gen != d.gen {
		sl.gen = d.gen
		d.seen++
	}
	sl.null = false
	return 1
}

// rootField reads the value at data[j] of column col into its slot.
func (d *decoder) rootField(col int, data []byte, j int) (int, *perr) {
	n := d.cols[col]
	sl := &d.slots[col]
	if sl.gen != d.gen {
		sl.gen = d.gen
		d.seen++
	}
	var end int
	var err *perr
	if n.scalar {
		var null bool
		end, null, err = n.parseScalar(data, j, &sl.sc, d.cfg.iso)
		if err == nil {
			if !null || !n.notNull {
				sl.null = null
				return end, nil
			}
			err = nullErr(n)
		}
	} else {
		end, err = d.walk(n, data, j, false)
		if err == nil {
			sl.null = false
			sl.start = j
			return end, nil
		}
	}
	if !d.recoverable(n, err) {
		return 0, err.field(n.name)
	}
	sl.null = true
	return skipValue(data, j, 1)
}

// recoverable reports whether json.ignore-parse-errors turns the failure of
// a field of type n into a null: the value must be JSON, and the field must
// admit null (otherwise the failure moves up to the enclosing field, and at
// the top the value is skipped).
func (d *decoder) recoverable(n *node, err *perr) bool {
	return d.cfg.ignore && !err.syntax && !n.notNull
}

func (d *decoder) missing(n *node) *perr {
	if d.cfg.failOnMissing {
		return typeErr("expected %s, got nothing (the field is missing and 'json.fail-on-missing-field' is true)", n.t)
	}
	if n.notNull {
		return typeErr("expected %s, got nothing (the field is missing)", n.t)
	}
	return nil
}

func nullErr(n *node) *perr {
	return typeErr("expected %s, got null", n.t)
}

// commit appends the slots of the object scanRoot just read.
func (d *decoder) commit(data []byte) {
	for c, n := range d.cols {
		sl := &d.slots[c]
		switch {
		case sl.gen != d.gen || sl.null:
			n.b.AppendNull()
		case n.scalar:
			// The common kinds by hand, where the builder has room: a call
			// to appendScalar per column costs more than the append.
			switch n.kind {
			case types.BigInt:
				if b := n.i64; b.Len() < b.Cap() {
					b.UnsafeAppend(sl.sc.i)
					continue
				}
			case types.Int:
				if b := n.i32; b.Len() < b.Cap() {
					b.UnsafeAppend(int32(sl.sc.i))
					continue
				}
			case types.Decimal:
				if b := n.dec; b.Len() < b.Cap() {
					b.UnsafeAppend(sl.sc.d)
					continue
				}
			case types.Char, types.Varchar:
				if b := n.bb; b.Len() < b.Cap() && b.DataCap()-b.DataLen() >= len(sl.sc.b) {
					b.UnsafeAppend(sl.sc.b)
					continue
				}
			}
			n.appendScalar(&sl.sc)
		default:
			if _, err := d.walk(n, data, sl.start, true); err != nil {
				panic("json: a checked value failed on append: " + err.msg)
			}
		}
	}
}

// walk decodes the value at data[i] for n, appending it when emit is set
// and only checking it otherwise. With emit set the value must have passed
// a check: then walk cannot fail, except on a scalar that
// json.ignore-parse-errors turns into null.
func (d *decoder) walk(n *node, data []byte, i int, emit bool) (int, *perr) {
	if i >= len(data) {
		return 0, unexpected(data, i, "a value")
	}
	if data[i] == 'n' {
		end, err := literal(data, i, "null")
		if err != nil {
			return 0, err
		}
		if n.notNull {
			return 0, nullErr(n)
		}
		if emit {
			n.b.AppendNull()
		}
		return end, nil
	}
	if n.scalar {
		end, _, err := n.parseScalar(data, i, &n.sc, d.cfg.iso)
		if err != nil {
			return 0, err
		}
		if emit {
			n.appendScalar(&n.sc)
		}
		return end, nil
	}
	switch n.kind {
	case types.Array:
		return d.walkArray(n, data, i, emit)
	case types.Map:
		return d.walkMap(n, data, i, emit)
	}
	return d.walkRow(n, data, i, emit)
}

// wrongShape is the error for a value that is not the array or object a
// nested type needs.
func wrongShape(n *node, data []byte, i int) *perr {
	end, err := skipValue(data, i, 1)
	if err != nil {
		return err
	}
	return n.mismatch(data[i:end], "")
}

func (d *decoder) walkArray(n *node, data []byte, i int, emit bool) (int, *perr) {
	if data[i] != '[' {
		return 0, wrongShape(n, data, i)
	}
	if emit {
		n.list.Append(true)
	}
	j, more := openBracket(data, i, ']')
	for k := 0; more; k++ {
		end, err := d.walk(n.elem, data, j, emit)
		if err != nil {
			return 0, err.index(k)
		}
		var ok bool
		if j, more, ok = afterMember(data, end, ']'); !ok {
			return 0, unexpected(data, j, "',' or ']'")
		}
	}
	return j, nil
}

// walkMap reads a JSON object as a MAP: each key, a JSON string, is read as
// the key type reads a string value (so MAP<INT, ...> takes {"1": ...}).
// Entries are kept as written, duplicates included; an Arrow map allows it.
func (d *decoder) walkMap(n *node, data []byte, i int, emit bool) (int, *perr) {
	if data[i] != '{' {
		return 0, wrongShape(n, data, i)
	}
	if emit {
		n.mp.Append(true)
	}
	j, more := openBracket(data, i, '}')
	k := n.key
	for more {
		if j >= len(data) || data[j] != '"' {
			return 0, unexpected(data, j, "a field name")
		}
		end, escaped, err := scanString(data, j)
		if err != nil {
			return 0, err
		}
		content := data[j+1 : end-1]
		if escaped {
			k.esc = unescape(k.esc[:0], content)
			content = k.esc
		}
		if why, ok := k.fromString(content, &k.sc, d.cfg.iso); !ok {
			return 0, k.mismatch(data[j:end], why).key(string(content))
		}
		if emit {
			k.appendScalar(&k.sc)
		}
		var ok bool
		if j, ok = colon(data, end); !ok {
			return 0, unexpected(data, j, "':'")
		}
		if end, err = d.walk(n.val, data, j, emit); err != nil {
			return 0, err.key(string(content))
		}
		if j, more, ok = afterMember(data, end, '}'); !ok {
			return 0, unexpected(data, j, "',' or '}'")
		}
	}
	return j, nil
}

// walkRow reads a JSON object as a ROW, with the rules of the top level:
// names match exactly, unknown fields are ignored, a field given twice takes
// its last value (every occurrence must fit), a missing one is null.
//
// To append, fields must go to the builders in the ROW's order, once each.
// While the object's fields come in that order they are appended as they
// are read; from the first one out of order on, the rest are located and
// appended at the end. An object with a field given twice, which the check
// notes, is located in full first, so that the last occurrence wins.
func (d *decoder) walkRow(n *node, data []byte, i int, emit bool) (int, *perr) {
	if data[i] != '{' {
		return 0, wrongShape(n, data, i)
	}
	n.gen++
	if n.gen == 0 {
		clear(n.seen)
		n.gen = 1
	}
	emitted := 0               // fields appended in order, as read
	deferred := n.dup == d.gen // append from spans only
	if emit {
		n.st.Append(true)
	}
	j, more := openBracket(data, i, '}')
	for next := 0; more; {
		if j >= len(data) || data[j] != '"' {
			return 0, unexpected(data, j, "a field name")
		}
		f, end, err := n.names.match(data, j, next, &d.key)
		if err != nil {
			return 0, err
		}
		var ok bool
		if j, ok = colon(data, end); !ok {
			return 0, unexpected(data, j, "':'")
		}
		switch {
		case f < 0:
			j, err = skipValue(data, j, 1)
		case emit && !deferred && f == emitted:
			n.seen[f] = n.gen
			j = d.emitField(n.fields[f], data, j)
			emitted++
		case emit:
			deferred = true
			n.seen[f] = n.gen
			n.spans[f] = j
			j, err = skipValue(data, j, 1)
		default:
			fn := n.fields[f]
			if n.seen[f] == n.gen {
				n.dup = d.gen
			}
			n.seen[f] = n.gen
			var e int
			e, err = d.walk(fn, data, j, false)
			if err != nil {
				if !d.recoverable(fn, err) {
					return 0, err.field(fn.name)
				}
				e, err = skipValue(data, j, 1)
			}
			j = e
		}
		if err != nil {
			return 0, err
		}
		if f >= 0 {
			next = f + 1
		}
		if j, more, ok = afterMember(data, j, '}'); !ok {
			return 0, unexpected(data, j, "',' or '}'")
		}
	}
	if !emit {
		for f, fn := range n.fields {
			if n.seen[f] != n.gen {
				if err := d.missing(fn); err != nil {
					return 0, err.field(fn.name)
				}
			}
		}
		return j, nil
	}
	for f := emitted; f < len(n.fields); f++ {
		if n.seen[f] != n.gen {
			n.fields[f].b.AppendNull()
			continue
		}
		d.emitField(n.fields[f], data, n.spans[f])
	}
	return j, nil
}

// emitField appends the checked value at data[s] for field fn of a ROW and
// returns the position after it. Under json.ignore-parse-errors the check
// may have turned the value into null, and only a new check tells: for a
// nested value it must come first, since appending cannot be undone half
// way; a scalar fails before it appends anything.
func (d *decoder) emitField(fn *node, data []byte, s int) int {
	if d.cfg.ignore && !fn.scalar {
		if _, err := d.walk(fn, data, s, false); err != nil {
			fn.b.AppendNull()
			return mustSkip(data, s)
		}
	}
	end, err := d.walk(fn, data, s, true)
	if err != nil {
		if !d.cfg.ignore || !fn.scalar {
			panic("json: a checked value failed on append: " + err.msg)
		}
		fn.b.AppendNull()
		return mustSkip(data, s)
	}
	return end
}

// mustSkip skips a value that a check has already passed.
func mustSkip(data []byte, s int) int {
	end, err := skipValue(data, s, 1)
	if err != nil {
		panic("json: a checked value failed to scan: " + err.msg)
	}
	return end
}
