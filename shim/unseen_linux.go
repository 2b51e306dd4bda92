//go:build linux

package shim

import (
	"net/netip"
	"sync"
	"time"

	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// The unseen table: TCP-AO sessions met without their handshake, which
// the shim cannot verify and drops. Anyone can send a segment from a
// covered peer's address with an AO option, so the table is built to stay
// useful under a flood of such forgeries: it is bounded, it has a lock of
// its own (never the shim's), its log lines are rate-limited as drops
// are, and what it evicts first is what a forger can produce.
//
// Each entry has an evidence level, and a new entry that finds the table
// full evicts the least recently seen entry of the lowest level present,
// except that a session the local stack sent on is never evicted for one
// seen only from the peer (which is refused instead):
//
//   - unseenOnce: only the peer's segments, all within unseenPersistAfter
//     of the first. A blind flood with made-up ports is this.
//   - unseenPersisting: only the peer's segments, over more than
//     unseenPersistAfter. A forger can make these too, but only by
//     sending to the same ports again and again over time.
//   - unseenLocal: the local stack sent on it. An off-path forger cannot
//     make these: the shim drops its segments before the local stack sees
//     them, so the stack never answers them. Only a session the local
//     stack really has reaches this level.
//
// Per-peer caps would not help: the forger uses the real peer's address.
const (
	maxUnseen          = 1024
	unseenPersistAfter = time.Second
)

// unseenIdle is how long an entry of each level stays once its segments
// stop: a forgery seen once goes soon, a session the stack sent on stays
// for the operator to see.
var unseenIdle = [numUnseenLevels]time.Duration{time.Minute, 10 * time.Minute, 10 * time.Minute}

// The evidence levels, lowest evicted first.
const (
	unseenOnce uint8 = iota
	unseenPersisting
	unseenLocal
	numUnseenLevels
)

var unseenEvidence = [numUnseenLevels]string{"once", "persisting", "local"}

// unseenEntry is one session in the table, on its level's list (most
// recently seen first).
type unseenEntry struct {
	conn       UnseenConn
	level      uint8
	prev, next int32 // -1: none
}

// unseenTable holds up to maxUnseen entries in an array allocated on
// first use; its lists and free slots are indices into it, so a flood
// allocates nothing past the map's own buckets.
type unseenTable struct {
	now func() time.Time // nil: time.Now

	mu         sync.Mutex
	idx        map[[2]netip.AddrPort]int32
	e          []unseenEntry
	free       []int32
	head, tail [numUnseenLevels]int32
	evicted    [numUnseenLevels]uint64 // entries of each level evicted, or refused, for room
	suppressed uint64                  // log lines not written, in all
	logs       [2]tokenBucket          // first sights by the peer's segments; by the local stack's
}

// init allocates the table; under u.mu.
func (u *unseenTable) init() {
	u.idx = make(map[[2]netip.AddrPort]int32, maxUnseen)
	u.e = make([]unseenEntry, maxUnseen)
	u.free = make([]int32, maxUnseen)
	for i := range u.free {
		u.free[i] = int32(maxUnseen - 1 - i)
	}
	for l := range u.head {
		u.head[l], u.tail[l] = -1, -1
	}
}

// unseenLine is what see asks its caller to log (off the table's lock).
type unseenLine struct {
	log        bool
	local      bool // the line is of the local stack's segment
	suppressed uint64
}

// see records a segment of the session (local, remote) at t: out if the
// local stack sent it. It returns the line to log, if any: the session's
// first sight, or the local stack's first segment on a session seen
// only from the peer so far.
func (u *unseenTable) see(local, remote netip.AddrPort, out bool, t time.Time) unseenLine {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.idx == nil {
		u.init()
	}
	k := [2]netip.AddrPort{local, remote}
	if i, ok := u.idx[k]; ok {
		e := &u.e[i]
		e.conn.Dropped++
		e.conn.Last = t
		lvl := e.level
		switch {
		case out:
			lvl = unseenLocal
		case lvl == unseenOnce && t.Sub(e.conn.First) > unseenPersistAfter:
			lvl = unseenPersisting
		}
		was := e.level
		u.unlink(i)
		u.pushFront(i, lvl)
		if lvl == unseenLocal && was != unseenLocal {
			return u.line(true, t) // the local stack's first segment on it
		}
		return unseenLine{}
	}
	lvl := unseenOnce
	if out {
		lvl = unseenLocal
	}
	if len(u.free) == 0 && !u.evict(lvl) {
		u.evicted[lvl]++ // refused: the table is full of better evidence
		return u.line(out, t)
	}
	i := u.free[len(u.free)-1]
	u.free = u.free[:len(u.free)-1]
	u.e[i] = unseenEntry{conn: UnseenConn{Local: local, Remote: remote, Kind: "TCP-AO", Dropped: 1, First: t, Last: t}}
	u.idx[k] = i
	u.pushFront(i, lvl)
	return u.line(out, t)
}

// line takes a token from the bucket of a first sight.
func (u *unseenTable) line(out bool, t time.Time) unseenLine {
	b := 0
	if out {
		b = 1
	}
	ok, n := u.logs[b].take(t)
	if !ok {
		u.suppressed++
	}
	return unseenLine{log: ok, local: out, suppressed: n}
}

// evict frees the slot of the least recently seen entry of the lowest
// level present for a new entry of level lvl, never a local one for one
// that is not; under u.mu.
func (u *unseenTable) evict(lvl uint8) bool {
	top := unseenPersisting
	if lvl == unseenLocal {
		top = unseenLocal
	}
	for l := range top + 1 {
		if i := u.tail[l]; i >= 0 {
			u.remove(i)
			u.evicted[l]++
			return true
		}
	}
	return false
}

// remove takes entry i out of the table; under u.mu.
func (u *unseenTable) remove(i int32) {
	e := &u.e[i]
	u.unlink(i)
	delete(u.idx, [2]netip.AddrPort{e.conn.Local, e.conn.Remote})
	*e = unseenEntry{}
	u.free = append(u.free, i)
}

func (u *unseenTable) pushFront(i int32, lvl uint8) {
	e := &u.e[i]
	e.level, e.prev, e.next = lvl, -1, u.head[lvl]
	if e.next >= 0 {
		u.e[e.next].prev = i
	} else {
		u.tail[lvl] = i
	}
	u.head[lvl] = i
}

func (u *unseenTable) unlink(i int32) {
	e := &u.e[i]
	if e.prev >= 0 {
		u.e[e.prev].next = e.next
	} else {
		u.head[e.level] = e.next
	}
	if e.next >= 0 {
		u.e[e.next].prev = e.prev
	} else {
		u.tail[e.level] = e.prev
	}
	e.prev, e.next = -1, -1
}

// expire removes the entries whose level's unseenIdle has passed since
// their last segment.
func (u *unseenTable) expire(t time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.idx == nil {
		return
	}
	for l := range numUnseenLevels {
		for i := u.tail[l]; i >= 0 && t.Sub(u.e[i].conn.Last) > unseenIdle[l]; i = u.tail[l] {
			u.remove(i)
		}
	}
}

// unseenCounts are the table's totals for the status and the metrics.
type unseenCounts struct {
	len        int
	evicted    [numUnseenLevels]uint64
	suppressed uint64
}

func (u *unseenTable) counts() unseenCounts {
	u.mu.Lock()
	defer u.mu.Unlock()
	return unseenCounts{len: len(u.idx), evicted: u.evicted, suppressed: u.suppressed}
}

// list returns the entries, the best evidence first, then the most
// recently seen.
func (u *unseenTable) list() []UnseenConn {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]UnseenConn, 0, len(u.idx))
	if u.idx == nil {
		return out
	}
	for l := int(numUnseenLevels) - 1; l >= 0; l-- {
		for i := u.head[l]; i >= 0; i = u.e[i].next {
			c := u.e[i].conn
			c.Evidence = unseenEvidence[l]
			out = append(out, c)
		}
	}
	return out
}

// reportUnseen records a TCP-AO session met without its handshake (a
// TCP-MD5 session needs none: its digest covers no ISN, and the layer signs
// and verifies it without state). Without its ISNs and SNEs (from -state,
// read at start) it cannot be verified: it is reported, and its packets
// dropped. It takes the table's lock, never the shim's.
func (s *Shim) reportUnseen(p *nfqueue.Packet) {
	local, remote, ok := tuple(p)
	if !ok {
		return
	}
	now := time.Now
	if s.unseen.now != nil {
		now = s.unseen.now
	}
	out := p.Hook == nfqueue.HookOutput || p.Hook == nfqueue.HookPostrouting
	l := s.unseen.see(local, remote, out, now())
	if !l.log {
		return
	}
	if l.local {
		s.log.Warn("TCP-AO session seen without its handshake and not in the state file, the local stack sending on it: its ISNs are unknown, dropping its packets",
			"local", local, "remote", remote, "suppressed", l.suppressed)
		return
	}
	s.log.Warn("TCP-AO session seen without its handshake and not in the state file: its ISNs are unknown, dropping its packets",
		"local", local, "remote", remote, "suppressed", l.suppressed)
}
