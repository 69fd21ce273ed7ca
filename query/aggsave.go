package query

// This file writes an aggregation's groups as bytes and reads them back:
// what a query keeps in its State (Options.State), so that a query started
// again on the same state continues from the groups it had instead of from
// none.
//
// A group is stored under its key (the bytes it is looked up by, the same
// for the same key values) and its value is a version byte, the key
// columns' values and each aggregate's state, in the plan's order. The
// encoding is the plan's: a state written by one query is read only by
// the same query (the State checks that), so it holds no types.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// groupVersion is the first byte of a stored group; a value that starts
// with another was written by a kshare that stored groups otherwise.
const groupVersion = 1

var errShortGroup = errors.New("stored group ends early")

// appendKey appends group g's value to a group key, as vec.appendKey
// appends a row's: a group's key is the same bytes as those of the rows
// it folds.
func (s *store) appendKey(b []byte, g int32) []byte {
	if !s.valid[g] {
		return append(b, 0)
	}
	b = append(b, 1)
	switch s.ph {
	case pInt:
		return binary.LittleEndian.AppendUint64(b, uint64(s.ints[g]))
	case pFloat:
		return keyFloat(b, s.flts[g])
	case pDec:
		return appendDec(b, s.decs[g])
	case pStr:
		return appendText(b, s.strs[g])
	}
	return appendBool(b, s.bools[g])
}

// appendSaved appends group g's value as it is, valid or not: a SUM adds
// to its value without looking at valid.
func (s *store) appendSaved(b []byte, g int32) []byte {
	b = appendBool(b, s.valid[g])
	switch s.ph {
	case pInt:
		return binary.AppendVarint(b, s.ints[g])
	case pFloat:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(s.flts[g]))
	case pDec:
		return appendDec(b, s.decs[g])
	case pStr:
		return appendText(b, s.strs[g])
	case pBool:
		return appendBool(b, s.bools[g])
	}
	return b
}

// readSaved reads what appendSaved wrote into group g and returns the rest.
func (s *store) readSaved(b []byte, g int32) ([]byte, error) {
	if len(b) < 1 {
		return nil, errShortGroup
	}
	s.valid[g] = b[0] == 1
	b = b[1:]
	switch s.ph {
	case pInt:
		v, n := binary.Varint(b)
		if n <= 0 {
			return nil, errShortGroup
		}
		s.ints[g] = v
		return b[n:], nil
	case pFloat:
		if len(b) < 8 {
			return nil, errShortGroup
		}
		s.flts[g] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		return b[8:], nil
	case pDec:
		if len(b) < 16 {
			return nil, errShortGroup
		}
		s.decs[g] = decimal128.New(int64(binary.LittleEndian.Uint64(b[8:])), binary.LittleEndian.Uint64(b))
		return b[16:], nil
	case pStr:
		text, rest, err := readBytes(b)
		if err != nil {
			return nil, err
		}
		s.strs[g] = string(text)
		return rest, nil
	case pBool:
		if len(b) < 1 {
			return nil, errShortGroup
		}
		s.bools[g] = b[0] == 1
		return b[1:], nil
	}
	return b, nil
}

// readBytes reads a length and that many bytes.
func readBytes(b []byte) (text, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, nil, errShortGroup
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

func readCount(b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, nil, errShortGroup
	}
	return v, b[n:], nil
}

func (a *countAcc) save(b []byte, g int32) []byte { return binary.AppendVarint(b, a.n[g]) }

func (a *countAcc) load(b []byte, g int32) (rest []byte, err error) {
	a.n[g], rest, err = readCount(b)
	return rest, err
}

func (a *sumAcc) save(b []byte, g int32) []byte {
	return a.st.appendSaved(binary.AppendVarint(b, a.n[g]), g)
}

func (a *sumAcc) load(b []byte, g int32) (rest []byte, err error) {
	if a.n[g], rest, err = readCount(b); err != nil {
		return nil, err
	}
	return a.st.readSaved(rest, g)
}

