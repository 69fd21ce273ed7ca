package connector

// Origin is where a row came from: its record's coordinates and how often
// the broker has handed the record out. A worker that runs a program per
// row tells it these (kshare work's KSHARE_* environment), and logs them
// with what the program said.
type Origin struct {
	Topic         string
	Partition     int32
	Offset        int64
	DeliveryCount int32
	Key           []byte
}

// RowOrigin tells which record gave a batch's row. A reader finds it on a
// batch's Acker by type assertion; ok is false for a row out of range.
func (a *batchAck) RowOrigin(row int) (o Origin, ok bool) {
	if row < 0 || row >= len(a.rowRec) {
		return Origin{}, false
	}
	r := a.p.records[a.recs[a.rowRec[row]]]
	return Origin{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, DeliveryCount: r.DeliveryCount(), Key: r.Key}, true
}
