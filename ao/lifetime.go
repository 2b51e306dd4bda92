package ao

import (
	"context"
	"math"
	"net/netip"
	"time"

	"github.com/tcpsig/tcpsig/internal/lifetime"
)

// An MKT's lifetimes (RFC 8177, keys.Lifetime) are applied by its
// keyring on the keyring's clock, never per segment: Advance computes
// each MKT's state (MKT.off) at the clock's now, moves the connections
// it concerns, and says when the next state change is due; Run calls it
// at each such moment. A segment reads the state with the load of its
// MKT it already makes. A keyring none of whose MKTs has a lifetime does
// nothing here.

// The bits of MKT.off: package lifetime's state bits, and offGone from
// the first moment of the MKT's delete (a verify reads the one word).
const (
	offSend   = lifetime.OffSend
	offAccept = lifetime.OffAccept
	offGone   = 1 << 31
)

// SendActive reports whether the MKT is inside its send lifetime as of
// its keyring's last Advance (RFC 8177's send-lifetime-active); a
// deleted MKT is not.
func (m *MKT) SendActive() bool { return m != nil && m.off.Load()&(offSend|offGone) == 0 }

// AcceptActive reports whether the MKT is inside its accept lifetime,
// widened by its tolerance, as of its keyring's last Advance (RFC 8177's
// accept-lifetime-active).
func (m *MKT) AcceptActive() bool { return m != nil && m.off.Load()&(offAccept|offGone) == 0 }

// Settled reports whether c signs with the newest MKT of its peer inside
// its send lifetime and asks the peer for the newest it may send with:
// a rotation by schedule is complete on this end (the peer's side shows
// in the KeyIDs it sends).
func (c *Conn) Settled() bool {
	if c == nil || c.ring == nil || c.state.Load() != stateOpen {
		return false
	}
	c.ring.mu.Lock()
	defer c.ring.mu.Unlock()
	peer := c.remote.Addr()
	return c.current.Load() == c.ring.pick(peer, c.l3, roleNeeds[roleCurrent]) &&
		c.rnext.Load() == c.ring.pick(peer, c.l3, roleNeeds[roleRNext])
}

// SetClock makes now the keyring's clock (time.Now when nil): what Add
// and Advance read. Tests give a fake one, so that nothing sleeps.
func (r *Keyring) SetClock(now func() time.Time) {
	if r == nil {
		return
	}
	r.life.SetClock(&r.mu, now)
}

// Advance applies the MKTs' lifetimes at the clock's now. An MKT whose
// send lifetime ended signs no more: its connections move to the newest
// MKT of their peer that may sign. One whose accept lifetime ended
// verifies no more: connections asking for it (RNext) move on, and one
// whose lifetimes are both over is left as a delete leaves it (its users
// move or are revoked). One whose send lifetime began becomes
// the current and RNext key of the connections of its peer whose current
// key began sending before it (RFC 5925 §7.5.2: the peer is asked for it
// with RNextKeyID). Advance returns the next moment at which a lifetime
// begins or ends, the zero time without one.
func (r *Keyring) Advance() time.Time {
	if r == nil {
		return time.Time{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.life.Timed == 0 {
		return time.Time{}
	}
	now := r.life.Clock.Now()
	next := int64(math.MaxInt64)
	type change struct {
		m   *MKT
		was uint32
	}
	var changed []change
	r.byPeer.Range(func(_ netip.Prefix, _ uint32, e entry) bool {
		m := e.m
		if !m.timed {
			return true
		}
		if was, off := m.off.Load(), m.sched.Off(now); off != was {
			m.off.Store(off)
			changed = append(changed, change{m, was})
		}
		next = min(next, m.sched.Next(now))
		return true
	})
	for _, ch := range changed {
		off, ended := ch.m.off.Load(), ch.m.sched.Ended(now)
		if off&offSend != 0 {
			r.moveOff(ch.m, roleCurrent, offSend, ended)
		}
		if off&offAccept != 0 {
			r.moveOff(ch.m, roleRNext, offAccept, ended)
		}
		if ch.was&offSend != 0 && off&offSend == 0 {
			r.adopt(ch.m)
		}
	}
	if next == math.MaxInt64 {
		return time.Time{}
	}
	return time.Unix(0, next)
}

// moveOff moves the connections whose key in role is m, which lost the
// state bit need, to the newest MKT of their peer that has it. Without
// one a connection keeps m (its segments fail meanwhile), unless gone
// (both of m's lifetimes are over): then it moves to the newest MKT of
// its peer in any state, and is revoked, as a delete would, if its peer
// has none. Under r.mu.
func (r *Keyring) moveOff(m *MKT, role int, need uint32, gone bool) {
	for _, u := range m.usersOf(role) {
		rep := r.newestWith(u.addr, u.l3, need, m)
		if rep == nil && gone {
			rep = r.newestWith(u.addr, u.l3, 0, m)
		}
		u.c.move(role, m, rep, gone)
	}
}

// adopt makes m, which began sending, the current key of every
// connection it covers whose current key began sending before it, and
// its RNext key if m verifies. Under r.mu.
func (r *Keyring) adopt(m *MKT) {
	var olds []*MKT
	r.byPeer.Range(func(_ netip.Prefix, _ uint32, e entry) bool {
		if o := e.m; o != m && o.peer.Overlaps(m.peer) && (o.off.Load()&offSend != 0 || o.sched.SendFrom < m.sched.SendFrom) {
			olds = append(olds, o)
		}
		return true
	})
	for _, o := range olds {
		for _, u := range o.usersOf(roleCurrent) {
			if m.covers(u.addr, u.l3) {
				u.c.move(roleCurrent, o, m, false)
			}
		}
	}
	if m.off.Load()&offAccept != 0 {
		return
	}
	// Every session now on m (moved here, or by this Advance's moveOff
	// when its old key stopped sending) asks its peer for m too.
	for _, u := range m.usersOf(roleCurrent) {
		if n := u.c.rnext.Load(); n != nil && n != m {
			u.c.move(roleRNext, n, m, false)
		}
	}
}

// Run calls Advance now and at every moment it names, until ctx is done
// (then it returns ctx.Err());
// an Add or a Delete of an MKT with a lifetime makes it look again. A
// keyring whose MKTs have lifetimes needs Run (or the application's own
// calls of Advance) for them to take effect over time.
func (r *Keyring) Run(ctx context.Context) error {
	if r == nil || ctx == nil {
		return ErrNotInitialized
	}
	return r.life.Run(ctx, &r.mu, r.Advance)
}
