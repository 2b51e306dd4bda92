package pcapverify

import (
	"cmp"
	"slices"
)

// Eviction. Anyone can put segments from the covered addresses in a
// capture (spoofed ones, a port scan with made-up options), and each new
// pair of ports is a flow. Such flows never verify, so a full table
// evicts the least recently seen flow that never verified for a new flow:
// a real flow that comes after a flood of them is still judged. A flow is
// kept (never evicted) from its first verified segment, which a forger
// without the keys cannot make. A handshake is not enough: a forger on
// the path can spoof the SYN-ACK as well as the SYN. A real flow that does
// not verify (a key mismatch, an unknown ISN) keeps its place while its
// segments keep coming: the flows evicted are the least recently seen.

// flowList is a doubly linked list of flows through their prev and next.
type flowList struct{ head, tail *flow }

func (l *flowList) pushFront(f *flow) {
	f.prev, f.next = nil, l.head
	if l.head != nil {
		l.head.prev = f
	} else {
		l.tail = f
	}
	l.head = f
}

func (l *flowList) remove(f *flow) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		l.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		l.tail = f.prev
	}
	f.prev, f.next = nil, nil
}

// touch marks f seen now: first among the evictable flows, if it is one.
func (t *flows) touch(f *flow) {
	if !f.kept && t.evictable.head != f {
		t.evictable.remove(f)
		t.evictable.pushFront(f)
	}
}

// keep takes f off the evictable flows for good.
func (t *flows) keep(f *flow) {
	if !f.kept {
		t.evictable.remove(f)
		f.kept = true
	}
}

// evictOne evicts the least recently seen flow not kept, and reports
// whether there was one.
func (t *flows) evictOne() bool {
	f := t.evictable.tail
	if f == nil {
		return false
	}
	t.evictable.remove(f)
	delete(t.byKey, keyOf(f.ends[0].addr, f.ends[1].addr))
	f.ends[0].wipe()
	f.ends[1].wipe()
	t.evicted++
	return true
}

// inOrder returns the tracked flows by id.
func (t *flows) inOrder() []*flow {
	fs := make([]*flow, 0, len(t.byKey))
	for _, f := range t.byKey {
		fs = append(fs, f)
	}
	slices.SortFunc(fs, func(a, b *flow) int { return cmp.Compare(a.id, b.id) })
	return fs
}
