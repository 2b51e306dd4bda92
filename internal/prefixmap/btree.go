package prefixmap

import "cmp"

// The writers keep, for each family and tag, the keys in a B-tree ordered
// by (address, length). It answers the one question the hash cannot: which
// prefixes lie inside p (those whose masked address is in p's range); the
// nodes of the keys it finds are the hash's. A B-tree node holds up to
// 2·btreeT−1 keys next to each other, so an insert or a delete visits a few
// nodes (a handful of levels even at a million prefixes) rather than one
// scattered node per level of a binary tree. Only writers touch it, under
// Map.mu.
//
// The algorithms are the textbook ones: an insert splits every full node
// on its way down, a delete makes every node it descends into hold at
// least btreeT keys first (with a key from a sibling, or by merging two
// siblings), so neither walks back up.

// btreeT is the B-tree's minimum degree: every node but the root holds
// btreeT−1 to 2·btreeT−1 keys.
const btreeT = 16

// bnode is a node of the B-tree. A search reads ord, one word per key
// (four cache lines a node). In an IPv4 tree the word is the key (its
// address and length; the tag is the tree's), so a node holds nothing
// else; in an IPv6 tree ext holds the keys, read only where ords tie.
type bnode struct {
	n    int
	ord  [2*btreeT - 1]uint64 // ordOf of each key
	ext  *[2*btreeT - 1]key   // the keys, in an IPv6 tree's node (in its allocation); nil in an IPv4 tree
	kids []*bnode             // 2·btreeT slots in an inner node, in its allocation; nil in a leaf
}

// btree is one ordered tree, of the keys of tree id; its zero value is
// empty, for IPv4 and tag 0.
type btree struct {
	root *bnode
	len  int
	id   tree
}

