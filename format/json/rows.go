package json

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/types"
)

// A RowEncoder writes the rows of record batches as JSON objects, for the
// callers that hand rows on without a sink: the shell's 'json' output and
// the rows kshare work gives a program. It is the encoder a sink of format
// 'json' gets for the same columns with the format's default options, so
// that a program reading a row sees the text a pipeline writes to a topic
// or a file for it.
//
// Build one per schema. It binds itself to the arrays of each batch it is
// given, once per batch, not per row: passing the rows of one batch in turn
// costs no more than a sink's encoding of them. Like every table.Encoder it
// is not safe for concurrent use.
type RowEncoder struct {
	enc *encoder
}

// NewRowEncoder returns the encoder of rows whose columns are cols, or an
// error naming the column of a type the format cannot write (a MAP whose
// keys are arrays, rows or maps: a JSON object's keys are strings).
func NewRowEncoder(cols []types.Column) (*RowEncoder, error) {
	// The defaults come from the options' declarations, as they do for
	// a table that sets no json.* key.
	defaults, err := options.Parse(nil, nil, Options)
	if err != nil {
		return nil, err
	}
	enc, err := Format{}.NewEncoder(cols, defaults)
	if err != nil {
		return nil, err
	}
	return &RowEncoder{enc: enc.(*encoder)}, nil
}

// AppendRow appends row i of rec, whose columns are the encoder's in order,
// as one JSON object without a newline, and returns the extended buffer.
// A value that JSON text cannot hold (a string that is not UTF-8, a date
// outside the years 0000..9999) is a *table.EncodeError naming the value's
// path, and b comes back unchanged.
func (e *RowEncoder) AppendRow(b []byte, rec arrow.RecordBatch, i int) ([]byte, error) {
	out, _, err := e.enc.Encode(b, rec.Columns(), i)
	return out, err
}
