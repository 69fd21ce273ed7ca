package sharegroup

import (
	"github.com/kshare/kshare/flow"
)

var _ flow.RowOrigins = (*batchAck)(nil)

// RowOrigin tells which record gave a batch's row; ok is false for a row
// out of range.
func (a *batchAck) RowOrigin(row int) (o flow.Origin, ok bool) {
	if row < 0 || row >= len(a.rowRec) {
		return flow.Origin{}, false
	}
	r := a.p.records[a.recs[a.rowRec[row]]]
	return flow.Origin{Group: a.p.m.st.src.group, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, DeliveryCount: r.DeliveryCount(), Key: r.Key}, true
}
