package debezium

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/format/json"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Format is the 'debezium-json' format. It registers itself in init.
type Format struct{}

var (
	_ table.ChangelogFormat = Format{}
	_ table.EncodingFormat  = Format{}
)

func init() { table.RegisterFormat(Format{}) }

// Name implements table.Format.
func (Format) Name() string { return Name }

// Options implements table.Format: the debezium-json.* keys.
func (Format) Options() *options.Set { return Options }

// Changelog implements table.ChangelogFormat: a value is a change of the
// table, with a kind, not a row to append.
func (Format) Changelog() {}

// rowOptions are the json format's options for the rows, or an error that
// names this format.
func rowOptions(opts options.Values) (options.Values, error) {
	v, err := jsonOptions(opts)
	if err != nil {
		return v, fmt.Errorf("format '%s': %w", Name, err)
	}
	return v, nil
}

// NewDecoder implements table.Format: the columns are those of the rows in
// "before" and "after", which the json format reads, so every type it
// reads can be a column.
func (Format) NewDecoder(cols []types.Column, opts options.Values) (table.Decoder, error) {
	jopts, err := rowOptions(opts)
	if err != nil {
		return nil, err
	}
	rows, err := json.Format{}.NewDecoder(cols, jopts)
	if err != nil {
		return nil, fmt.Errorf("format '%s': %w", Name, err)
	}
	d := &decoder{rows: rows, ignore: opts.Bool(OptIgnoreParseErrors), schema: opts.Bool(OptSchemaInclude)}
	if d.schema {
		d.prefix = "payload."
	}
	return d, nil
}

// decoder is the table.ChangeDecoder of debezium-json.
type decoder struct {
	rows   table.Decoder // the json format's, over the table's columns
	ignore bool
	schema bool   // values are {"schema": ..., "payload": <change>}
	prefix string // of the paths in errors: "payload." with a schema
	c      change
	buf    []byte // an update's two rows as one JSON array
}

var _ table.ChangeDecoder = (*decoder)(nil)

// part is where one field of a change is in the value.
type part struct {
	at, end int  // the value's extent; end is 0 when the field is absent
	escaped bool // a string with escapes
}

func (p part) absent() bool { return p.end == 0 }

// change is what the scan of a value found.
type change struct {
	value             []byte
	before, after, op part
	// payload is the "payload" field at the top of the value: the change
	// itself with a schema, a hint that one is expected without.
	payload part
}

// member notes where the fields of a change are; it is the visit of
// scanObject over the change's object.
func (c *change) member(name []byte, escaped bool, at, depth int) (int, *scanErr) {
	var p *part
	if escaped {
		p = c.lookup(unquote(name))
	} else {
		switch string(name) {
		case "before":
			p = &c.before
		case "after":
			p = &c.after
		case "op":
			p = &c.op
		case "payload":
			p = &c.payload
		}
	}
	if p == nil {
		return skipValue(c.value, at, depth)
	}
	if at < len(c.value) && c.value[at] == '"' {
		end, esc, err := scanString(c.value, at)
		*p = part{at: at, end: end, escaped: esc}
		return end, err
	}
	end, err := skipValue(c.value, at, depth)
	*p = part{at: at, end: end}
	return end, err
}

func (c *change) lookup(name string) *part {
	switch name {
	case "before":
		return &c.before
	case "after":
		return &c.after
	case "op":
		return &c.op
	case "payload":
		return &c.payload
	}
	return nil
}

// payloadMember reads the top of a value with a schema: the change is the
// object in "payload" (the last one, if it appears twice).
func (c *change) payloadMember(name []byte, escaped bool, at, depth int) (int, *scanErr) {
	if !(escaped && unquote(name) == "payload" || !escaped && string(name) == "payload") {
		return skipValue(c.value, at, depth)
	}
	c.before, c.after, c.op = part{}, part{}, part{}
	var end int
	var err *scanErr
	if at < len(c.value) && c.value[at] == '{' {
		end, err = scanObject(c.value, at, depth, c.member)
	} else {
		end, err = skipValue(c.value, at, depth)
	}
	c.payload = part{at: at, end: end}
	return end, err
}