func (a *minMaxAcc) save(b []byte, g int32) []byte { return a.st.appendSaved(b, g) }

func (a *minMaxAcc) load(b []byte, g int32) ([]byte, error) { return a.st.readSaved(b, g) }

func (a *listAggAcc) save(b []byte, g int32) []byte {
	if !a.has[g] {
		return append(b, 0)
	}
	return appendText(append(b, 1), a.text[g])
}

func (a *listAggAcc) load(b []byte, g int32) ([]byte, error) {
	if len(b) < 1 {
		return nil, errShortGroup
	}
	a.has[g], a.text[g] = b[0] == 1, nil
	if !a.has[g] {
		return b[1:], nil
	}
	text, rest, err := readBytes(b[1:])
	if err != nil {
		return nil, err
	}
	a.text[g] = append([]byte(nil), text...)
	return rest, nil
}

// save writes the values seen (each as its key bytes) and then inner's
// state.
func (a *distinctAcc) save(b []byte, g int32) []byte {
	b = binary.AppendUvarint(b, uint64(len(a.seen[g])))
	for v := range a.seen[g] {
		b = appendText(b, v)
	}
	return a.inner.save(b, g)
}

func (a *distinctAcc) load(b []byte, g int32) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errShortGroup
	}
	b = b[k:]
	a.seen[g] = nil
	if n > 0 {
		a.seen[g] = make(map[string]struct{}, n)
	}
	for range n {
		v, rest, err := readBytes(b)
		if err != nil {
			return nil, err
		}
		a.seen[g][string(v)] = struct{}{}
		b = rest
	}
	return a.inner.load(b, g)
}

// saveGroup returns group g's key and value as the State keeps them,
// appended to key and val.
func (s *aggState) saveGroup(key, val []byte, g int32) ([]byte, []byte) {
	for k := range s.keys {
		key = s.keys[k].appendKey(key, g)
	}
	val = append(val, groupVersion)
	for k := range s.keys {
		val = s.keys[k].appendSaved(val, g)
	}
	for _, a := range s.accs {
		val = a.save(val, g)
	}
	return key, val
}

// restoreGroup adds the group that saveGroup wrote as val, and returns
// it. It is for a query that has folded nothing yet: a group already
// there is an error.
func (s *aggState) restoreGroup(val []byte) (int32, error) {
	if len(val) == 0 || val[0] != groupVersion {
		return 0, fmt.Errorf("stored group of an unknown version (%d bytes); the state was written by another version of kshare", len(val))
	}
	g := s.slot()
	b := val[1:]
	var err error
	for k := range s.keys {
		if b, err = s.keys[k].readSaved(b, g); err != nil {
			return 0, err
		}
	}
	for _, a := range s.accs {
		if b, err = a.load(b, g); err != nil {
			return 0, err
		}
	}
	if len(b) != 0 {
		return 0, fmt.Errorf("stored group has %d bytes more than the query's groups hold; the state was written by another query", len(b))
	}
	if len(s.keys) == 1 && s.keys[0].ph == pStr {
		if !s.keys[0].valid[g] {
			if s.nullGroup >= 0 {
				return 0, errors.New("the NULL group is stored twice")
			}
			s.nullGroup = g
			return g, nil
		}
		if _, dup := s.groups[s.keys[0].strs[g]]; dup {
			return 0, fmt.Errorf("group %q is stored twice", s.keys[0].strs[g])
		}
		s.groups[s.keys[0].strs[g]] = g
		return g, nil
	}
	var key []byte
	for k := range s.keys {
		if k != s.implied && k != s.part {
			key = s.keys[k].appendKey(key, g)
		}
	}
	t := s.groups
	if s.part >= 0 {
		// A window's group, filed under its window_start.
		t = s.partition(s.keys[s.part].ints[g])
	}
	if _, dup := t[string(key)]; dup {
		return 0, errors.New("a group is stored twice")
	}
	t[string(key)] = g
	return g, nil
}
