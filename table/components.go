package table

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// A Connector makes table sources of one kind ('connector' = 'name'). It
// registers itself with RegisterConnector in an init function.
type Connector interface {
	// Name is the value of the 'connector' key.
	Name() string
	// Options are the keys the connector accepts. The format's keys are
	// declared by the format.
	Options() *options.Set
	// Metadata lists the metadata keys a column may read (METADATA FROM 'key').
	Metadata() []MetadataKey
	// NewSource binds a validated table to the connector. It performs no
	// I/O: connecting happens in Source.Open.
	NewSource(t *Bound) (flow.Source, error)
}

// MetadataKey is one piece of record metadata a connector can fill.
type MetadataKey struct {
	Key         string
	Type        *types.DataType
	Description string
}

// A Format decodes record values into rows ('format' = 'name'); one that
// also writes them is an EncodingFormat. It registers itself with
// RegisterFormat in an init function.
type Format interface {
	// Name is the value of the 'format' key.
	Name() string
	// Options are the format's keys, namespaced by its name ('json.*').
	Options() *options.Set
	// NewDecoder checks that the format can decode into cols (the table's
	// physical columns, in table order) with opts, and returns a decoder.
	// It performs no I/O. Each goroutine that decodes needs its own Decoder.
	NewDecoder(cols []types.Column, opts options.Values) (Decoder, error)
}

// A Decoder turns record values into rows. It is not safe for concurrent use.
type Decoder interface {
	// Decode appends the rows held in value to cols, one builder per physical
	// column in table order, and returns how many rows it appended (a JSON
	// array value gives one row per element). It appends every field of every
	// row of the value or nothing: when it returns an error, each builder
	// holds what it held before the call.
	//
	// A value the format's options say to skip (json.ignore-parse-errors on
	// a value that is not JSON) returns 0 and an error wrapping ErrSkipped.
	// Other errors are a *DecodeError.
	Decode(value []byte, cols []array.Builder) (int, error)
}

// A ChangelogFormat is a Format whose values are changes of a table, not
// rows to append ('debezium-json'): each decoded row has a RowKind, and an
// encoder writes a row with its kind. A table in such a format is
// updating: its rows are a changelog, which only a ChangelogSink takes,
// and which must be read in the order it was written (a 'kafka' table, not
// a share group's). It is a capability found by type assertion; its
// Decoders are ChangeDecoders and, if it writes, its Encoders
// ChangeEncoders.
type ChangelogFormat interface {
	Format
	// Changelog marks the format.
	Changelog()
}

// A ChangelogConnector reads its tables as changelogs whatever their format
// ('upsert-kafka': a compacted topic read as the latest row of each key,
// each new value an update and a record without one a delete). Its streams'
// batches carry Kinds. It is a capability found by type assertion.
type ChangelogConnector interface {
	Connector
	// ReadsChanges marks the connector.
	ReadsChanges()
}

// Changelog reports whether b's rows are changes of a table rather than
// rows of their own, and what makes them so, for messages: "format
// 'debezium-json'" or "connector 'upsert-kafka'".
func (b *Bound) Changelog() (what string, ok bool) {
	if f, ok := b.Format.(ChangelogFormat); ok {
		return "format '" + f.Name() + "'", true
	}
	if c, ok := b.Connector.(ChangelogConnector); ok {
		return "connector '" + c.Name() + "'", true
	}
	return "", false
}

// A ChangeDecoder is a ChangelogFormat's Decoder: Decode appends the rows
// a value holds and DecodeChanges says, besides, what kind of change each
// is.
type ChangeDecoder interface {
	Decoder
	// DecodeChanges is Decode, and appends to kinds the kind of each row
	// it appended, in order; it returns the extended kinds. A change may
	// give two rows (an update: -U with the row before, +U with the row
	// after) or none (a value that holds no change, such as the tombstone
	// a CDC tool writes after a delete: 0 rows, no error). On an error
	// kinds is returned as it was given.
	DecodeChanges(value []byte, cols []array.Builder, kinds []flow.RowKind) (n int, out []flow.RowKind, err error)
}