// scan reads value into d.c; none reports a value that holds no change
// (JSON null, or a null payload).
func (d *decoder) scan(value []byte) (none bool, err *scanErr) {
	d.c = change{value: value}
	i := skipWS(value, 0)
	if i >= len(value) {
		return false, syntaxErr(i, "no value, only whitespace")
	}
	var end int
	switch value[i] {
	case '{':
		visit := d.c.member
		if d.schema {
			visit = d.c.payloadMember
		}
		end, err = scanObject(value, i, 0, visit)
	case 'n':
		end, err = skipValue(value, i, 0) // the literal null
		none = true
	default:
		if end, err = skipValue(value, i, 0); err == nil {
			err = trailing(value, end)
		}
		if err == nil {
			err = &scanErr{msg: fmt.Sprintf("expected a Debezium change, a JSON object with \"op\", got %s", snippet(value[i:end]))}
		}
		return false, err
	}
	if err == nil {
		err = trailing(value, end)
	}
	if err != nil || none || !d.schema {
		return none, err
	}
	p := d.c.payload
	switch {
	case p.absent():
		return false, &scanErr{field: "payload", msg: fmt.Sprintf("missing: with '%s' = 'true' a value is {\"schema\": ..., \"payload\": <the change>}, "+
			"as Kafka Connect's JsonConverter writes it with 'schemas.enable' = 'true'; for values that are the change itself, set '%s' = 'false'",
			OptSchemaInclude, OptSchemaInclude)}
	case value[p.at] == 'n':
		return true, nil
	case value[p.at] != '{':
		return false, &scanErr{field: "payload", msg: fmt.Sprintf("expected the change, a JSON object, got %s", snippet(value[p.at:p.end]))}
	}
	return false, nil
}

func trailing(data []byte, end int) *scanErr {
	if j := skipWS(data, end); j < len(data) {
		return syntaxErr(j, "unexpected %s after the value", describeByte(data[j]))
	}
	return nil
}

// Kinds of change: the values of "op" kshare reads.
const (
	opCreate = 'c'
	opRead   = 'r'
	opUpdate = 'u'
	opDelete = 'd'
)

const knownOps = `"c" (create), "r" (read, in a snapshot), "u" (update) or "d" (delete)`

// operation checks the change's "op" and the rows it needs, and returns
// the op.
func (d *decoder) operation() (byte, *scanErr) {
	c := &d.c
	v := c.value
	if c.op.absent() {
		msg := `missing: a Debezium change names its operation in "op", ` + knownOps
		if !d.schema && !c.payload.absent() {
			msg += fmt.Sprintf(`; this value has a "payload" at its top, as Kafka Connect writes a value with its schema: set '%s' = 'true'`, OptSchemaInclude)
		}
		return 0, d.errAt("op", msg)
	}
	if v[c.op.at] != '"' {
		return 0, d.errAt("op", fmt.Sprintf("expected a string, %s, got %s", knownOps, snippet(v[c.op.at:c.op.end])))
	}
	content := v[c.op.at+1 : c.op.end-1]
	op := string(content)
	if c.op.escaped {
		op = unquote(content)
	}
	var need part
	var which, what string
	switch op {
	case "c", "r":
		need, which, what = c.after, "after", "the row the change inserts"
	case "u":
		need, which, what = c.before, "before", "the row before the update"
	case "d":
		need, which, what = c.before, "before", "the row the change deletes"
	default:
		msg := fmt.Sprintf("unknown operation %s: expected %s", snippet(v[c.op.at:c.op.end]), knownOps)
		if op == "t" {
			msg += fmt.Sprintf(`; "t" is a TRUNCATE, which a changelog of rows cannot hold: have Debezium skip it ('skipped.operations' = 't'), or set '%s' = 'true' to skip it here`, OptIgnoreParseErrors)
		}
		return 0, d.errAt("op", msg)
	}
	for _, f := range []struct {
		p    part
		name string
	}{{c.before, "before"}, {c.after, "after"}} {
		if !f.p.absent() && v[f.p.at] != '{' && v[f.p.at] != 'n' {
			return 0, d.errAt(f.name, fmt.Sprintf("expected a row, a JSON object, or null, got %s", snippet(v[f.p.at:f.p.end])))
		}
	}
	if err := d.needRow(need, which, what, op); err != nil {
		return 0, err
	}
	if op == "u" {
		if err := d.needRow(c.after, "after", "the row after the update", op); err != nil {
			return 0, err
		}
	}
	return op[0], nil
}

