package kafkarecord

// This file declares, as data, what a Kafka table's rows take from its
// records: the metadata keys, and how many rows one batch holds.

import (
	"strconv"

	"github.com/kshare/kshare/format/batch"
	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/table"
	"github.com/kshare/kshare/types"
)

// OptBatchSize is the key of the most rows of one batch.
const OptBatchSize = "scan.batch-size"

// BatchSize declares 'scan.batch-size', which NewBuilder reads when its
// caller gives no size.
var BatchSize = options.Option{Key: OptBatchSize, Type: options.Int, Default: strconv.Itoa(batch.DefaultSize), Min: 1, HasMin: true, Unit: options.Rows,
	Description: "Most rows of one Arrow batch, unless the reader asks for another bound when it opens a stream."}

// Metadata are the keys a metadata column may read, each of which the
// builder fills from the record. A key is NOT NULL when every record has
// it. 'delivery-count' and 'acquisition-deadline' are a share group's: a
// connector that reads no share group leaves them out of its own list.
var Metadata = []table.MetadataKey{
	{Key: "topic", Type: types.StringType().WithNotNull(true), Description: "Topic of the record."},
	{Key: "partition", Type: types.IntType().WithNotNull(true), Description: "Partition of the record."},
	{Key: "offset", Type: types.BigIntType().WithNotNull(true), Description: "Offset of the record in its partition."},
	{Key: "timestamp", Type: types.TimestampLTZType(3).WithNotNull(true), Description: "Timestamp of the record."},
	{Key: "timestamp-type", Type: types.StringType().WithNotNull(true), Description: "'CreateTime', 'LogAppendTime' or 'NoTimestampType'."},
	{Key: "key", Type: types.BytesType(), Description: "Key of the record; NULL for a record without one."},
	{Key: "headers", Type: types.MapType(types.StringType().WithNotNull(true), types.BytesType()).WithNotNull(true),
		Description: "Headers of the record; of a header set twice, the last."},
	{Key: "leader-epoch", Type: types.IntType(), Description: "Leader epoch of the record's partition, NULL when the broker did not say."},
	{Key: "delivery-count", Type: types.IntType().WithNotNull(true), Description: "How many times the share group has delivered the record, this time included."},
	{Key: "acquisition-deadline", Type: types.TimestampLTZType(3),
		Description: "When the member's lock on the record runs out and the broker may deliver it elsewhere."},
}