// A ChangeEncoder is a ChangelogFormat's Encoder: EncodeChange writes a row
// as a change of the given kind (Encode writes it as an insert).
type ChangeEncoder interface {
	Encoder
	EncodeChange(dst []byte, cols []arrow.Array, row int, kind flow.RowKind) (out []byte, null bool, err error)
}

// An UpdateEncoder is a ChangeEncoder that writes an update, a -U row and
// the +U row right after it, as one value (debezium-json's "u"), so that a
// reader sees an update rather than a delete and an insert.
type UpdateEncoder interface {
	ChangeEncoder
	EncodeUpdate(dst []byte, cols []arrow.Array, before, after int) (out []byte, err error)
}

// An EncodingFormat is a Format that also writes values: the sinks' side.
// It is a capability found by type assertion (NewEncoder below), so that a
// format that only reads stays a Format.
type EncodingFormat interface {
	Format
	// NewEncoder checks that the format can write cols with opts, and
	// returns an encoder. It performs no I/O. Each goroutine that encodes
	// needs its own Encoder.
	//
	// cols are the columns one value holds, in the order the value writes
	// them: a table's physical columns for a record's value, or the
	// 'key.fields' columns for its key (Flink's 'key.format'). An encoder
	// is built over exactly the columns it writes rather than over the
	// whole table with a list of indexes, so that the key and the value are
	// the same kind of encoder and a format checks (raw: exactly one
	// column) what it will actually write.
	NewEncoder(cols []types.Column, opts options.Values) (Encoder, error)
}

// NewEncoder is f's encoder of cols, or an error saying that f cannot
// write when it is not an EncodingFormat.
func NewEncoder(f Format, cols []types.Column, opts options.Values) (Encoder, error) {
	ef, ok := f.(EncodingFormat)
	if !ok {
		return nil, fmt.Errorf("format '%s' can read but not write values", f.Name())
	}
	return ef.NewEncoder(cols, opts)
}

// An Encoder turns rows into record values, the mirror of a Decoder. It is
// not safe for concurrent use.
type Encoder interface {
	// Encode appends the value of row row of cols to dst and returns the
	// extended buffer; cols hold one array per column the encoder was made
	// for, in that order (the columns of a record batch, or the key
	// columns picked out of it). Appending to a caller's buffer lets a sink
	// reuse its memory: the hot path allocates nothing per row.
	//
	// null reports a row whose value is no value at all (raw's NULL: a
	// Kafka tombstone, which the caller sends as a nil value); out is then
	// dst unchanged. Otherwise out is never nil, even for an empty value
	// appended to a nil dst, so that a sink can pass it on as it is. On an
	// error out is dst unchanged too, and the error is an *EncodeError.
	Encode(dst []byte, cols []arrow.Array, row int) (out []byte, null bool, err error)
}

// EncodeError says what in a row a format cannot write: a DATE beyond year
// 9999, a character the charset lacks. The sink adds which row it was.
type EncodeError struct {
	// Field is the path of the value at fault ("items[2].sku"), as in
	// DecodeError.
	Field string
	Msg   string
}

func (e *EncodeError) Error() string { return fieldMessage(e.Field, e.Msg) }

// ErrSkipped marks a value that the format's options say to skip and count,
// not to fail on.
var ErrSkipped = errors.New("value skipped")

// DecodeError says what in a value did not fit the table. The connector adds
// the record's coordinates (topic, partition, offset) around it.
type DecodeError struct {
	// Field is the path of the field ("quantity", "items[2].sku"); empty when
	// the value as a whole is at fault.
	Field string
	// Msg says what was found and what was expected: `expected INT, got "two"`.
	Msg string
}

func (e *DecodeError) Error() string { return fieldMessage(e.Field, e.Msg) }

func fieldMessage(field, msg string) string {
	if field == "" {
		return msg
	}
	return fmt.Sprintf("field %q: %s", field, msg)
}

