// Package prefixmap is the read index of tcpsig's keyrings: values (MKTs,
// TCP-MD5 keys) indexed by (peer prefix, tag), looked up on every segment
// without a lock.
//
// It promises:
//   - [Map.Lookup] takes no lock and does not allocate, and its cost does not
//     grow with the number of entries: for each prefix length present in the
//     address's family, longest first, it makes one lookup in that length's
//     lock-free open-addressing hash, keyed by (masked address, length,
//     tag), which reads a slot and the node of the key it finds;
//   - [Map.Insert] and [Map.Delete] change only the entries they touch: one
//     slot of a hash and a few nodes of an ordered B-tree (its depth grows
//     with the logarithm of the number of entries, and each node is one run
//     of memory). A Delete of a (prefix, tag)'s last value leaves its key in
//     both for a while (a ghost, which no reader sees), so that inserting it
//     again (a key replaced, a configuration reloaded) changes one slot; a
//     later Delete purges it. The Insert that finds its length's hash half
//     full builds that hash again, twice as large, from the hashes it keeps
//     (without visiting the entries): a cost spread over the inserts before
//     the next one;
//   - prefixes are matched as Linux matches TCP-AO and TCP-MD5 keys:
//     host bits are ignored, a 0-length prefix
//     matches every address of its family and none of the other, and
//     IPv4-mapped IPv6 prefixes and addresses are IPv4.
//
// The tag is for the user: ao's keyring uses tag 0 and filters a
// prefix's few values itself; md5sig's tags a key bound to an L3 domain
// with its index.
//
// Lookup may visit a value that a concurrent Delete is removing, as a Linux
// RCU reader may; the keyrings pin values with package reclaim before using
// them.
package prefixmap

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// ErrPrefix is returned by [Map.Insert] for an invalid prefix: the zero
// Prefix, or an IPv4-mapped IPv6 prefix shorter than /96 (Linux refuses it
// with EINVAL).
var ErrPrefix = errors.New("prefixmap: invalid prefix")

// Map indexes values of type V by (prefix, tag). Several values may share
// one (prefix, tag).
//
// The zero Map is empty and ready to use. A Map must not be copied after
// first use.
type Map[V any] struct {
	// idx holds, per family and prefix length, the hash from key to node
	// (written under mu): a lookup's probes of the lengths with few
	// prefixes stay within small tables. It is allocated by the first
	// Insert, so that an empty Map stays small.
	idx  atomic.Pointer[[2][129]index[V]]
	lens [2][3]atomic.Uint64 // per family, bit b set if a prefix of length b is present (any tag)
	n    atomic.Int64        // number of values

	mu    sync.Mutex      // serialises writers; guards the fields below
	trees map[tree]*btree // per family and tag, the keys ordered by (address, length)
	// ghosts holds the keys whose last value was deleted, each with its
	// turn in turns: each stays in its hash (as a ghost mark, which no
	// reader sees) and in its B-tree, so that an Insert of the key again
	// changes neither, until purgeGhosts takes it out. turns lists them
	// oldest first, from turns[gone]; an entry whose key is no longer a
	// ghost of its turn (given a value again) is passed over.
	ghosts map[key]uint64
	turns  []turn
	gone   int
	next   uint64 // the next ghost's turn
}

// turn is an entry of Map.turns: key k became a ghost at turn n.
type turn struct {
	k key
	n uint64
}

// A Delete that leaves a ghost purges the oldest ghosts while more than
// maxGhosts plus an eighth of the values are left: the ghosts stay a
// bounded share of the index, and each costs one purge, as the Delete
// that made it would have.
const maxGhosts = 64

// node holds the values of one (prefix, tag). Readers see only key and
// vals, which never change once the node is published: a writer that
// changes the values of a (prefix, tag) publishes a new node in place of the
// old one.
type node[V any] struct {
	key  key
	vals []V  // newest first
	inl  [2]V // vals' backing array when it holds one or two values (a key in rotation): one allocation, one cache miss less
}

