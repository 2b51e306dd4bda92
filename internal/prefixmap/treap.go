package prefixmap

import "cmp"

// The writers keep, for each family and tag, the nodes in a treap ordered by
// (address, length): a binary search tree that is also a heap on random
// priorities, so its depth is O(log n) with high probability, without
// rebalancing code. It answers the one question the hash cannot: which
// prefixes lie inside p (those whose masked address is in p's range). Only
// writers touch it, under Map.mu.

// compare orders keys of one tree by address, then length.
func compare(a, b *key) int {
	return cmp.Or(cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo), cmp.Compare(a.bits(), b.bits()))
}

// compareAddr orders keys of one tree by address only.
func compareAddr(a, b *key) int {
	return cmp.Or(cmp.Compare(a.hi, b.hi), cmp.Compare(a.lo, b.lo))
}

// insert adds n, whose key is not in t, and returns the new root.
func insert[V any](t, n *node[V]) *node[V] {
	if t == nil {
		return n
	}
	if compare(&n.key, &t.key) < 0 {
		t.left = insert(t.left, n)
		if t.left.pri > t.pri {
			l := t.left
			t.left, l.right = l.right, t
			return l
		}
	} else {
		t.right = insert(t.right, n)
		if t.right.pri > t.pri {
			r := t.right
			t.right, r.left = r.left, t
			return r
		}
	}
	return t
}

// remove takes n, which is in t, out of t and returns the new root.
func remove[V any](t, n *node[V]) *node[V] {
	if t == n {
		t = join(n.left, n.right)
		n.left, n.right = nil, nil
		return t
	}
	if compare(&n.key, &t.key) < 0 {
		t.left = remove(t.left, n)
	} else {
		t.right = remove(t.right, n)
	}
	return t
}

// replaceNode puts n, which has old's key, in the place of old, which is in
// t, and returns the new root.
func replaceNode[V any](t, old, n *node[V]) *node[V] {
	if t == old {
		n.pri, n.left, n.right = old.pri, old.left, old.right
		old.left, old.right = nil, nil
		return n
	}
	if compare(&n.key, &t.key) < 0 {
		t.left = replaceNode(t.left, old, n)
	} else {
		t.right = replaceNode(t.right, old, n)
	}
	return t
}

// join returns the treap of the nodes of a and b; every key of a is less
// than every key of b.
func join[V any](a, b *node[V]) *node[V] {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.pri > b.pri:
		a.right = join(a.right, b)
		return a
	default:
		b.left = join(a, b.left)
		return b
	}
}

// inside calls fn, in order, for the nodes of t whose address lies in
// [first, last] and whose length is at least first's, until fn returns
// false, and reports whether it did not. Subtrees wholly outside the range
// are skipped, so the walk costs O(depth + nodes visited).
func inside[V any](t *node[V], first, last key, fn func(*node[V]) bool) bool {
	for t != nil {
		// Nodes on the left have addresses <= t's; on the right, >= t's.
		afterFirst, beforeLast := compareAddr(&t.key, &first) >= 0, compareAddr(&t.key, &last) <= 0
		if afterFirst && !inside(t.left, first, last, fn) {
			return false
		}
		if afterFirst && beforeLast && t.key.bits() >= first.bits() && !fn(t) {
			return false
		}
		if !beforeLast {
			return true
		}
		t = t.right
	}
	return true
}
