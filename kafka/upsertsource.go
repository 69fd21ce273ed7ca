package kafka

// This file reads an 'upsert-kafka' table: its topic, from the start, as
// the changelog of a table keyed by its PRIMARY KEY. The first value of a
// key is an insert (+I); a later value replaces the row (-U with the row
// it had, then +U); a record without a value (a tombstone) deletes it (-D
// with the row it had), and a tombstone of a key without a row is nothing.
// A compacted topic keeps the latest record of each key, so reading it
// from the start gives every key's row; what compaction has not cleaned
// yet comes as the updates it was.
//
// The reader keeps the latest value of every key it has seen, as the
// record's bytes, to write the row an update or a delete replaces: memory
// grows with the number of keys (about the size of a value each).

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/flow"
	"github.com/kshare/kshare/kafkarecord"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
)

// upsertSource is the 'kafka' source over an upsert-kafka table's topic,
// read from its first offset, whose stream turns records into changes.
type upsertSource struct {
	*source
	key []int // positions among the physical columns of the PRIMARY KEY
}

func (u *upsertSource) Open(ctx context.Context, o flow.OpenOptions) (flow.Stream, error) {
	return u.open(ctx, o, func(alloc memory.Allocator) (*upsertRows, error) { return newUpsertRows(u.bound, u.key, alloc) })
}

// upsertRows turns the records of an upsert topic into changes: see the
// file's comment. One stream's; its Next calls append.
type upsertRows struct {
	dec  *upsertDecoder
	last map[string][]byte // the latest value of each key that has a row
}

func newUpsertRows(b *table.Bound, keyIdx []int, alloc memory.Allocator) (*upsertRows, error) {
	d, err := newUpsertDecoder(b, keyIdx, alloc)
	if err != nil {
		return nil, err
	}
	return &upsertRows{dec: d, last: map[string][]byte{}}, nil
}

// append appends the changes record r makes to rb and returns how many
// rows they are. On an error nothing of r was appended and the key's row
// is what it was.
func (u *upsertRows) append(rb *kafkarecord.Builder, r *kgo.Record) (int, error) {
	if r.Key == nil {
		return 0, fmt.Errorf("the record has no key, and an upsert-kafka table's rows are by key")
	}
	// Looked up by string(r.Key) in place, which allocates no string; a
	// key's bytes are copied only to store or update its value.
	old, had := u.last[string(r.Key)]
	u.dec.recKey = r.Key
	switch {
	case r.Value == nil && !had:
		return 0, nil // the delete of a row never seen (or deleted before)
	case r.Value == nil:
		u.dec.kind = flow.KindDelete
		n, err := rb.Append(old, r)
		if err == nil {
			delete(u.last, string(r.Key))
		}
		return n, err
	case !had:
		u.dec.kind = flow.KindInsert
		n, err := rb.Append(r.Value, r)
		if err == nil {
			// A copy: the record's bytes alias its fetch's buffer.
			u.last[string(r.Key)] = append([]byte(nil), r.Value...)
		}
		return n, err
	}
	u.dec.kind = flow.KindUpdateBefore
	before, err := rb.Append(old, r)
	if err != nil {
		return 0, err
	}
	u.dec.kind = flow.KindUpdateAfter
	after, err := rb.Append(r.Value, r)
	if err != nil {
		// The -U is in the batch already: the row comes back as it
		// was (it decoded before, so it decodes again), and the
		// record's error is reported all the same.
		n, _ := rb.Append(old, r)
		return before + n, err
	}
	// The old value is decoded (into the batch's builders): its buffer
	// takes the new one.
	u.last[string(r.Key)] = append(old[:0], r.Value...)
	return before + after, nil
}

func (u *upsertRows) release() { u.dec.release() }

// upsertDecoder decodes a record into a row of an upsert-kafka table: the
// key's columns from the record's key under 'value.fields-include' =
// 'EXCEPT_KEY' (under 'ALL' the value holds every column and the key only
// tells the row), the others from the value. It is the ChangeDecoder of the
// stream's builder, which gives it the value; the stream sets the record's
// key and the kind of the rows before each Append.
type upsertDecoder struct {
	value    table.Decoder
	valuePos []int // positions among the physical columns that the value fills
	key      table.Decoder
	keyPos   []int // ... and that the key fills (none under 'ALL')
	// scratch are builders of the key's columns: the key is decoded into
	// them first, so that a key that does not decode appends nothing.
	scratch []array.Builder
	cols    []array.Builder // reused: the builders the value or the key fills

	recKey []byte
	kind   flow.RowKind
}

var _ table.ChangeDecoder = (*upsertDecoder)(nil)

func newUpsertDecoder(b *table.Bound, keyIdx []int, alloc memory.Allocator) (*upsertDecoder, error) {
	phys, _ := b.Def.Schema.Physical()
	name := options.Cut(b.Def.Name)
	l, err := newKeyedLayout(b, phys, keyIdx)
	if err != nil {
		return nil, err
	}
	d := &upsertDecoder{valuePos: l.valueIdx}
	if l.exceptKeys {
		// Under 'ALL' the value holds the key's columns too.
		d.keyPos = keyIdx
		if d.key, err = l.keyFormat.NewDecoder(l.keyCols, l.keyOpts); err != nil {
			return nil, table.Errorf(name, "'%s': %w", OptKeyFormat, err)
		}
		if alloc == nil {
			alloc = memory.DefaultAllocator
		}
		for _, c := range l.keyCols {
			d.scratch = append(d.scratch, array.NewBuilder(alloc, c.Type.ArrowType()))
		}
	}
	if d.value, err = b.Format.NewDecoder(l.valueCols, b.Options); err != nil {
		return nil, table.Errorf(name, "%w", err)
	}
	if _, ok := d.value.(table.ChangeDecoder); ok {
		return nil, table.Errorf(name, "'value.format' '%s' holds changes, and an 'upsert-kafka' table's values are rows (the latest of each key); read its topic with connector 'kafka'", b.Format.Name())
	}
	return d, nil
}

// Decode decodes a row as an insert; the stream calls DecodeChanges.
func (d *upsertDecoder) Decode(value []byte, cols []array.Builder) (int, error) {
	n, _, err := d.DecodeChanges(value, cols, nil)
	return n, err
}

func (d *upsertDecoder) DecodeChanges(value []byte, cols []array.Builder, kinds []flow.RowKind) (int, []flow.RowKind, error) {
	if d.key != nil {
		if _, err := d.key.Decode(d.recKey, d.scratch); err != nil {
			return 0, kinds, fmt.Errorf("the key: %w", err)
		}
		for _, b := range d.scratch {
			b.NewArray().Release()
		}
	}
	n, err := d.value.Decode(value, d.pick(cols, d.valuePos))
	if err != nil {
		return 0, kinds, err
	}
	if d.key != nil {
		keyCols := d.pick(cols, d.keyPos)
		for range n {
			if _, err := d.key.Decode(d.recKey, keyCols); err != nil {
				// It decoded into the scratch builders a moment ago.
				panic(fmt.Sprintf("kafka: a key that decoded once failed the second time: %v", err))
			}
		}
	}
	for range n {
		kinds = append(kinds, d.kind)
	}
	return n, kinds, nil
}

// pick is the builders of cols at pos, in d.cols.
func (d *upsertDecoder) pick(cols []array.Builder, pos []int) []array.Builder {
	d.cols = d.cols[:0]
	for _, p := range pos {
		d.cols = append(d.cols, cols[p])
	}
	return d.cols
}

func (d *upsertDecoder) release() {
	for _, b := range d.scratch {
		b.Release()
	}
	d.scratch = nil
}