// index returns the hash of k's family and length, allocating the
// hashes if alloc; nil if they are not allocated. Writers only.
func (m *Map[V]) index(k *key, alloc bool) *index[V] {
	ix := m.idx.Load()
	if ix == nil {
		if !alloc {
			return nil
		}
		ix = new([2][129]index[V])
		m.idx.Store(ix)
	}
	return &ix[k.family()][k.bits()]
}

// withValue returns a node of k holding v followed by rest.
func withValue[V any](k key, v V, rest []V) *node[V] {
	n := sized[V](k, len(rest)+1)
	n.vals = append(append(n.vals, v), rest...)
	return n
}

// without returns a node of k holding vals without vals[i].
func without[V any](k key, vals []V, i int) *node[V] {
	n := sized[V](k, len(vals)-1)
	n.vals = append(append(n.vals, vals[:i]...), vals[i+1:]...)
	return n
}

// sized returns an empty node of k with room for size values: inline
// when they fit.
func sized[V any](k key, size int) *node[V] {
	n := &node[V]{key: k}
	n.vals = n.inl[:0]
	if size > len(n.inl) {
		n.vals = make([]V, 0, size)
	}
	return n
}

// Insert adds v under (p, tag). p is masked; an IPv4-mapped IPv6 prefix of
// length 96 or more is stored as the IPv4 prefix it maps. Values sharing a
// (prefix, tag) are visited newest first. Insert does not check for
// duplicates: keyrings call [Map.Overlaps] first.
func (m *Map[V]) Insert(p netip.Prefix, tag uint32, v V) error {
	k, ok := keyOf(p, tag)
	if !ok {
		return ErrPrefix
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	x := m.index(&k, true)
	if old := x.load(&k); old != nil {
		m.replace(withValue(k, v, old.vals))
		m.n.Add(1)
		return nil
	}
	ghosts := len(m.ghosts)
	delete(m.ghosts, k)         // whether k was a ghost is whether ghosts shrank: one map operation
	if len(m.ghosts) < ghosts { // its key is in the B-tree already
		x.revive(withValue(k, v, nil))
		if x.ghosts--; x.live-x.ghosts == 1 {
			m.lens[k.family()][k.bits()/64].Or(1 << (k.bits() % 64))
		}
	} else {
		x.store(withValue(k, v, nil))
		if m.trees == nil {
			m.trees = make(map[tree]*btree)
		}
		t := m.trees[k.tree()]
		if t == nil {
			t = &btree{id: k.tree()}
			m.trees[k.tree()] = t
		}
		t.insert(&k)
		if fam, b := k.family(), k.bits(); x.live-x.ghosts == 1 {
			m.lens[fam][b/64].Or(1 << (b % 64))
		}
	}
	m.n.Add(1)
	return nil
}

// Delete removes the newest value under (p, tag) for which match returns
// true (any value if match is nil) and returns it. p is normalised as in
// [Map.Insert]. A Lookup already running may still visit the value.
func (m *Map[V]) Delete(p netip.Prefix, tag uint32, match func(V) bool) (V, bool) {
	var zero V
	k, ok := keyOf(p, tag)
	if !ok {
		return zero, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	x := m.index(&k, false)
	if x == nil {
		return zero, false
	}
	n := x.load(&k)
	if n == nil || len(n.vals) == 0 {
		return zero, false
	}
	i := 0
	if match != nil {
		i = slices.IndexFunc(n.vals, match)
		if i < 0 {
			return zero, false
		}
	}
	v := n.vals[i]
	m.n.Add(-1)
	if len(n.vals) > 1 {
		m.replace(without(k, n.vals, i))
		return v, true
	}
	x.bury(&k)
	if x.ghosts++; x.live-x.ghosts == 0 {
		m.lens[k.family()][k.bits()/64].And(^(1 << (k.bits() % 64)))
	}
	if m.ghosts == nil {
		m.ghosts = make(map[key]uint64)
	}
	m.ghosts[k] = m.next
	m.turns = append(m.turns, turn{k, m.next})
	m.next++
	m.purgeGhosts()
	return v, true
}

// purgeGhosts takes the oldest ghosts out while there are more than the
// bound of maxGhosts (all of them once m holds no value), and keeps turns
// within twice the ghosts' number plus maxGhosts.
func (m *Map[V]) purgeGhosts() {
	keep := 0
	if values := int(m.n.Load()); values > 0 {
		keep = maxGhosts + values/8
	}
	for len(m.ghosts) > keep {
		t := &m.turns[m.gone]
		m.gone++
		if n, ok := m.ghosts[t.k]; ok && n == t.n {
			m.purge(&t.k)
		}
	}
	switch live := m.turns[m.gone:]; {
	case len(m.ghosts) == 0:
		m.ghosts, m.turns, m.gone = nil, nil, 0 // let them go of their memory
	case len(live) > 2*len(m.ghosts)+maxGhosts: // keep the ghosts' turns only
		n := 0
		for _, t := range live {
			if g, ok := m.ghosts[t.k]; ok && g == t.n {
				m.turns[n] = t
				n++
			}
		}
		clear(m.turns[n:])
		m.turns, m.gone = m.turns[:n], 0
	case m.gone > len(m.turns)/2: // reuse the array's front, in place
		m.turns = m.turns[:copy(m.turns, live)]
		m.gone = 0
	}
}

// purge takes k, a ghost, out of its hash and B-tree.
func (m *Map[V]) purge(k *key) {
	delete(m.ghosts, *k)
	x := m.index(k, false)
	x.purge(k)
	x.ghosts--
	t := m.trees[k.tree()]
	if t.remove(k); t.len == 0 {
		delete(m.trees, k.tree())
	}
}

// replace publishes n, with new values, in place of the node of its key
// (the B-tree holds keys only: it does not change).
func (m *Map[V]) replace(n *node[V]) {
	m.index(&n.key, true).store(n)
}

// valuesOf returns the values of k, a key of a B-tree (none for a
// ghost), for a walk of it; writers only.
func (m *Map[V]) valuesOf(k *key) []V {
	if n := m.index(k, false).load(k); n != nil {
		return n.vals
	}
	return nil
}

// Lookup calls fn for every value whose prefix contains addr and whose tag
// is tag, longest prefix first (newest first within one prefix), until fn
// returns false. An IPv4-mapped addr is looked up as IPv4; a zone is
// ignored. Lookup takes no lock and does not allocate; it may run
// concurrently with writers, and then sees each (prefix, tag) either before
// or after a write.
func (m *Map[V]) Lookup(addr netip.Addr, tag uint32, fn func(p netip.Prefix, v V) bool) {
	addr = addr.Unmap()
	if !addr.IsValid() {
		return
	}
	k := key{tag: tag}
	k.setAddr(addr)
	m.containing(k, maxBits(k.family()), fn)
}

// containing visits the values under (prefix of k's address, k's tag) for
// every present prefix length up to maxLen, longest first. It reports
// whether fn asked to go on. It is the readers' loop: the writers'
// OverlapsWithin, which also skips the lengths below a shortest, has a
// loop of its own (containingWithin), so that what that costs is not
// Lookup's.
func (m *Map[V]) containing(k key, maxLen int, fn func(netip.Prefix, V) bool) bool {
	ix := m.idx.Load()
	if ix == nil {
		return true
	}
	fam := k.family()
	hi, lo := k.hi, k.lo
	for w := maxLen / 64; w >= 0; w-- {
		set := m.lens[fam][w].Load()
		if w == maxLen/64 {
			set &= 2<<(maxLen%64) - 1 // lengths <= maxLen
		}
		for set != 0 {
			i := bits.Len64(set) - 1
			set &^= 1 << i
			k.setMasked(hi, lo, fam, w*64+i)
			t := ix[fam][w*64+i].tab.Load()
			if t == nil {
				continue
			}
			n := t.find(&k, t.hash(&k))
			if n == nil {
				continue
			}
			p := n.key.prefix()
			for _, v := range n.vals {
				if !fn(p, v) {
					return false
				}
			}
		}
	}
	return true
}

// containingWithin is containing for the present prefix lengths in lens
// (Min at least 0, Max at most k's length); writers only.
func (m *Map[V]) containingWithin(k key, lens Lengths, fn func(netip.Prefix, V) bool) bool {
	if m.idx.Load() == nil || lens.Min > lens.Max {
		return true
	}
	fam := k.family()
	for w := lens.Max / 64; w >= lens.Min/64; w-- {
		set := m.lens[fam][w].Load()
		if w == lens.Max/64 {
			set &= 2<<(lens.Max%64) - 1 // lengths <= Max
		}
		if w == lens.Min/64 {
			set &^= 1<<(lens.Min%64) - 1 // lengths >= Min
		}
		for set != 0 {
			i := bits.Len64(set) - 1
			set &^= 1 << i
			at := k
			at.setMasked(k.hi, k.lo, fam, w*64+i)
			n := m.index(&at, false).load(&at)
			if n == nil {
				continue
			}
			p := n.key.prefix()
			for _, v := range n.vals {
				if !fn(p, v) {
					return false
				}
			}
		}
	}
	return true
}

// Overlaps calls fn for every value with tag tag whose prefix overlaps p:
// first those whose prefix contains p (p itself included), longest first,
// then those whose prefix lies strictly inside p, in address order; until fn
// returns false. It is the check Linux makes before adding a key (RFC 5925
// §3.1: IDs of MKTs must not overlap where their connection identifiers
// do). It costs one hash lookup per present prefix length plus a walk of an
// ordered tree (a B-tree) that visits only the entries inside p.
//
// Overlaps holds the Map's writer lock while it runs: fn must not call
// Insert or Delete on the same Map.
func (m *Map[V]) Overlaps(p netip.Prefix, tag uint32, fn func(p netip.Prefix, v V) bool) {
	m.OverlapsWithin(p, tag, Lengths{0, 128}, fn)
}

// Lengths is a range of prefix lengths, Min to Max included; for an
// IPv4-mapped prefix, the lengths of the IPv4 prefixes it is stored as.
type Lengths struct{ Min, Max int }

// OverlapsWithin is Overlaps visiting only the prefixes whose length is in
// lens: for a caller that knows no other can matter to fn, it probes only
// the hashes of those lengths, and walks the B-tree only if a length in
// lens is longer than p's.
func (m *Map[V]) OverlapsWithin(p netip.Prefix, tag uint32, lens Lengths, fn func(p netip.Prefix, v V) bool) {
	k, ok := keyOf(p, tag)
	if !ok {
		return
	}
	lens.Min = max(lens.Min, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.containingWithin(k, Lengths{lens.Min, min(lens.Max, k.bits())}, fn) || k.bits() >= min(lens.Max, maxBits(k.family())) {
		return // none inside p has a length in lens (a host prefix has none inside it)
	}
	last := k // the highest address in p
	if k.family() == ipv4 {
		last.lo |= uint64(^uint32(0) >> k.bits())
	} else {
		last.hi, last.lo = k.hi|^maskHi(ipv6, k.bits()), k.lo|^maskLo(ipv6, k.bits())
	}
	m.trees[k.tree()].inside(k, last, func(in key) bool {
		// p itself was visited above; lengths out of lens are not.
		if in.bits() == k.bits() || in.bits() < lens.Min || in.bits() > lens.Max {
			return true
		}
		p := in.prefix()
		for _, v := range m.valuesOf(&in) {
			if !fn(p, v) {
				return false
			}
		}
		return true
	})
}

// Len returns the number of values in the Map.
func (m *Map[V]) Len() int {
	return int(m.n.Load())
}

// Range calls fn for every value, until fn returns false: IPv4 before IPv6,
// tags in increasing order, prefixes in address order and shorter first,
// newest first within one (prefix, tag). It holds the Map's writer lock
// while it runs: fn must not call Insert or Delete on the same Map.
func (m *Map[V]) Range(fn func(p netip.Prefix, tag uint32, v V) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := make([]tree, 0, len(m.trees))
	for t := range m.trees {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	for _, t := range ts {
		first, last := key{}, key{hi: ^uint64(0), lo: ^uint64(0), meta: ^uint32(0)}
		ok := m.trees[t].inside(first, last, func(k key) bool {
			p := k.prefix()
			for _, v := range m.valuesOf(&k) {
				if !fn(p, t.tag(), v) {
					return false
				}
			}
			return true
		})
		if !ok {
			return
		}
	}
}

// keyOf normalises p as Linux does when it stores a key and returns the
// index key of (p, tag).
func keyOf(p netip.Prefix, tag uint32) (key, bool) {
	if !p.IsValid() {
		return key{}, false
	}
	a, b := p.Addr(), p.Bits()
	if a.Is4In6() {
		if b < 96 {
			return key{}, false
		}
		a, b = a.Unmap(), b-96
	}
	k := key{tag: tag}
	k.setAddr(a)
	k.setMasked(k.hi, k.lo, k.family(), b)
	return k, true
}

// key is what the hash is keyed by: a masked address, its prefix length,
// family and tag: a fixed-size comparable struct with no pointers, compared
// with == and hashed by its words.
type key struct {
	hi, lo uint64 // the address; IPv4 in the low 32 bits of lo
	tag    uint32
	meta   uint32 // prefix length | family<<8
}

const (
	ipv4 = 0
	ipv6 = 1
)

func maxBits(fam int) int { return 32 + 96*fam }

func (k key) family() int { return int(k.meta >> 8) }
func (k key) bits() int   { return int(k.meta & 0xff) }

// tree identifies one ordered tree, the keys of one family and tag: the
// family above the tag, so that trees sort by family, then tag.
type tree uint64

func (k key) tree() tree { return tree(uint64(k.family())<<32 | uint64(k.tag)) }

func (t tree) tag() uint32 { return uint32(t) }
func (t tree) fam() int    { return int(t >> 32) }

// setAddr stores a (IPv4, or IPv6 that is not IPv4-mapped) as a full-length
// prefix.
func (k *key) setAddr(a netip.Addr) {
	if a.Is4() {
		b := a.As4()
		k.hi, k.lo, k.meta = 0, uint64(binary.BigEndian.Uint32(b[:])), 32|ipv4<<8
		return
	}
	b := a.As16()
	k.hi, k.lo, k.meta = binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:]), 128|ipv6<<8
}

// setMasked stores the address (hi, lo) of family fam masked to its first
// length bits.
func (k *key) setMasked(hi, lo uint64, fam, length int) {
	k.hi, k.lo = hi&maskHi(fam, length), lo&maskLo(fam, length)
	k.meta = uint32(length) | uint32(fam)<<8
}

// maskHi and maskLo return the network mask of a prefix of the given length,
// in the layout of key.hi and key.lo. Go defines shifts by 64 or more as
// giving 0, which the lengths 0, 64 and 128 rely on.
func maskHi(fam, length int) uint64 {
	if fam == ipv4 {
		return 0
	}
	return ^uint64(0) << max(64-length, 0)
}

func maskLo(fam, length int) uint64 {
	if fam == ipv4 {
		return uint64(^uint32(0) << (32 - length))
	}
	return ^uint64(0) << (128 - max(length, 64))
}

func (k key) prefix() netip.Prefix {
	if k.family() == ipv4 {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(k.lo))
		return netip.PrefixFrom(netip.AddrFrom4(b), k.bits())
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k.hi)
	binary.BigEndian.PutUint64(b[8:], k.lo)
	return netip.PrefixFrom(netip.AddrFrom16(b), k.bits())
}