// needRow checks that the change's field which holds a row.
func (d *decoder) needRow(p part, which, what, op string) *scanErr {
	if !p.absent() && d.c.value[p.at] == '{' {
		return nil
	}
	msg := fmt.Sprintf("expected %s, a JSON object, got null", what)
	if p.absent() {
		msg = fmt.Sprintf("missing: expected %s, a JSON object", what)
	}
	if which == "before" {
		// Debezium writes the old row of an update or a delete only as
		// much as the source database logs it.
		msg += fmt.Sprintf(`: Debezium writes the old row of a %q change only when the source table logs it whole; `+
			`in PostgreSQL run ALTER TABLE <table> REPLICA IDENTITY FULL on the source table (in MySQL, binlog_row_image = FULL), `+
			`or set '%s' = 'true' to skip such changes`, op, OptIgnoreParseErrors)
	}
	return d.errAt(which, msg)
}

func (d *decoder) errAt(field, msg string) *scanErr {
	return &scanErr{field: d.prefix + field, msg: msg}
}

// fail turns a problem of the envelope into the error Decode returns.
func (d *decoder) fail(err *scanErr) error {
	de := &table.DecodeError{Field: err.field, Msg: err.msg}
	if d.ignore {
		return fmt.Errorf("%w: %w", table.ErrSkipped, de)
	}
	return de
}

// Decode implements table.Decoder: the rows of the change, without their
// kinds.
func (d *decoder) Decode(value []byte, cols []array.Builder) (int, error) {
	n, _, err := d.decode(value, cols)
	return n, err
}

// DecodeChanges implements table.ChangeDecoder: "c" and "r" give a +I row,
// "u" a -U and a +U row, "d" a -D row, and a tombstone nothing.
func (d *decoder) DecodeChanges(value []byte, cols []array.Builder, kinds []flow.RowKind) (int, []flow.RowKind, error) {
	n, op, err := d.decode(value, cols)
	if err != nil || n == 0 {
		return 0, kinds, err
	}
	switch op {
	case opUpdate:
		kinds = append(kinds, flow.KindUpdateBefore, flow.KindUpdateAfter)
	case opDelete:
		kinds = append(kinds, flow.KindDelete)
	default:
		kinds = append(kinds, flow.KindInsert)
	}
	return n, kinds, nil
}

// decode appends the rows of the change in value and returns how many and
// its op.
func (d *decoder) decode(value []byte, cols []array.Builder) (int, byte, error) {
	if len(value) == 0 {
		// A Kafka tombstone, which Debezium writes after a delete so that
		// a compacted topic can drop the key.
		return 0, 0, nil
	}
	none, serr := d.scan(value)
	if serr == nil && !none {
		var op byte
		if op, serr = d.operation(); serr == nil {
			return d.rowsOf(op, cols)
		}
	}
	if serr != nil {
		return 0, 0, d.fail(serr)
	}
	return 0, 0, nil
}

// rowsOf appends the rows of a checked change with the json format's
// decoder, which appends all of them or nothing.
func (d *decoder) rowsOf(op byte, cols []array.Builder) (int, byte, error) {
	c := &d.c
	v := c.value
	var (
		n, want int
		err     error
	)
	switch op {
	case opUpdate:
		// Both rows in one call, so that a bad "after" leaves no "before"
		// behind: the json format reads a top-level array all or nothing.
		d.buf = append(d.buf[:0], '[')
		d.buf = append(d.buf, v[c.before.at:c.before.end]...)
		d.buf = append(d.buf, ',')
		d.buf = append(d.buf, v[c.after.at:c.after.end]...)
		d.buf = append(d.buf, ']')
		want = 2
		n, err = d.rows.Decode(d.buf, cols)
	case opDelete:
		want = 1
		n, err = d.rows.Decode(v[c.before.at:c.before.end], cols)
	default:
		want = 1
		n, err = d.rows.Decode(v[c.after.at:c.after.end], cols)
	}
	if err != nil {
		return 0, 0, d.rowErr(err, op)
	}
	if n != want {
		panic(fmt.Sprintf("debezium: the json format decoded %d rows from a change that holds %d", n, want))
	}
	return n, op, nil
}

