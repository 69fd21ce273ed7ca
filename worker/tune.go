package worker

import (
	"strconv"

	"github.com/kshare/kshare/options"
	"github.com/kshare/kshare/sharegroup"
	"github.com/kshare/kshare/table"
)

// Poll sizing for a pool, as table options of the query it runs. franz-go
// fixes a member's poll size when its client is made, so the pool sets it
// when it opens the query, from its concurrency:
//
//   - 'properties.max.poll.records' = the concurrency (Config.PollRecords
//     when set): a member holds at most one row per worker, so a slow pool
//     does not sit on 500 records that other consumers of the group could
//     be working on.
//   - 'properties.share.acquire.mode' = 'record_limit', so that the broker
//     honours that bound instead of handing out whole producer batches.
//   - 'source.parallelism' = 2: while one member's poll is being worked on,
//     the other's waits ready, so a worker that finishes finds its next row
//     at once rather than after a fetch's round trip (a member fetches only
//     once its whole poll is settled). Records waiting so are held at most
//     about one row's time.
//
// Both members' polls together stay within the broker's default cap of
// records locked per partition (2000, group.share.partition.max.record.locks).
// An option the table sets itself is left as it is.
//
// Measured (kbench suite --sections pool, 1 partition, concurrency 64, Go
// API, load average 10-25 on 2 cores): 5 ms rows, 2 members 8.5k-10.4k
// rows/s, 1 member 5.1k-6.5k (ideal 12.8k); 50 ms rows, 1,183 rows/s either
// way (ideal 1,280). A poll of one row per worker is too small for rows of
// a millisecond or less: a trivial --persistent worker did 2.2k rows/s at
// 4 workers with it and 17k-21k with a poll of 500, which PollRecords (and
// kshare work --poll-records) set. The poll is fixed when the members'
// clients are made (franz-go's ShareMaxRecords), so it cannot follow the
// rows' measured time within a query.
// tuneMembers is the parallelism a pool's query gets when its table does
// not set one.
const tuneMembers = 2

// Tune returns the options of b's table with the poll sizing above for a
// pool of concurrency workers, and false for a table it has nothing to
// change on (another connector's, or one that sets every option itself).
// pollRecords, when above 0, is the poll size to use instead of the
// concurrency. It reads what the table set from b.Options, whose keys the
// connector's declaration resolved (aliases included).
func Tune(b *table.Bound, concurrency, pollRecords int) ([]options.KV, bool) {
	out := append([]options.KV(nil), b.Def.Options...)
	if b.Connector == nil || b.Connector.Name() != sharegroup.Name {
		return out, false
	}
	v := b.Options
	members := tuneMembers
	if v.Has(sharegroup.OptParallelism) {
		members = int(v.Int(sharegroup.OptParallelism))
	} else {
		out = append(out, options.KV{Key: sharegroup.OptParallelism, Value: strconv.Itoa(members)})
	}
	if !v.Has(sharegroup.OptMaxPollRecords) {
		n := concurrency
		if pollRecords > 0 {
			n = pollRecords
		}
		n = min(n, sharegroup.PartitionRecordLocks/max(members, 1))
		out = append(out, options.KV{Key: sharegroup.OptMaxPollRecords, Value: strconv.Itoa(max(n, 1))})
	}
	if !v.Has(sharegroup.OptShareAcquireMode) {
		out = append(out, options.KV{Key: sharegroup.OptShareAcquireMode, Value: sharegroup.AcquireRecordLimit})
	}
	return out, len(out) > len(b.Def.Options)
}
