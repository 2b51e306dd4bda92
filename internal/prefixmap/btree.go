package prefixmap

import "cmp"

// The writers keep, for each family and tag, the nodes in a B-tree ordered
// by (address, length). It answers the one question the hash cannot: which
// prefixes lie inside p (those whose masked address is in p's range). A
// B-tree node holds up to 2·btreeT−1 keys next to each other, so an insert
// or a delete visits a few nodes (a handful of levels even at a million
// prefixes) rather than one scattered node per level of a binary tree.
// Only writers touch it, under Map.mu.
//
// The algorithms are the textbook ones: an insert splits every full node
// on its way down, a delete makes every node it descends into hold at
// least btreeT keys first (with a key from a sibling, or by merging two
// siblings), so neither walks back up.

// btreeT is the B-tree's minimum degree: every node but the root holds
// btreeT−1 to 2·btreeT−1 items.
const btreeT = 16

// item is a key of the tree and the node that has it.
type item[V any] struct {
	k key
	n *node[V]
}

type bnode[V any] struct {
	n     int
	items [2*btreeT - 1]item[V]
	kids  []*bnode[V] // 2·btreeT slots in an inner node; nil in a leaf
}

// btree is one ordered tree; its zero value is empty.
type btree[V any] struct {
	root *bnode[V]
	len  int
}

// compare orders keys of one tree by address, then length. (cmp.Or would
// compare all three fields before choosing; the address alone decides
// nearly every comparison of a search.)
func compare(a, b *key) int {
	if c := compareAddr(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.bits(), b.bits())
}

// compareAddr orders keys of one tree by address only.
func compareAddr(a, b *key) int {
	switch {
	case a.hi != b.hi:
		return cmp.Compare(a.hi, b.hi)
	case a.lo != b.lo:
		return cmp.Compare(a.lo, b.lo)
	}
	return 0
}

// search returns the index of the first item of b not below k, and whether
// it is k.
func (b *bnode[V]) search(k *key) (int, bool) {
	lo, hi := 0, b.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compare(&b.items[m].k, k) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < b.n && compare(&b.items[lo].k, k) == 0
}

func newInner[V any]() *bnode[V] { return &bnode[V]{kids: make([]*bnode[V], 2*btreeT)} }

// insert adds n, whose key is not in t.
func (t *btree[V]) insert(n *node[V]) {
	if t.root == nil {
		t.root = new(bnode[V])
	}
	if t.root.n == len(t.root.items) {
		r := newInner[V]()
		r.kids[0] = t.root
		r.split(0)
		t.root = r
	}
	t.root.insertNonFull(item[V]{n.key, n})
	t.len++
}

// split splits b's full child i in two around its median item, which
// moves up into b (which is not full).
func (b *bnode[V]) split(i int) {
	y := b.kids[i]
	z := new(bnode[V])
	if y.kids != nil {
		z.kids = make([]*bnode[V], 2*btreeT)
		copy(z.kids, y.kids[btreeT:])
		clear(y.kids[btreeT:])
	}
	copy(z.items[:], y.items[btreeT:])
	z.n, y.n = btreeT-1, btreeT-1
	mid := y.items[btreeT-1]
	clear(y.items[btreeT-1:])
	copy(b.kids[i+2:b.n+2], b.kids[i+1:b.n+1])
	b.kids[i+1] = z
	copy(b.items[i+1:b.n+1], b.items[i:b.n])
	b.items[i] = mid
	b.n++
}

func (b *bnode[V]) insertNonFull(it item[V]) {
	for {
		i, _ := b.search(&it.k)
		if b.kids == nil {
			copy(b.items[i+1:b.n+1], b.items[i:b.n])
			b.items[i] = it
			b.n++
			return
		}
		if b.kids[i].n == len(b.items) {
			b.split(i)
			if compare(&it.k, &b.items[i].k) > 0 {
				i++
			}
		}
		b = b.kids[i]
	}
}

// set makes n the node of its key, which t has.
func (t *btree[V]) set(n *node[V]) {
	for b := t.root; b != nil; {
		i, ok := b.search(&n.key)
		if ok {
			b.items[i].n = n
			return
		}
		if b.kids == nil {
			return
		}
		b = b.kids[i]
	}
}

// remove takes the item of k out of t, if t has it.
func (t *btree[V]) remove(k *key) {
	if t.root == nil {
		return
	}
	if t.root.remove(k) {
		t.len--
	}
	if r := t.root; r.n == 0 {
		if r.kids != nil {
			t.root = r.kids[0]
		} else {
			t.root = nil
		}
	}
}