// Bound is a table definition whose options have been parsed against its
// connector's and format's declarations.
type Bound struct {
	Def       *Definition
	Connector Connector
	Format    Format
	// OwnFormat is the 'format' of a FormatChooser's table when it is one
	// of the connector's own (Format is then nil).
	OwnFormat string
	// Options holds the connector's and the format's options, by canonical key.
	Options options.Values
}

// A Sinker is a Connector that also writes tables: INSERT INTO's target.
// It is a capability found by type assertion (NewSink below), so that a
// connector that only reads stays a Connector.
type Sinker interface {
	Connector
	// NewSink binds a validated table to the connector's write side. It
	// performs no I/O: connecting and checking the destination happen in
	// Sink.Open.
	NewSink(t *Bound) (flow.Sink, error)
}

// A FormatFree connector writes rows itself, in a form of its own (print's
// +I[1, a]), or not at all (blackhole): its tables take no 'format' key,
// and Bind refuses one as a key the connector does not take. It is a
// capability found by type assertion.
type FormatFree interface {
	Connector
	// TakesNoFormat marks the connector; it does nothing.
	TakesNoFormat()
}

// A FormatChooser connector takes one of its own list of formats (the
// 'filesystem' connector: csv, json, parquet), some of which it writes
// itself with no options of their own (csv and parquet, file formats that
// are not record formats). Bind refuses a 'format' outside Formats, binds
// a registered one as usual (its options join the table's) and names one
// of OwnFormats in Bound.OwnFormat, leaving Bound.Format nil. It is a
// capability found by type assertion.
type FormatChooser interface {
	Connector
	// Formats lists the 'format' values the connector takes, sorted.
	Formats() []string
	// OwnFormats lists those of Formats the connector writes itself.
	OwnFormats() []string
}

// A KeyedConnector takes a PRIMARY KEY ... NOT ENFORCED on its tables: its
// sink writes by the key (the 'jdbc' connector upserts and deletes by
// it). Bind refuses a key on a table of any other connector, as Flink's
// connectors that cannot honour a key do, rather than let a reader believe
// the key means something. It is a capability found by type assertion.
type KeyedConnector interface {
	Connector
	// TakesPrimaryKey marks the connector; it does nothing.
	TakesPrimaryKey()
}

// ErrCannotWrite is returned by NewSink for a table whose connector only
// reads.
var ErrCannotWrite = errors.New("connector cannot write")

// NewSink is t's sink, or an error wrapping ErrCannotWrite naming the
// connector when it has no write side.
func NewSink(t *Bound) (flow.Sink, error) {
	s, ok := t.Connector.(Sinker)
	if !ok {
		return nil, fmt.Errorf("%w: table '%s' has connector '%s', which can read but not write (INSERT INTO needs a table whose connector writes: 'kafka', 'filesystem', 'jdbc', 'print' or 'blackhole')",
			ErrCannotWrite, options.Cut(t.Def.Name), t.Connector.Name())
	}
	return s.NewSink(t)
}

// A RecordIdentifier is a connector whose source batches tell each row's
// record with its share group (their Acker is a RowOrigins and Origin.Group
// is set): the only source an OriginWriter can be fed from. It is a
// capability found by type assertion.
type RecordIdentifier interface {
	Connector
	// IdentifiesRecords marks the connector; it does nothing.
	IdentifiesRecords()
}

// Error is an error of one table: "table 'orders': ..." or, with Op, "read
// table 'orders': ...". Connectors, sinks and the engine build it rather
// than format the prefix, so that a caller that adds what it was doing
// (Op) finds the table named once.
type Error struct {
	Table string // the table's name
	Op    string // what failed ("read", "open"); empty when Err says it
	Err   error
}

func (e *Error) Error() string {
	if e.Op == "" {
		return fmt.Sprintf("table '%s': %v", options.Cut(e.Table), e.Err)
	}
	return fmt.Sprintf("%s table '%s': %v", e.Op, options.Cut(e.Table), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an *Error of table name whose Err is fmt.Errorf(format, args...).
func Errorf(name, format string, args ...any) error {
	return &Error{Table: name, Err: fmt.Errorf(format, args...)}
}