// rowErr gives an error of the json format about a row the path of the
// field in the change: "price" of the row in "after" is "after.price", and
// of an update's rows (decoded as an array) "[0].price" is "before.price".
func (d *decoder) rowErr(err error, op byte) error {
	var de *table.DecodeError
	if !errors.As(err, &de) {
		return err
	}
	field := de.Field
	switch {
	case op == opUpdate && strings.HasPrefix(field, "[0]"):
		field = "before" + field[len("[0]"):]
	case op == opUpdate && strings.HasPrefix(field, "[1]"):
		field = "after" + field[len("[1]"):]
	default:
		which := "after"
		if op == opDelete || op == opUpdate {
			which = "before"
		}
		if field == "" || field[0] == '[' {
			field = which + field
		} else {
			field = which + "." + field
		}
	}
	out := &table.DecodeError{Field: d.prefix + field, Msg: de.Msg}
	if errors.Is(err, table.ErrSkipped) {
		return fmt.Errorf("%w: %w", table.ErrSkipped, out)
	}
	return out
}

// NewEncoder implements table.EncodingFormat: the rows are written by the
// json format, inside envelopes without a schema.
func (Format) NewEncoder(cols []types.Column, opts options.Values) (table.Encoder, error) {
	if opts.Bool(OptSchemaInclude) {
		return nil, fmt.Errorf("format '%s': kshare writes no schema, only the change itself; '%s' = 'true' is for reading values that carry one "+
			"(Kafka Connect's JsonConverter with 'schemas.enable'): set it to 'false' on a table kshare writes", Name, OptSchemaInclude)
	}
	jopts, err := rowOptions(opts)
	if err != nil {
		return nil, err
	}
	rows, err := json.Format{}.NewEncoder(cols, jopts)
	if err != nil {
		return nil, fmt.Errorf("format '%s': %w", Name, err)
	}
	return &encoder{rows: rows}, nil
}

// encoder is the table.ChangeEncoder of debezium-json.
type encoder struct {
	rows table.Encoder // the json format's
}

var _ table.UpdateEncoder = (*encoder)(nil)

// Encode implements table.Encoder: the row as an insert.
func (e *encoder) Encode(dst []byte, cols []arrow.Array, row int) ([]byte, bool, error) {
	return e.EncodeChange(dst, cols, row, flow.KindInsert)
}

// The parts of the envelopes, as Flink writes them: an insert or the new
// row of an update is a create, a delete or the old row of an update a
// delete.
const (
	createHead = `{"before":null,"after":`
	createTail = `,"op":"c"}`
	deleteHead = `{"before":`
	deleteTail = `,"after":null,"op":"d"}`
)

// EncodeChange implements table.ChangeEncoder.
func (e *encoder) EncodeChange(dst []byte, cols []arrow.Array, row int, kind flow.RowKind) ([]byte, bool, error) {
	var head, tail string
	switch kind {
	case flow.KindInsert, flow.KindUpdateAfter:
		head, tail = createHead, createTail
	case flow.KindUpdateBefore, flow.KindDelete:
		head, tail = deleteHead, deleteTail
	default:
		return dst, false, &table.EncodeError{Msg: fmt.Sprintf("unknown kind of change %d", kind)}
	}
	out, err := e.row(append(dst, head...), cols, row)
	if err != nil {
		return dst, false, err
	}
	return append(out, tail...), false, nil
}

// EncodeUpdate implements table.UpdateEncoder: an update as Debezium writes
// it, one value with the row before and the row after, so that a reader
// sees an update, not a delete and an insert. (Flink writes the two rows
// as a "d" and a "c"; both read back, but only "u" reads back as the
// update it was.)
func (e *encoder) EncodeUpdate(dst []byte, cols []arrow.Array, before, after int) ([]byte, error) {
	out, err := e.row(append(dst, `{"before":`...), cols, before)
	if err == nil {
		out, err = e.row(append(out, `,"after":`...), cols, after)
	}
	if err != nil {
		return dst, err
	}
	return append(out, `,"op":"u"}`...), nil
}

// row appends the JSON object of row to dst.
func (e *encoder) row(dst []byte, cols []arrow.Array, row int) ([]byte, error) {
	out, null, err := e.rows.Encode(dst, cols, row)
	if err == nil && null {
		// The json format writes every row as an object; a format that
		// did not could not stand inside an envelope.
		err = &table.EncodeError{Msg: "the row gave no JSON object to put in the envelope"}
	}
	return out, err
}
