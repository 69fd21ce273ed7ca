package state

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/kshare/kshare/flow"
)

// The keys: one prefix byte says what a key is.
const (
	metaQuery   = "mquery"   // the text of the query whose state it is
	metaVersion = "mversion" // layoutVersion
	metaTxn     = "mtxn"     // the token of a sink's transaction (CommitTxn)
	groupPrefix = 'g'        // 'g' + a group's key: the group's value
	recPrefix   = 'r'        // 'r' + group, topic, partition, first offset: a run of records folded (runs)
	keepPrefix  = 't'        // 't' + a key of Keep's: rows a temporal join follows
)

// layoutVersion is how this package lays the keys out; a directory
// written by another layout is refused.
const layoutVersion = "1"

// ErrOtherQuery is returned by Open for a directory that holds the state
// of another query.
var ErrOtherQuery = errors.New("the state directory holds another query's state")

// Store is a query's state in a directory (see the package doc). Its
// methods are safe for concurrent use.
type Store struct {
	dir string
	db  *pebble.DB

	mu     sync.Mutex
	closed bool
	size   int64 // Size at Close
}

// Open opens the state in dir for query (the text that names the query:
// its statement), making the directory when it does not exist. A
// directory that another query wrote is refused with ErrOtherQuery; one
// that another process has open, or that cannot be written, with an
// error that says so.
func Open(dir, query string, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = slog.Default()
	}
	dir = abs(dir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("state directory %s: %w; choose a directory kshare can create and write", dir, err)
	}
	opts := &pebble.Options{Logger: pebbleLog{log.With("state", dir)}}
	// A query that keeps only some of its groups in memory asks for each
	// key it has not there (Group), most often a new key the directory
	// does not hold either: a Bloom filter on every level answers those
	// without reading the level's blocks.
	for i := range opts.Levels {
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("state directory %s: %w; choose a directory kshare can write", dir, err)
		}
		return nil, fmt.Errorf("state directory %s: %w (is another kshare running on it? each job needs a directory of its own)", dir, err)
	}
	s := &Store{dir: dir, db: db}
	if err := s.claim(query); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// claim makes the directory query's: an empty one is marked as such, one
// that is marked for another query (or another layout) is refused.
func (s *Store) claim(query string) error {
	version, err := s.get(metaVersion)
	if err != nil {
		return err
	}
	stored, err := s.get(metaQuery)
	if err != nil {
		return err
	}
	if version == nil && stored == nil {
		b := s.db.NewBatch()
		defer b.Close()
		b.Set([]byte(metaVersion), []byte(layoutVersion), nil)
		b.Set([]byte(metaQuery), []byte(query), nil)
		if err := b.Commit(pebble.Sync); err != nil {
			return fmt.Errorf("state directory %s: %w", s.dir, err)
		}
		return nil
	}
	if string(version) != layoutVersion {
		return fmt.Errorf("state directory %s was written by another version of kshare (layout %q, this one reads %q); use a new directory", s.dir, version, layoutVersion)
	}
	if string(stored) != query {
		return fmt.Errorf("%w: %s holds the state of\n  %s\nand this job is\n  %s\nuse another directory for it, or remove %s to start its state from nothing",
			ErrOtherQuery, s.dir, stored, query, s.dir)
	}
	return nil
}

// get is the value of key, nil when there is none.
func (s *Store) get(key string) ([]byte, error) {
	v, closer, err := s.db.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

// Keep is where the job keeps rows it looks up (flow.Keep): the latest
// row of each key of a table a temporal join follows, apart from the
// groups.
func (s *Store) Keep() flow.Keep { return keep{s} }

type keep struct{ s *Store }

func (k keep) Get(key []byte) ([]byte, error) {
	return k.s.get(string(append([]byte{keepPrefix}, key...)))
}

func (k keep) Put(keys, values [][]byte) error {
	b := k.s.db.NewBatch()
	defer b.Close()
	if _, err := setAll(b, keepPrefix, keys, values); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("state directory %s: %w", k.s.dir, err)
	}
	return nil
}

// Size is the bytes of the store's files on disk; once closed, what they
// were then.
func (s *Store) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.size
	}
	return int64(s.db.Metrics().DiskSpaceUsage())
}

