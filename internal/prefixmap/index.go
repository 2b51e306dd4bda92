package prefixmap

import (
	"math/bits"
	"math/rand/v2"
	"sync/atomic"
)

// index is the hash from key to node that Lookup searches without a lock:
// an open-addressing table with linear probing. A key's node is in the
// first slot, from the key's home slot (its hash masked) on, whose hash is
// the key's and whose node has the key; the search stops at the first slot
// that was never used. A slot's hash is stored beside its node so that a
// search skips the other keys' slots without reading their nodes.
//
// Writers (under Map.mu) change what readers see with one atomic store at
// a time:
//   - a new key takes a slot that was never used, or a tombstone: the node
//     is stored first, then the hash, so a reader that sees the hash sees
//     the node;
//   - a node is replaced by a new node of the same key, in its slot;
//   - a removed key's slot keeps its hash and holds the table's tombstone,
//     so that the keys after it stay reachable;
//   - a ghost's slot (Map.ghosts) keeps its hash and holds the index's
//     ghost mark, a node whose key is no key's: readers pass it by as they
//     pass another key's node, and a writer that gives the key a value
//     again stores its node in a marked slot of the key's hash (which one
//     does not matter: a marked slot stands for any ghost of its hash);
//   - when the used slots (nodes and tombstones) would pass half of the
//     table, a new table is built from the stored hashes (one seed for the
//     index's life, so no node is read), without the tombstones, and
//     published in place of the old one, which readers still on it finish
//     with unchanged. The new table is at most 3/8 full, so a rebuild's
//     cost, which grows with the table, is spread over at least an eighth
//     of its slots' worth of inserts.
//
// The zero index is empty.
type index[V any] struct {
	tab    atomic.Pointer[table[V]]
	live   int // nodes in tab; writers only
	ghosts int // of them, nodes without values (Map.ghosts); writers only
	used   int // slots of tab with a hash: nodes and tombstones; writers only
}

type table[V any] struct {
	slots []slot[V]
	mask  uint64
	seed  [4]uint64
	tomb  *node[V] // the node of a removed key's slot
	ghost *node[V] // the node of a ghost's slot, the same in every table of the index
}

// ghostKey is the key of the ghost mark: of no family, so that no key
// equals it.
var ghostKey = key{meta: ^uint32(0)}

type slot[V any] struct {
	hash atomic.Uint64 // 0: never used
	node atomic.Pointer[node[V]]
}

const minSlots = 8

// newTable returns an empty table of n slots, a power of two, hashing with
// old's seed, or a new seed if old is nil.
func newTable[V any](n int, old *table[V]) *table[V] {
	t := &table[V]{slots: make([]slot[V], n), mask: uint64(n - 1), tomb: new(node[V])}
	if old != nil {
		t.seed, t.ghost = old.seed, old.ghost
	} else {
		t.ghost = &node[V]{key: ghostKey}
		for i := range t.seed {
			t.seed[i] = rand.Uint64()
		}
	}
	return t
}

// mix is a 64×64→128-bit multiply folded to 64 bits.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hash returns k's hash under t's seed; its top bit is set, so it is
// never 0 (an unused slot's). The home slot comes from the low bits.
func (t *table[V]) hash(k *key) uint64 {
	h := mix(k.hi^t.seed[0], k.lo^t.seed[1])
	h = mix(h^t.seed[2], (uint64(k.tag)<<32|uint64(k.meta))^t.seed[3])
	return h | 1<<63
}

// find returns the node of k, whose hash is h, or nil. It is the readers'
// search; it takes no lock.
func (t *table[V]) find(k *key, h uint64) *node[V] {
	_, n := t.lookup(k, h)
	return n
}