// remove takes k out of the subtree of b, which holds at least btreeT
// items unless it is the root, and reports whether it was there.
func (b *bnode[V]) remove(k *key) bool {
	for {
		i, found := b.search(k)
		if b.kids == nil {
			if !found {
				return false
			}
			b.deleteItem(i)
			return true
		}
		if found {
			switch {
			case b.kids[i].n >= btreeT:
				pred := b.kids[i].last()
				b.items[i] = pred
				b, k = b.kids[i], &pred.k
			case b.kids[i+1].n >= btreeT:
				succ := b.kids[i+1].first()
				b.items[i] = succ
				b, k = b.kids[i+1], &succ.k
			default:
				b.merge(i)
				b = b.kids[i]
			}
			continue
		}
		if b.kids[i].n < btreeT {
			i = b.fill(i)
		}
		b = b.kids[i]
	}
}

// deleteItem removes item i of b; b's children are the caller's to move.
func (b *bnode[V]) deleteItem(i int) {
	copy(b.items[i:], b.items[i+1:b.n])
	b.items[b.n-1] = item[V]{}
	b.n--
}

func (b *bnode[V]) first() item[V] {
	for b.kids != nil {
		b = b.kids[0]
	}
	return b.items[0]
}

func (b *bnode[V]) last() item[V] {
	for b.kids != nil {
		b = b.kids[b.n]
	}
	return b.items[b.n-1]
}

// merge joins b's child i, item i and child i+1 (both children with
// btreeT−1 items) into child i.
func (b *bnode[V]) merge(i int) {
	y, z := b.kids[i], b.kids[i+1]
	y.items[y.n] = b.items[i]
	copy(y.items[y.n+1:], z.items[:z.n])
	if y.kids != nil {
		copy(y.kids[y.n+1:], z.kids[:z.n+1])
	}
	y.n += 1 + z.n
	b.deleteItem(i)
	copy(b.kids[i+1:], b.kids[i+2:b.n+2])
	b.kids[b.n+1] = nil
}

// fill gives b's child i, which has btreeT−1 items, one more: from a
// sibling that can spare one, through b, or by merging it with a sibling.
// It returns the index of the child that now holds child i's items.
func (b *bnode[V]) fill(i int) int {
	c := b.kids[i]
	switch {
	case i > 0 && b.kids[i-1].n >= btreeT:
		l := b.kids[i-1]
		copy(c.items[1:c.n+1], c.items[:c.n])
		c.items[0] = b.items[i-1]
		b.items[i-1] = l.items[l.n-1]
		l.items[l.n-1] = item[V]{}
		if c.kids != nil {
			copy(c.kids[1:c.n+2], c.kids[:c.n+1])
			c.kids[0] = l.kids[l.n]
			l.kids[l.n] = nil
		}
		c.n++
		l.n--
		return i
	case i < b.n && b.kids[i+1].n >= btreeT:
		r := b.kids[i+1]
		c.items[c.n] = b.items[i]
		b.items[i] = r.items[0]
		if c.kids != nil {
			c.kids[c.n+1] = r.kids[0]
			copy(r.kids, r.kids[1:r.n+1])
			r.kids[r.n] = nil
		}
		r.deleteItem(0)
		c.n++
		return i
	case i < b.n:
		b.merge(i)
		return i
	default:
		b.merge(i - 1)
		return i - 1
	}
}

// inside calls fn, in order, for the nodes of t whose address lies in
// [first, last] and whose length is at least first's, until fn returns
// false, and reports whether it did not. It descends only into the
// subtrees that can hold such addresses, so the walk costs O(depth +
// nodes visited).
func (t *btree[V]) inside(first, last key, fn func(*node[V]) bool) bool {
	if t == nil || t.root == nil {
		return true
	}
	return t.root.inside(&first, &last, fn)
}

func (b *bnode[V]) inside(first, last *key, fn func(*node[V]) bool) bool {
	// The first item whose address is not below first's.
	lo, hi := 0, b.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if compareAddr(&b.items[m].k, first) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo; ; i++ {
		if b.kids != nil && !b.kids[i].inside(first, last, fn) {
			return false
		}
		if i == b.n {
			return true
		}
		it := &b.items[i]
		if compareAddr(&it.k, last) > 0 {
			return true
		}
		if it.k.bits() >= first.bits() && !fn(it.n) {
			return false
		}
	}
}
