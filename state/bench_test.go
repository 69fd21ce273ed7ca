package state

import (
	"fmt"
	"testing"

	"github.com/kshare/kshare/flow"
)

// BenchmarkCommit is what a batch of an aggregate job pays to be stored
// before its records are accepted: the groups it touched and the records
// it folded, in one synced write. Reported per record too, to set against
// what reading a record from Kafka costs. The last case is a million
// groups in one write, the most a batch that touches every group of a
// large state could ask.
func BenchmarkCommit(b *testing.B) {
	for _, c := range []struct{ groups, records int }{{10, 50}, {100, 500}, {500, 2000}, {1_000_000, 500}} {
		b.Run(fmt.Sprintf("groups=%d/records=%d", c.groups, c.records), func(b *testing.B) {
			s, err := Open(b.TempDir(), "q", nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			keys, values := make([][]byte, c.groups), make([][]byte, c.groups)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "customer-%07d", i)
				values[i] = make([]byte, 40)
			}
			recs := make([]flow.Origin, c.records)
			off := int64(0)
			b.ResetTimer()
			for range b.N {
				// A poll's records: consecutive offsets of three
				// partitions.
				per := (c.records + 2) / 3
				for i := range recs {
					recs[i] = flow.Origin{Group: "g", Topic: "orders", Partition: int32(i / per), Offset: off + int64(i%per)}
				}
				off += int64(per)
				if err := s.Commit(keys, values, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.records), "ns/record")
		})
	}
}