// Dir is the directory.
func (s *Store) Dir() string { return s.dir }

// Groups calls fn with the value of every group stored (query.State).
func (s *Store) Groups(fn func(key, value []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{groupPrefix}, UpperBound: []byte{groupPrefix + 1}})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key()[1:], it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// Group is the value of the group stored under key (query.State), nil
// when none is.
func (s *Store) Group(key []byte) ([]byte, error) {
	return s.get(string(append([]byte{groupPrefix}, key...)))
}

// Commit stores the groups (a nil value deletes its key) and the records
// in one write, synced to disk before it returns (query.State).
func (s *Store) Commit(keys, values [][]byte, records []flow.Origin) error {
	return s.commit(keys, values, records, false, nil)
}

// Put stores keys and values (a nil value deletes its key) next to the
// groups, in one write synced to disk before it returns, with no records
// and no transaction (query.JoinState: an interval join's rows).
func (s *Store) Put(keys, values [][]byte) error {
	return s.commit(keys, values, nil, false, nil)
}

// CommitTxn is Commit that also stores token, the transaction of a sink
// that commits with the state (flow.TxnWriter), in the same write; a nil
// token deletes the one stored.
func (s *Store) CommitTxn(keys, values [][]byte, records []flow.Origin, token []byte) error {
	return s.commit(keys, values, records, true, token)
}

// Txn is the token CommitTxn stored last; nil for none.
func (s *Store) Txn() ([]byte, error) { return s.get(metaTxn) }

func (s *Store) commit(keys, values [][]byte, records []flow.Origin, txn bool, token []byte) error {
	b := s.db.NewBatch()
	defer b.Close()
	if txn {
		var err error
		if token == nil {
			err = b.Delete([]byte(metaTxn), nil)
		} else {
			err = b.Set([]byte(metaTxn), token, nil)
		}
		if err != nil {
			return err
		}
	}
	k, err := setAll(b, groupPrefix, keys, values)
	if err != nil {
		return err
	}
	for _, r := range runs(records) {
		if err := b.Set(recordKey(k[:0], r.Group, r.Topic, r.Partition, r.Offset), binary.BigEndian.AppendUint64(nil, uint64(r.end)), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("state directory %s: %w", s.dir, err)
	}
	return nil
}

// setAll adds prefix + keys[i] = values[i] to b (a nil value deletes it)
// and returns the buffer it made the keys in, for reuse.
func setAll(b *pebble.Batch, prefix byte, keys, values [][]byte) ([]byte, error) {
	var k []byte
	for i, key := range keys {
		k = append(append(k[:0], prefix), key...)
		var err error
		if values[i] == nil {
			err = b.Delete(k, nil)
		} else {
			err = b.Set(k, values[i], nil)
		}
		if err != nil {
			return k, err
		}
	}
	return k, nil
}

// run is the records of one partition from Offset up to end (exclusive).
type run struct {
	flow.Origin
	end int64
}

// runs are records as runs of consecutive offsets, each stored as one key
// (its first record's) whose value is the offset after its last: a batch
// of a share group holds mostly consecutive offsets of a few partitions,
// so a commit writes a few keys rather than one per record.
func runs(records []flow.Origin) []run {
	if len(records) == 0 {
		return nil
	}
	sorted := slices.Clone(records)
	slices.SortFunc(sorted, func(a, b flow.Origin) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	var out []run
	for _, o := range sorted {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Group == o.Group && last.Topic == o.Topic && last.Partition == o.Partition && o.Offset <= last.end {
				last.end = max(last.end, o.Offset+1)
				continue
			}
		}
		out = append(out, run{Origin: o, end: o.Offset + 1})
	}
	return out
}

// runEnd is the offset after the last record of the run a stored value
// describes; a value of the first layout, one key per record, is empty.
func runEnd(start int64, value []byte) int64 {
	if len(value) != 8 {
		return start + 1
	}
	return int64(binary.BigEndian.Uint64(value))
}

// partitionRuns bounds an iterator to the runs of one partition.
func partitionRuns(group, topic string, partition int32) *pebble.IterOptions {
	lo := recordKey(nil, group, topic, partition, 0)
	hi := recordKey(nil, group, topic, partition, math.MaxInt64)
	return &pebble.IterOptions{LowerBound: lo, UpperBound: hi}
}

// runAt returns the run of it that holds offset, if any: the last run
// starting at or before it.
func runAt(it *pebble.Iterator, group, topic string, partition int32, offset int64, buf []byte) (start, end int64, ok bool) {
	if !it.SeekLT(recordKey(buf[:0], group, topic, partition, offset+1)) {
		return 0, 0, false
	}
	key := it.Key()
	start = int64(binary.BigEndian.Uint64(key[len(key)-8:]))
	end = runEnd(start, it.Value())
	return start, end, offset < end
}

// Applied reports which of records a Commit stored (query.State).
func (s *Store) Applied(_ context.Context, records []flow.Origin) ([]bool, error) {
	out := make([]bool, len(records))
	var buf []byte
	for i, o := range records {
		it, err := s.db.NewIter(partitionRuns(o.Group, o.Topic, o.Partition))
		if err != nil {
			return nil, fmt.Errorf("state directory %s: %w", s.dir, err)
		}
		_, _, out[i] = runAt(it, o.Group, o.Topic, o.Partition, o.Offset, buf)
		if err := it.Close(); err != nil {
			return nil, fmt.Errorf("state directory %s: %w", s.dir, err)
		}
	}
	return out, nil
}

// Prune forgets the records of group before starts: the share group will
// never deliver them again, so no redelivery needs them (flow.Pruner).
// A run that reaches past its partition's start is kept whole.
func (s *Store) Prune(group string, starts []flow.PartitionStart) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, st := range starts {
		upTo := st.Offset
		it, err := s.db.NewIter(partitionRuns(group, st.Topic, st.Partition))
		if err != nil {
			return err
		}
		if start, end, ok := runAt(it, group, st.Topic, st.Partition, st.Offset-1, nil); ok && end > st.Offset {
			upTo = start
		}
		if err := it.Close(); err != nil {
			return err
		}
		from := recordKey(nil, group, st.Topic, st.Partition, 0)
		to := recordKey(nil, group, st.Topic, st.Partition, upTo)
		if err := b.DeleteRange(from, to, nil); err != nil {
			return err
		}
	}
	return b.Commit(pebble.NoSync)
}