// ordOf is a word that orders keys of one tree as compare does where the
// words differ: an IPv4 key's address and length (all of the key but its
// tree), an IPv6 key's first 64 bits.
func ordOf(k *key) uint64 {
	if k.family() == ipv4 {
		return k.lo<<8 | uint64(k.bits())
	}
	return k.hi
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

// below reports whether key i of b, whose ord is o, is below k.
func (b *bnode) below(i int, o uint64, k *key) bool {
	return b.ord[i] < o || b.ord[i] == o && b.ext != nil && compare(&b.ext[i], k) < 0
}

// search returns the index of the first key of b not below k, and whether
// it is k.
func (b *bnode) search(k *key) (int, bool) {
	o := ordOf(k)
	if b.ext == nil && b.n > 0 { // IPv4: ord is the key, and the halving needs no branch
		base, n := 0, b.n
		for n > 1 {
			half := n >> 1
			if b.ord[base+half-1] < o {
				base += half
			}
			n -= half
		}
		if b.ord[base] < o {
			base++
		}
		return base, base < b.n && b.ord[base] == o
	}
	lo, hi := 0, b.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.below(m, o, k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < b.n && b.ord[lo] == o && (b.ext == nil || b.ext[lo] == *k)
}

// key returns key i of b, a node of tree id.
func (b *bnode) key(i int, id tree) key {
	if b.ext != nil {
		return b.ext[i]
	}
	k := key{tag: id.tag()}
	k.setMasked(0, b.ord[i]>>8, ipv4, int(b.ord[i]&0xff))
	return k
}

// newBnode returns an empty node, inner or a leaf, for an IPv6 tree or an
// IPv4 one: one allocation with its children's slots and its keys.
func newBnode(inner, v6 bool) *bnode {
	switch {
	case inner && v6:
		s := &struct {
			b    bnode
			kids [2 * btreeT]*bnode
			keys [2*btreeT - 1]key
		}{}
		s.b.kids, s.b.ext = s.kids[:], &s.keys
		return &s.b
	case inner:
		s := &struct {
			b    bnode
			kids [2 * btreeT]*bnode
		}{}
		s.b.kids = s.kids[:]
		return &s.b
	case v6:
		s := &struct {
			b    bnode
			keys [2*btreeT - 1]key
		}{}
		s.b.ext = &s.keys
		return &s.b
	}
	return new(bnode)
}

// put makes key i of b key j of from.
func (b *bnode) put(i int, from *bnode, j int) {
	b.ord[i] = from.ord[j]
	if b.ext != nil {
		b.ext[i] = from.ext[j]
	}
}

// set makes key i of b k.
func (b *bnode) set(i int, k *key) {
	b.ord[i] = ordOf(k)
	if b.ext != nil {
		b.ext[i] = *k
	}
}

// moveKeys moves b's keys [from, b.n) to start at to.
func (b *bnode) moveKeys(to, from int) {
	copy(b.ord[to:], b.ord[from:b.n])
	if b.ext != nil {
		copy(b.ext[to:], b.ext[from:b.n])
	}
}

// copyKeys makes keys [to, to+n) of b keys [from, from+n) of src.
func (b *bnode) copyKeys(to int, src *bnode, from, n int) {
	copy(b.ord[to:], src.ord[from:from+n])
	if b.ext != nil {
		copy(b.ext[to:], src.ext[from:from+n])
	}
}

// insert adds k, which is not in t.
func (t *btree) insert(k *key) {
	v6 := t.id.fam() == ipv6
	if t.root == nil {
		t.root = newBnode(false, v6)
	}
	if t.root.n == len(t.root.ord) {
		r := newBnode(true, v6)
		r.kids[0] = t.root
		r.split(0)
		t.root = r
	}
	t.root.insertNonFull(k)
	t.len++
}

// split splits b's full child i in two around its median key, which
// moves up into b (which is not full).
func (b *bnode) split(i int) {
	y := b.kids[i]
	z := newBnode(y.kids != nil, y.ext != nil)
	if y.kids != nil {
		copy(z.kids, y.kids[btreeT:])
		clear(y.kids[btreeT:])
	}
	z.copyKeys(0, y, btreeT, btreeT-1)
	z.n, y.n = btreeT-1, btreeT-1
	copy(b.kids[i+2:b.n+2], b.kids[i+1:b.n+1])
	b.kids[i+1] = z
	b.moveKeys(i+1, i)
	b.put(i, y, btreeT-1)
	b.n++
}

func (b *bnode) insertNonFull(k *key) {
	for {
		i, _ := b.search(k)
		if b.kids == nil {
			b.moveKeys(i+1, i)
			b.set(i, k)
			b.n++
			return
		}
		if b.kids[i].n == len(b.ord) {
			b.split(i)
			if o := ordOf(k); b.below(i, o, k) { // k is not key i, which came from below
				i++
			}
		}
		b = b.kids[i]
	}
}

// remove takes k out of t, if t has it.
func (t *btree) remove(k *key) {
	if t.root == nil {
		return
	}
	if t.root.remove(*k, t.id) {
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
// keys unless it is the root, and reports whether it was there.
func (b *bnode) remove(k key, id tree) bool {
	for {
		i, found := b.search(&k)
		if b.kids == nil {
			if !found {
				return false
			}
			b.deleteKey(i)
			return true
		}
		if found {
			switch {
			case b.kids[i].n >= btreeT:
				l, j := b.kids[i].last()
				b.put(i, l, j)
				b, k = b.kids[i], l.key(j, id)
			case b.kids[i+1].n >= btreeT:
				f := b.kids[i+1].first()
				b.put(i, f, 0)
				b, k = b.kids[i+1], f.key(0, id)
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

// deleteKey removes key i of b; b's children are the caller's to move.
func (b *bnode) deleteKey(i int) {
	b.moveKeys(i, i+1)
	b.n--
}

// first returns the leftmost leaf under b (its key 0 is the smallest).
func (b *bnode) first() *bnode {
	for b.kids != nil {
		b = b.kids[0]
	}
	return b
}

// last returns the rightmost leaf under b and the index of its largest key.
func (b *bnode) last() (*bnode, int) {
	for b.kids != nil {
		b = b.kids[b.n]
	}
	return b, b.n - 1
}

// merge joins b's child i, key i and child i+1 (both children with
// btreeT−1 keys) into child i.
func (b *bnode) merge(i int) {
	y, z := b.kids[i], b.kids[i+1]
	y.put(y.n, b, i)
	y.copyKeys(y.n+1, z, 0, z.n)
	if y.kids != nil {
		copy(y.kids[y.n+1:], z.kids[:z.n+1])
	}
	y.n += 1 + z.n
	b.deleteKey(i)
	copy(b.kids[i+1:], b.kids[i+2:b.n+2])
	b.kids[b.n+1] = nil
}

// fill gives b's child i, which has btreeT−1 keys, one more: from a
// sibling that can spare one, through b, or by merging it with a sibling.
// It returns the index of the child that now holds child i's keys.
func (b *bnode) fill(i int) int {
	c := b.kids[i]
	switch {
	case i > 0 && b.kids[i-1].n >= btreeT:
		l := b.kids[i-1]
		c.moveKeys(1, 0)
		c.put(0, b, i-1)
		b.put(i-1, l, l.n-1)
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
		c.put(c.n, b, i)
		b.put(i, r, 0)
		if c.kids != nil {
			c.kids[c.n+1] = r.kids[0]
			copy(r.kids, r.kids[1:r.n+1])
			r.kids[r.n] = nil
		}
		r.deleteKey(0)
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

// inside calls fn, in order, for the keys of t whose address lies in
// [first, last] and whose length is at least first's, until fn returns
// false, and reports whether it did not. It descends only into the
// subtrees that can hold such addresses, so the walk costs O(depth +
// keys visited).
func (t *btree) inside(first, last key, fn func(key) bool) bool {
	if t == nil || t.root == nil {
		return true
	}
	return t.root.inside(&first, &last, t.id, fn)
}

func (b *bnode) inside(first, last *key, id tree, fn func(key) bool) bool {
	// The first key whose address is not below first's.
	lo, hi := 0, b.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if k := b.key(m, id); compareAddr(&k, first) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo; ; i++ {
		if b.kids != nil && !b.kids[i].inside(first, last, id, fn) {
			return false
		}
		if i == b.n {
			return true
		}
		k := b.key(i, id)
		if compareAddr(&k, last) > 0 {
			return true
		}
		if k.bits() >= first.bits() && !fn(k) {
			return false
		}
	}
}
