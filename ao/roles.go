package ao

import (
	"cmp"
	"net/netip"
	"slices"
	"sync/atomic"
)

// The two ways a connection uses an MKT, as indexes into MKT.users and
// Conn.link.
const (
	roleCurrent = 0
	roleRNext   = 1
)

// role returns the pointer that holds c's key in role.
func (c *Conn) role(role int) *atomic.Pointer[MKT] {
	if role == roleRNext {
		return &c.rnext
	}
	return &c.current
}

// setRole makes m (nil: none, and so is an m that does not cover c's
// peer) c's key in role, moving c from the old MKT's user list to m's
// under the two MKTs' locks, and no other: connections of other MKTs
// never wait for it. It reports false, changing nothing, if m is no
// longer in c's keyring.
func (c *Conn) setRole(role int, m *MKT) bool {
	if m != nil && !m.covers(c.remote.Addr(), c.l3) {
		// Never a key of another peer: Verify's RNext fast path takes
		// the RNext key without looking the peer up. (Delete refuses
		// such a replacement; lookups only find covering keys.)
		m = nil
	}
	ptr := c.role(role)
	for {
		old := ptr.Load()
		if old == m {
			return true
		}
		lock2(old, m)
		if ptr.Load() != old { // a delete moved c meanwhile
			unlock2(old, m)
			continue
		}
		if m != nil && m.ring.Load() != c.ring {
			unlock2(old, m)
			return false
		}
		if old != nil {
			unlink(c, role, old)
		}
		if m != nil {
			link(c, role, m)
		}
		ptr.Store(m)
		unlock2(old, m)
		return true
	}
}

// switchTo makes m the connection's key in role if m is still in the
// keyring, else [ErrNoSuchKey].
func (c *Conn) switchTo(role int, m *MKT) error {
	if m == nil || !c.setRole(role, m) {
		return ErrNoSuchKey
	}
	return nil
}

// move makes to c's key in role in place of from, if c still has from
// there (the caller read c from from's user list and let go of its
// lock); a nil to, or one that does not cover c's peer, revokes c if
// revoke, and changes nothing otherwise. It reports whether c moved.
// c's addresses are read under from's lock while c is in its list: a
// Conn leaves every list (Close) before Init rewrites them.
func (c *Conn) move(role int, from, to *MKT, revoke bool) bool {
	lock2(from, to)
	defer unlock2(from, to)
	ptr := c.role(role)
	if ptr.Load() != from { // c is in from's list exactly while ptr holds from
		return false
	}
	if to != nil && !to.covers(c.remote.Addr(), c.l3) {
		to = nil
	}
	if to == nil && !revoke {
		return false
	}
	unlink(c, role, from)
	if to != nil {
		link(c, role, to)
	} else {
		c.state.CompareAndSwap(stateOpen, stateRevoked)
	}
	ptr.Store(to)
	return true
}

// user is a connection in an MKT's user list, with the peer it had
// there.
type user struct {
	c    *Conn
	addr netip.Addr
	l3   int
}

// usersOf returns the connections whose key in role is m, at this moment.
func (m *MKT) usersOf(role int) []user {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []user
	for c := m.users[role]; c != nil; c = c.link[role].next {
		out = append(out, user{c, c.remote.Addr(), c.l3})
	}
	return out
}

// link puts c at the head of m's user list for role; m is locked.
func link(c *Conn, role int, m *MKT) {
	head := m.users[role]
	c.link[role].next = head
	if head != nil {
		head.link[role].prev = c
	}
	m.users[role] = c
}

// unlink takes c off m's user list for role; m is locked.
func unlink(c *Conn, role int, m *MKT) {
	l := &c.link[role]
	if l.prev != nil {
		l.prev.link[role].next = l.next
	} else {
		m.users[role] = l.next
	}
	if l.next != nil {
		l.next.link[role].prev = l.prev
	}
	l.prev, l.next = nil, nil
}

// lock2 locks two MKTs (either may be nil, or both the same) in the
// order of their addition, the one order in which MKT locks nest.
func lock2(a, b *MKT) {
	if a != nil && b != nil && b.added < a.added {
		a, b = b, a
	}
	if a != nil {
		a.mu.Lock()
	}
	if b != nil && b != a {
		b.mu.Lock()
	}
}

// unlock2 undoes lock2.
func unlock2(a, b *MKT) {
	if a != nil {
		a.mu.Unlock()
	}
	if b != nil && b != a {
		b.mu.Unlock()
	}
}

// lockAll locks up to three MKTs as lock2 does, for a delete and its
// replacements.
func lockAll(ms ...*MKT) {
	for _, m := range sortedMKTs(ms) {
		m.mu.Lock()
	}
}

// unlockAll undoes lockAll.
func unlockAll(ms ...*MKT) {
	for _, m := range sortedMKTs(ms) {
		m.mu.Unlock()
	}
}

// sortedMKTs returns ms without nils and duplicates, in order of addition.
func sortedMKTs(ms []*MKT) []*MKT {
	out := slices.DeleteFunc(slices.Clone(ms), func(m *MKT) bool { return m == nil })
	slices.SortFunc(out, func(a, b *MKT) int { return cmp.Compare(a.added, b.added) })
	return slices.Compact(out)
}