// lookup returns the slot holding k's node (hash h) and the node it
// loaded from it, or nil, nil: one load of the slot's node, so that a
// reader never returns a node a writer replaced between two.
func (t *table[V]) lookup(k *key, h uint64) (*slot[V], *node[V]) {
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		switch s.hash.Load() {
		case 0:
			return nil, nil
		case h:
			if n := s.node.Load(); n != nil && n != t.tomb && n.key == *k {
				return s, n
			}
		}
	}
}

// load returns the node of k, or nil; it takes no lock.
func (x *index[V]) load(k *key) *node[V] {
	t := x.tab.Load()
	if t == nil {
		return nil
	}
	return t.find(k, t.hash(k))
}

// store puts n under its key, in place of the key's node if it has one,
// and returns that node (nil if none). Writers only.
func (x *index[V]) store(n *node[V]) *node[V] {
	t := x.tab.Load()
	if t == nil {
		t = newTable[V](minSlots, nil)
		x.tab.Store(t)
	}
	h := t.hash(&n.key)
	free := -1 // the first tombstone on the way
	i := h & t.mask
	for ; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		sh := s.hash.Load()
		if sh == 0 {
			break
		}
		cur := s.node.Load()
		if cur == t.tomb {
			if free < 0 {
				free = int(i)
			}
			continue
		}
		if sh == h && cur.key == n.key {
			s.node.Store(n)
			return cur
		}
	}
	x.live++
	if free >= 0 {
		s := &t.slots[free]
		s.node.Store(n)
		s.hash.Store(h)
		return nil
	}
	if (x.used+1)*2 > len(t.slots) {
		x.rebuild(t, n)
		return nil
	}
	x.used++
	s := &t.slots[i]
	s.node.Store(n)
	s.hash.Store(h)
	return nil
}

// remove takes the node of k out and returns it (nil if there is none).
// Writers only.
func (x *index[V]) remove(k *key) *node[V] {
	t := x.tab.Load()
	if t == nil {
		return nil
	}
	s, n := t.lookup(k, t.hash(k))
	if n != nil {
		s.node.Store(t.tomb)
		x.live--
	}
	return n
}

// bury puts the ghost mark in place of the node of k, which x has.
// Writers only.
func (x *index[V]) bury(k *key) {
	t := x.tab.Load()
	s, _ := t.lookup(k, t.hash(k))
	s.node.Store(t.ghost)
}

// marked returns a slot of x holding the ghost mark under the hash of k,
// a ghost of x. Writers only.
func (x *index[V]) marked(k *key) *slot[V] {
	t := x.tab.Load()
	h := t.hash(k)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		if s := &t.slots[i]; s.hash.Load() == h && s.node.Load() == t.ghost {
			return s
		}
	}
}

// revive stores n, whose key is a ghost of x, in place of a ghost mark
// of its hash. Writers only.
func (x *index[V]) revive(n *node[V]) { x.marked(&n.key).node.Store(n) }

// purge takes k, a ghost of x, out: a ghost mark of its hash becomes a
// tombstone. Writers only.
func (x *index[V]) purge(k *key) {
	x.marked(k).node.Store(x.tab.Load().tomb)
	x.live--
}

// rebuild publishes a table with the live nodes of old and n (new, and
// counted in x.live already), at most 3/8 full.
func (x *index[V]) rebuild(old *table[V], n *node[V]) {
	size := minSlots
	for size*3 < x.live*8 {
		size *= 2
	}
	t := newTable(size, old)
	for i := range old.slots {
		s := &old.slots[i]
		if c := s.node.Load(); c != nil && c != old.tomb {
			t.put(c, s.hash.Load())
		}
	}
	t.put(n, t.hash(&n.key))
	x.used = x.live
	x.tab.Store(t)
}

// put adds n, whose hash is h and whose key t does not have, to t before t
// is published.
func (t *table[V]) put(n *node[V], h uint64) {
	i := h & t.mask
	for t.slots[i].hash.Load() != 0 {
		i = (i + 1) & t.mask
	}
	t.slots[i].node.Store(n)
	t.slots[i].hash.Store(h)
}
