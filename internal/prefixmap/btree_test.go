package prefixmap

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
)

// checkBTree checks the B-tree's invariants: items in increasing order
// across the whole tree, every node but the root between btreeT−1 and
// 2·btreeT−1 items, an inner node with one child more than items, all
// leaves at one depth, each item's key its node's and of tree id, and len
// the number of items.
func checkBTree[V any](t *testing.T, id tree, tr *btree[V]) {
	t.Helper()
	if tr.root == nil {
		if tr.len != 0 {
			t.Fatalf("tree %v: empty, len %d", id, tr.len)
		}
		return
	}
	var prev *key
	count, leafDepth := 0, -1
	var walk func(b *bnode[V], depth int)
	walk = func(b *bnode[V], depth int) {
		if b != tr.root && (b.n < btreeT-1 || b.n > 2*btreeT-1) {
			t.Fatalf("tree %v: a node holds %d items", id, b.n)
		}
		for i := b.n; i < len(b.items); i++ {
			if b.items[i].n != nil {
				t.Fatalf("tree %v: a node keeps an item past its count", id)
			}
		}
		if b.kids == nil {
			if leafDepth < 0 {
				leafDepth = depth
			} else if depth != leafDepth {
				t.Fatalf("tree %v: leaves at depths %d and %d", id, leafDepth, depth)
			}
		} else {
			for i, c := range b.kids {
				if (c != nil) != (i <= b.n) {
					t.Fatalf("tree %v: an inner node of %d items has child %d = %v", id, b.n, i, c != nil)
				}
			}
		}
		for i := 0; i <= b.n; i++ {
			if b.kids != nil {
				walk(b.kids[i], depth+1)
			}
			if i == b.n {
				break
			}
			it := &b.items[i]
			if it.n == nil || it.n.key != it.k || it.k.tree() != id {
				t.Fatalf("tree %v: item %v does not hold its node", id, it.k.prefix())
			}
			if prev != nil && compare(prev, &it.k) >= 0 {
				t.Fatalf("tree %v: %v after %v", id, it.k.prefix(), prev.prefix())
			}
			prev = &it.k
			count++
		}
	}
	walk(tr.root, 0)
	if count != tr.len {
		t.Fatalf("tree %v: %d items, len %d", id, count, tr.len)
	}
}

// TestBTree inserts and removes thousands of prefixes of one tree at
// random (the tree grows to several levels and shrinks to nothing), and
// checks the invariants, set and inside against a sorted slice.
func TestBTree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var tr btree[int]
	var want []key // sorted
	id := tree{0, ipv4}
	randKey := func() key {
		k, _ := keyOf(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(r.IntN(8)), byte(r.IntN(256)), byte(r.IntN(256))}), 16+r.IntN(17)), 0)
		return k
	}
	has := func(k key) (int, bool) {
		return slices.BinarySearchFunc(want, k, func(a, b key) int { return compare(&a, &b) })
	}
	checkInside := func() {
		first, last := randKey(), randKey()
		if compareAddr(&first, &last) > 0 {
			first, last = last, first
		}
		var got, exp []key
		tr.inside(first, last, func(n *node[int]) bool { got = append(got, n.key); return true })
		for _, k := range want {
			if compareAddr(&k, &first) >= 0 && compareAddr(&k, &last) <= 0 && k.bits() >= first.bits() {
				exp = append(exp, k)
			}
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("inside(%v, %v): %d keys, want %d", first.prefix(), last.prefix(), len(got), len(exp))
		}
		if len(exp) > 1 { // stopping early
			n := 0
			if tr.inside(first, last, func(*node[int]) bool { n++; return n < 2 }) || n != 2 {
				t.Fatalf("inside did not stop when fn returned false")
			}
		}
	}
	for step := range 60000 {
		grow := step < 20000 || step >= 40000 && step < 45000
		k := randKey()
		i, found := has(k)
		switch {
		case !found && (grow || r.IntN(4) == 0):
			tr.insert(&node[int]{key: k})
			want = slices.Insert(want, i, k)
		case found && !grow:
			tr.remove(&k)
			want = slices.Delete(want, i, i+1)
		case found:
			n := &node[int]{key: k}
			tr.set(n)
			tr.inside(k, k, func(got *node[int]) bool {
				if got.key == k && got != n {
					t.Fatalf("set did not replace the node of %v", k.prefix())
				}
				return true
			})
		default:
			tr.remove(&k) // not there: nothing changes
		}
		if step%1000 == 0 || step > 59900 {
			checkBTree(t, id, &tr)
			checkInside()
		}
	}
	for len(want) > 0 { // empty it
		i := r.IntN(len(want))
		tr.remove(&want[i])
		want = slices.Delete(want, i, i+1)
		if len(want)%500 == 0 {
			checkBTree(t, id, &tr)
		}
	}
	if tr.root != nil || tr.len != 0 {
		t.Fatalf("emptied tree: root %v, len %d", tr.root != nil, tr.len)
	}
}
