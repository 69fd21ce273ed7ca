package flow

import (
	"context"
	"encoding/binary"
	"log/slog"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A LookupSource is the Source of a table that a lookup join reads by key
// (FROM s JOIN t FOR SYSTEM_TIME AS OF s.proc_time ON s.k = t.k): a
// database table, say. It is a capability found by type assertion; a
// table without it is refused as a join's looked-up side.
type LookupSource interface {
	// OpenLookup connects for lookups by the columns at keys (positions
	// among the table's physical columns). It checks what it can at once
	// (that the columns exist where the rows are kept), so that a query
	// that cannot look up fails before it reads anything.
	OpenLookup(ctx context.Context, o LookupOptions) (Lookuper, error)
}

// A VersionedSource is a LookupSource whose table keeps the versions of
// its rows in time (a changelog with a WATERMARK, such as an upsert-kafka
// table): a lookup with LookupOptions.AsOf finds the row as it was at a
// time, ordered by the table's WATERMARK column (a delete by the time of
// its record). Versioned reports whether this table can.
type VersionedSource interface {
	LookupSource
	Versioned() bool
}

// A RowKeeper is a LookupSource that keeps the rows it looks up itself
// (a follower of a topic) rather than asking a database that keeps them:
// with LookupOptions.Keep it keeps them there, on disk. Found by type
// assertion.
type RowKeeper interface {
	LookupSource
	KeepsRows()
}

// LookupOptions are what a lookup join asks of a LookupSource.
type LookupOptions struct {
	// Keys are the positions, among the table's physical columns, of the
	// columns a lookup gives values for, in the order of Lookup's keys.
	Keys []int
	// AsOf: each row of Lookup's keys ends with one column more, a
	// timestamp (the stream row's event time), and a lookup finds the
	// version of the row that was valid then (an event-time temporal
	// join). Only a VersionedSource takes it.
	AsOf bool
	// Keep, if set, is where a source that keeps the rows it looks up in
	// (a temporal join's follower of a topic) keeps them, on disk, and
	// reads them back when opened again; nil: in memory.
	Keep Keep
	// Alloc allocates the rows found; nil means memory.DefaultAllocator.
	Alloc memory.Allocator
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
}

// A Lookuper finds rows by key. One goroutine calls it at a time.
type Lookuper interface {
	// Lookup finds the rows whose key columns equal each row of keys
	// (one column per LookupOptions.Keys, in that order; no row holds a
	// NULL, no two rows are equal). rows has the table's physical
	// columns, and its row i is a match of keys' row of[i]; of is
	// ascending, so the matches of one key are together. A key without a
	// match has no row. The caller releases rows. An error is the whole
	// call's: nothing was found.
	Lookup(ctx context.Context, keys arrow.RecordBatch) (rows arrow.RecordBatch, of []int, err error)
	// Close ends the lookups and frees what they hold.
	Close() error
}

// MapAck is the Acker of a batch made from another batch's rows: its row i
// is the other's row from[i], and from is ascending (a row may give
// several rows, or none: an inner join that found no match, whose record
// is accepted with the batch as a filtered row's is). A record is settled
// as Acker says: accepted only if all its rows were, released if any was
// released, else rejected if any was rejected. It keeps the source's
// RowFailer and RowOrigins.
func MapAck(in Acker, from []int) Acker {
	return &mapAck{in: in, from: from}
}

type mapAck struct {
	in   Acker
	from []int
	// marked is the disposition passed on for each source row so far, so
	// that a later, weaker mark of another of its rows does not undo it.
	marked map[int]Disposition
}

var (
	_ RowFailer  = (*mapAck)(nil)
	_ RowOrigins = (*mapAck)(nil)
)

// strength orders dispositions as a record with several rows settles.
func strength(d Disposition) int {
	switch d {
	case Release:
		return 2
	case Reject:
		return 1
	}
	return 0
}

func (a *mapAck) Mark(row int, d Disposition) {
	if row < 0 || row >= len(a.from) {
		return
	}
	src := a.from[row]
	if old, ok := a.marked[src]; ok && strength(old) >= strength(d) {
		return
	}
	if a.marked == nil {
		a.marked = map[int]Disposition{}
	}
	a.marked[src] = d
	a.in.Mark(src, d)
}

func (a *mapAck) Done()    { a.in.Done() }
func (a *mapAck) Abandon() { a.in.Abandon() }

// FailsRows reports the source's policy: rows made from its rows fail as
// its own would.
func (a *mapAck) FailsRows() bool {
	rf, ok := a.in.(RowFailer)
	return ok && rf.FailsRows()
}

// FailRow fails the source row behind row and returns the rows made from
// the rows its record gave.
func (a *mapAck) FailRow(row int, err error) (from, to int) {
	rf, ok := a.in.(RowFailer)
	if !ok || row < 0 || row >= len(a.from) {
		return row, row + 1
	}
	sf, st := rf.FailRow(a.from[row], err)
	from, _ = slices.BinarySearch(a.from, sf)
	to, _ = slices.BinarySearch(a.from, st)
	return min(from, row), max(to, row+1)
}

func (a *mapAck) RowOrigin(row int) (Origin, bool) {
	ro, ok := a.in.(RowOrigins)
	if !ok || row < 0 || row >= len(a.from) {
		return Origin{}, false
	}
	return ro.RowOrigin(a.from[row])
}

// LookupConfig is how a lookup join caches and retries a table's lookups:
// Flink's 'lookup.cache', 'lookup.partial-cache.*' and 'lookup.max-retries',
// read from the looked-up table's options by its connector.
type LookupConfig struct {
	// Cache keeps the rows found (or not found) per key; false looks every
	// key up again ('lookup.cache' = 'NONE').
	Cache bool
	// MaxRows bounds the keys cached; the least recently used goes first.
	MaxRows int
	// ExpireAfterWrite and ExpireAfterAccess, when above 0, drop a key
	// that long after it was looked up, or after it was last used.
	ExpireAfterWrite, ExpireAfterAccess time.Duration
	// CacheMissingKey caches a key that found no row too.
	CacheMissingKey bool
	// MaxRetries is how often a failed lookup is tried again before the
	// query fails.
	MaxRetries int
}

// A LookupConfigurer is a LookupSource whose table says how its lookups
// are cached and retried; without it, nothing is cached and a failed
// lookup is tried 3 more times.
type LookupConfigurer interface {
	LookupConfig() LookupConfig
}

// LookupStats count a lookup join's work (a stream's Stats.Lookup).
type LookupStats struct {
	// Table is the looked-up table's name.
	Table string
	// Queries counts the lookups sent (one per batch with keys not in the
	// cache), Keys the keys they asked for, Rows the rows they found.
	Queries, Keys, Rows int64
	// Hits and Misses count the keys of each batch found in the cache or
	// not; Retries the lookups tried again after an error.
	Hits, Misses, Retries int64
}

// AppendKey appends row i's values of cols to b as one comparable key, and
// reports false (b unchanged) when one is NULL: rows of columns of the same
// types have equal keys exactly when their values are equal. A lookup join
// groups a batch's rows by it and a follower of a changelog files its rows
// by it. Integers and strings are written as they are; other types by
// their text (ValueStr), which is one per value of a type.
func AppendKey(b []byte, cols []arrow.Array, i int) ([]byte, bool) {
	start := len(b)
	for _, c := range cols {
		if c.IsNull(i) {
			return b[:start], false
		}
		switch a := c.(type) {
		case *array.Int64:
			b = binary.AppendVarint(b, a.Value(i))
		case *array.Int32:
			b = binary.AppendVarint(b, int64(a.Value(i)))
		case *array.Int16:
			b = binary.AppendVarint(b, int64(a.Value(i)))
		case *array.Int8:
			b = binary.AppendVarint(b, int64(a.Value(i)))
		case *array.String:
			v := a.Value(i)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		default:
			v := c.ValueStr(i)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return b, true
}
