package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kshare/kshare/flow"
)

func origin(part int32, off int64) flow.Origin {
	return flow.Origin{Group: "g1", Topic: "orders", Partition: part, Offset: off, DeliveryCount: 2}
}

func groups(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	if err := s.Groups(func(_, v []byte) error { out = append(out, string(v)); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// What a Commit stores is there after the store is closed and opened
// again: a group's latest value, and the records, found by Applied.
func TestCommitSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "INSERT INTO a SELECT k, COUNT(*) FROM t GROUP BY k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit([][]byte{[]byte("k1"), []byte("k2")}, [][]byte{[]byte("one"), []byte("two")}, []flow.Origin{origin(0, 1), origin(0, 2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit([][]byte{[]byte("k1")}, [][]byte{[]byte("one, again")}, []flow.Origin{origin(1, 7)}); err != nil {
		t.Fatal(err)
	}
	size := s.Size()
	if size <= 0 {
		t.Errorf("Size %d after two commits, want the bytes of the write-ahead log at least", size)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if closed := s.Size(); closed <= 0 {
		t.Errorf("Size %d once closed, want the size at Close", closed)
	}
	s, err = Open(dir, "INSERT INTO a SELECT k, COUNT(*) FROM t GROUP BY k", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := groups(t, s), []string{"one, again", "two"}; !slices.Equal(got, want) {
		t.Errorf("groups %q, want %q", got, want)
	}
	other := origin(0, 1)
	other.Group = "g2"
	got, err := s.Applied(context.Background(), []flow.Origin{origin(0, 1), origin(0, 3), origin(1, 7), origin(0, 2), other})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, true, false}; !slices.Equal(got, want) {
		t.Errorf("Applied %v, want %v", got, want)
	}
}

// Prune forgets the records of a partition before its start offset, and
// no others; a run of records stored together that reaches past the start
// is kept whole.
func TestPrune(t *testing.T) {
	s, err := Open(t.TempDir(), "q", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Two commits: offsets 0-5 and 6-9 of partitions 0 and 1.
	for _, span := range [][2]int64{{0, 6}, {6, 10}} {
		var recs []flow.Origin
		for off := span[0]; off < span[1]; off++ {
			recs = append(recs, origin(0, off), origin(1, off))
		}
		if err := s.Commit(nil, nil, recs); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Records(); err != nil || n != 20 {
		t.Fatalf("%d records stored (%v), want 20", n, err)
	}
	if err := s.Prune("g1", []flow.PartitionStart{{Topic: "orders", Partition: 0, Offset: 6}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Records(); err != nil || n != 14 {
		t.Fatalf("%d records left (%v), want 14", n, err)
	}
	got, err := s.Applied(context.Background(), []flow.Origin{origin(0, 5), origin(0, 6), origin(1, 0), origin(0, 10)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, true, true, false}; !slices.Equal(got, want) {
		t.Errorf("Applied %v, want %v", got, want)
	}
	// A start inside the run of 6-9 keeps it: 8 and 9 may still come.
	if err := s.Prune("g1", []flow.PartitionStart{{Topic: "orders", Partition: 0, Offset: 8}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Applied(context.Background(), []flow.Origin{origin(0, 8), origin(0, 9)}); err != nil || !slices.Equal(got, []bool{true, true}) {
		t.Errorf("after a start inside a run: Applied %v (%v), want both", got, err)
	}
}

// A commit stores records as runs of consecutive offsets: one key per run,
// whatever their order in the commit, duplicates and gaps told apart.
func TestRuns(t *testing.T) {
	recs := []flow.Origin{origin(0, 7), origin(0, 3), origin(1, 3), origin(0, 4), origin(0, 5), origin(0, 4), origin(0, 9)}
	got := runs(recs)
	want := []run{{origin(0, 3), 6}, {origin(0, 7), 8}, {origin(0, 9), 10}, {origin(1, 3), 4}}
	same := func(a, b run) bool {
		return a.Topic == b.Topic && a.Partition == b.Partition && a.Offset == b.Offset && a.end == b.end
	}
	if !slices.EqualFunc(got, want, same) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

// A directory is one query's: another query, a directory that is a file,
// and a directory another store has open are each refused with an error
// that says what to do.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, "INSERT INTO a SELECT k, COUNT(*) FROM t GROUP BY k", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, "INSERT INTO a SELECT k, SUM(x) FROM t GROUP BY k", nil)
	if err == nil || !strings.Contains(err.Error(), "is another kshare running on it") {
		t.Errorf("a directory open elsewhere: %v", err)
	}
	s.Close()
	_, err = Open(dir, "INSERT INTO a SELECT k, SUM(x) FROM t GROUP BY k", nil)
	if !errors.Is(err, ErrOtherQuery) || !strings.Contains(err.Error(), "COUNT(*)") || !strings.Contains(err.Error(), "use another directory") {
		t.Errorf("another query's directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(filepath.Join(file, "state"), "q", nil)
	if err == nil || !strings.Contains(err.Error(), "choose a directory") {
		t.Errorf("a directory under a file: %v", err)
	}
}