// Records counts the records stored, for tests and stats: it reads every
// run.
func (s *Store) Records() (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{recPrefix}, UpperBound: []byte{recPrefix + 1}})
	if err != nil {
		return 0, err
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		key := it.Key()
		start := int64(binary.BigEndian.Uint64(key[len(key)-8:]))
		n += int(runEnd(start, it.Value()) - start)
	}
	return n, it.Close()
}

// Close closes the store; the directory keeps the state.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.size = int64(s.db.Metrics().DiskSpaceUsage())
	return s.db.Close()
}

// recordKey appends the key of a record: its group and topic (each
// preceded by its length), then its partition and offset in big-endian
// order, so that a partition's records are in offset order and those
// before an offset are one range.
func recordKey(b []byte, group, topic string, partition int32, offset int64) []byte {
	b = append(b, recPrefix)
	b = binary.AppendUvarint(b, uint64(len(group)))
	b = append(b, group...)
	b = binary.AppendUvarint(b, uint64(len(topic)))
	b = append(b, topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return binary.BigEndian.AppendUint64(b, uint64(offset))
}

// pebbleLog sends Pebble's log lines to the job's log: its information at
// debug level, its errors as warnings.
type pebbleLog struct{ log *slog.Logger }

func (l pebbleLog) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (l pebbleLog) Errorf(format string, args ...any) {
	l.log.Warn(fmt.Sprintf(format, args...))
}

func (l pebbleLog) Fatalf(format string, args ...any) {
	// Pebble calls Fatalf for what it cannot go on after (a corrupt
	// store); it expects the process to end.
	l.log.Error(fmt.Sprintf(format, args...))
	panic(fmt.Sprintf("state: "+format, args...))
}

// abs is dir made absolute for messages, or dir when it cannot be.
func abs(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}
