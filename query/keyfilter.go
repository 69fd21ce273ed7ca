package query

// This file is the filter of the keys of groups that a GROUP BY keeps on
// disk and not in memory (see aggState.stored): a row whose group is in
// neither memory nor the filter is a new group, made without asking the
// State, so that a stream of new keys costs no disk reads.

import "hash/maphash"

// keyFilter is a Bloom filter that grows: a filter of twice the keys of
// the last is added once that one holds as many keys as it was sized for,
// so that its false positives stay near 1% however many keys come (a
// scalable Bloom filter). A false positive costs a lookup in the State
// that finds nothing; a key added is always found.
type keyFilter struct {
	seed  maphash.Seed
	parts []bloomPart
}

// bloomPart is one filter of keyFilter: bits, sized for keys keys at ten
// bits each, and n the keys added.
type bloomPart struct {
	bits    []uint64
	n, keys int
}

// bloomHashes is how many bits a key sets: the best for ten bits a key.
const bloomHashes = 7

// firstFilterKeys is how many keys the first filter is sized for (160 KiB).
const firstFilterKeys = 1 << 17

func newKeyFilter() *keyFilter { return &keyFilter{seed: maphash.MakeSeed()} }

// add adds key.
func (f *keyFilter) add(key []byte) {
	if len(f.parts) == 0 || f.parts[len(f.parts)-1].n >= f.parts[len(f.parts)-1].keys {
		keys := firstFilterKeys
		if len(f.parts) > 0 {
			keys = 2 * f.parts[len(f.parts)-1].keys
		}
		f.parts = append(f.parts, bloomPart{bits: make([]uint64, keys*10/64), keys: keys})
	}
	p := &f.parts[len(f.parts)-1]
	h1, h2 := f.hash(key)
	m := uint64(len(p.bits) * 64)
	for i := range uint64(bloomHashes) {
		b := (h1 + i*h2) % m
		p.bits[b/64] |= 1 << (b % 64)
	}
	p.n++
}

// mayHold reports whether key may have been added: false means surely not.
func (f *keyFilter) mayHold(key []byte) bool {
	if len(f.parts) == 0 {
		return false
	}
	h1, h2 := f.hash(key)
next:
	for _, p := range f.parts {
		m := uint64(len(p.bits) * 64)
		for i := range uint64(bloomHashes) {
			b := (h1 + i*h2) % m
			if p.bits[b/64]&(1<<(b%64)) == 0 {
				continue next
			}
		}
		return true
	}
	return false
}

// hash gives the two hashes whose combinations pick a key's bits.
func (f *keyFilter) hash(key []byte) (uint64, uint64) {
	h := maphash.Bytes(f.seed, key)
	return h & 0xffffffff, h>>32 | 1
}
