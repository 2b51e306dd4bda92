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
// leaves at one depth, each key of tree id with its ord beside it, and len
// the number of keys.
func checkBTree(t *testing.T, id tree, tr *btree) {
	t.Helper()
	if tr.root == nil {
		if tr.len != 0 {
			t.Fatalf("tree %v: empty, len %d", id, tr.len)
		}
		return
	}
	var prev *key
	count, leafDepth := 0, -1
	var walk func(b *bnode, depth int)
	walk = func(b *bnode, depth int) {
		if b != tr.root && (b.n < btreeT-1 || b.n > 2*btreeT-1) {
			t.Fatalf("tree %v: a node holds %d items", id, b.n)
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
			kv := b.key(i, id)
			k := &kv
			if k.tree() != id || b.ord[i] != ordOf(k) || (b.ext != nil) != (id.fam() == ipv6) {
				t.Fatalf("tree %v: key %v of tree %v, ord %#x", id, k.prefix(), k.tree(), b.ord[i])
			}
			if prev != nil && compare(prev, k) >= 0 {
				t.Fatalf("tree %v: %v after %v", id, k.prefix(), prev.prefix())
			}
			prev = k
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
// checks the invariants and inside against a sorted slice. The IPv6
// prefixes lie in a few /64s, so that most of their ords tie.
func TestBTree(t *testing.T) {
	for _, fam := range []int{ipv4, ipv6} {
		r := rand.New(rand.NewPCG(11, uint64(12+fam)))
		randKey := func() key {
			if fam == ipv6 {
				a := [16]byte{0x20, 0x01, 0x0d, 0xb8, 7: byte(r.IntN(3)), 13: byte(r.IntN(8)), 14: byte(r.IntN(256)), 15: byte(r.IntN(256))}
				k, _ := keyOf(netip.PrefixFrom(netip.AddrFrom16(a), 56+r.IntN(73)), 0)
				return k
			}
			k, _ := keyOf(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(r.IntN(8)), byte(r.IntN(256)), byte(r.IntN(256))}), 16+r.IntN(17)), 0)
			return k
		}
		testBTree(t, tree(uint64(fam)<<32), randKey, r)
	}
}

func testBTree(t *testing.T, id tree, randKey func() key, r *rand.Rand) {
	tr := btree{id: id}
	var want []key // sorted
	has := func(k key) (int, bool) {
		return slices.BinarySearchFunc(want, k, func(a, b key) int { return compare(&a, &b) })
	}
	checkInside := func() {
		first, last := randKey(), randKey()
		if compareAddr(&first, &last) > 0 {
			first, last = last, first
		}
		var got, exp []key
		tr.inside(first, last, func(k key) bool { got = append(got, k); return true })
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
			if tr.inside(first, last, func(key) bool { n++; return n < 2 }) || n != 2 {
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
			tr.insert(&k)
			want = slices.Insert(want, i, k)
		case found && !grow:
			tr.remove(&k)
			want = slices.Delete(want, i, i+1)
		case found:
			if !treeHas(&tr, &k) {
				t.Fatalf("a search does not find %v", k.prefix())
			}
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

// treeHas reports whether a search from the root finds k.
func treeHas(tr *btree, k *key) bool {
	for b := tr.root; b != nil; {
		i, ok := b.search(k)
		if ok {
			return true
		}
		if b.kids == nil {
			return false
		}
		b = b.kids[i]
	}
	return false
}
