package kafkarecord

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// Builder turns Kafka records into a table's Arrow batches: the table's
// format decodes each value into the physical columns, and the record's
// metadata fills the metadata columns, once per row.
type Builder = batch.MetaBuilder[*kgo.Record]

// NewBuilder returns a builder of table b's batches, allocating from alloc
// and cutting batches of size rows (0 or less: the table's
// 'scan.batch-size'). The share-group members and the plain reader decode
// with it, and bench/hotpath measures it.
func NewBuilder(b *table.Bound, alloc memory.Allocator, size int) (*Builder, error) {
	return NewSchemaBuilder(b, b.Def.Schema.Arrow(), alloc, size)
}

// NewSchemaBuilder is NewBuilder over schema, the Arrow form of b's schema
// that a stream hands out, so that every batch of the stream shares it.
func NewSchemaBuilder(b *table.Bound, schema *arrow.Schema, alloc memory.Allocator, size int) (*Builder, error) {
	cols, _ := b.Def.Schema.Physical()
	var dec table.Decoder
	if len(cols) > 0 {
		var err error
		if dec, err = b.Format.NewDecoder(cols, b.Options); err != nil {
			return nil, table.Errorf(b.Def.Name, "%w", err)
		}
	}
	return NewDecoderBuilder(b, schema, dec, alloc, size)
}

// NewDecoderBuilder is NewSchemaBuilder with dec as the decoder of the
// physical columns (nil for a table of metadata columns only), for a
// connector that decodes more than a record's value (the key too).
func NewDecoderBuilder(b *table.Bound, schema *arrow.Schema, dec table.Decoder, alloc memory.Allocator, size int) (*Builder, error) {
	meta, err := metaColumns(&b.Def.Schema)
	if err != nil {
		return nil, err
	}
	_, idx := b.Def.Schema.Physical()
	if dec == nil {
		// A table of metadata columns only has nothing to decode: one
		// row per record (nil would mean every column is physical).
		idx = []int{}
	}
	if size <= 0 {
		size = int(b.Options.Int(OptBatchSize))
	}
	return batch.NewMetaBuilder(alloc, schema, idx, dec, size, meta), nil
}

// CheckColumns reports a metadata column of s that no filler fills. The
// table layer checks the columns against a connector's Metadata at CREATE
// TABLE; a key without a filler is a bug best found there too, rather than
// when a stream opens.
func CheckColumns(s *types.Schema) error {
	_, err := metaColumns(s)
	return err
}

// metaColumns are the metadata columns of schema with their fillers.
func metaColumns(s *types.Schema) ([]batch.Meta[*kgo.Record], error) {
	var meta []batch.Meta[*kgo.Record]
	for i, c := range s.Columns {
		if !c.Metadata {
			continue
		}
		fill, err := metaFiller(c.Key())
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", c.Name, err)
		}
		meta = append(meta, batch.Meta[*kgo.Record]{Index: i, Fill: fill})
	}
	return meta, nil
}

// metaFill appends one record's metadata value to a metadata column. The
// declared type may be wider than the key's own (BIGINT for 'partition',
// TIMESTAMP_LTZ(6) for 'timestamp'), so values are written through the
// builder's type, not assumed.
type metaFill func(b array.Builder, r *kgo.Record)

// metaFiller returns the filler of key for a column built by b's type. The
// table layer has already checked at CREATE time that the key exists and the
// declared type can hold it; an error here is a bug in that check.
func metaFiller(key string) (metaFill, error) {
	switch key {
	case "topic":
		return func(b array.Builder, r *kgo.Record) { appendString(b, r.Topic) }, nil
	case "partition":
		return func(b array.Builder, r *kgo.Record) { appendInt(b, int64(r.Partition)) }, nil
	case "offset":
		return func(b array.Builder, r *kgo.Record) { appendInt(b, r.Offset) }, nil
	case "timestamp":
		return func(b array.Builder, r *kgo.Record) { appendTime(b, r.Timestamp) }, nil
	case "timestamp-type":
		return func(b array.Builder, r *kgo.Record) { appendString(b, timestampType(r)) }, nil
	case "key":
		return func(b array.Builder, r *kgo.Record) {
			if r.Key == nil {
				b.AppendNull()
				return
			}
			appendBytes(b, r.Key)
		}, nil
	case "headers":
		return appendHeaders, nil
	case "leader-epoch":
		return func(b array.Builder, r *kgo.Record) {
			if r.LeaderEpoch < 0 {
				b.AppendNull() // the broker did not say
				return
			}
			appendInt(b, int64(r.LeaderEpoch))
		}, nil
	case "delivery-count":
		return func(b array.Builder, r *kgo.Record) { appendInt(b, int64(r.DeliveryCount())) }, nil
	case "acquisition-deadline":
		return func(b array.Builder, r *kgo.Record) {
			d := r.AcquisitionDeadline()
			if d.IsZero() {
				b.AppendNull()
				return
			}
			appendTime(b, d)
		}, nil
	}
	return nil, fmt.Errorf("metadata key '%s' is not one of the connector's", key)
}

// timestampType spells the record's timestamp type as Kafka's Java client
// and Flink do.
func timestampType(r *kgo.Record) string {
	switch {
	case r.Attrs.TimestampType() == 1:
		return "LogAppendTime"
	case r.Attrs.TimestampType() == 0:
		return "CreateTime"
	}
	return "NoTimestampType"
}

func appendString(b array.Builder, s string) {
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(s)
	case *array.BinaryBuilder:
		b.AppendString(s)
	default:
		b.AppendNull()
	}
}

func appendBytes(b array.Builder, v []byte) {
	switch b := b.(type) {
	case *array.BinaryBuilder:
		b.Append(v)
	case *array.StringBuilder:
		b.BinaryBuilder.Append(v)
	default:
		b.AppendNull()
	}
}

func appendInt(b array.Builder, v int64) {
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(v))
	case *array.Int64Builder:
		b.Append(v)
	case *array.Int16Builder:
		b.Append(int16(v))
	case *array.Int8Builder:
		b.Append(int8(v))
	default:
		b.AppendNull()
	}
}

func appendTime(b array.Builder, t time.Time) {
	tb, ok := b.(*array.TimestampBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	// As time.Time's UnixMilli and its kin compute it, for any unit.
	per := tb.Type().(*arrow.TimestampType).Unit.Multiplier()
	tb.Append(arrow.Timestamp(t.Unix()*int64(time.Second/per) + int64(t.Nanosecond())/int64(per)))
}

func appendHeaders(b array.Builder, r *kgo.Record) {
	mb, ok := b.(*array.MapBuilder)
	if !ok {
		b.AppendNull()
		return
	}
	mb.Append(true)
	kb, ib := mb.KeyBuilder(), mb.ItemBuilder()
	for _, h := range r.Headers {
		appendString(kb, h.Key)
		if h.Value == nil {
			ib.AppendNull()
			continue
		}
		appendBytes(ib, h.Value)
	}
}
