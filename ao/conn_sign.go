package ao

import (
	"errors"
	"fmt"

	"github.com/tcpsig/tcpsig/segment"
)

// Sign computes the MAC of an outgoing segment and writes it, with the
// connection's KeyID (current key's SendID) and RNextKeyID (RNext key's
// RecvID), into the segment's TCP-AO option, which the stack laid out with
// [AppendOption] for the current key's MAC length (a longer option is
// shortened; a shorter one is [ErrNoRoom]). A SYN is signed with the
// Send_SYN traffic key, everything else (the SYN-ACK, with or without
// payload, included) with Send_other. A server's first SYN-ACK gives the
// connection its local ISN; before it, nothing else can be signed
// ([ErrNoISN]). A RST is signed like any other segment.
func (c *Conn) Sign(seg *segment.Segment) error {
	if err := c.usable(seg); err != nil {
		return err
	}
	m := c.current.Load()
	if m == nil {
		return ErrNoCurrentKey
	}
	if m.off.Load()&(offSend|offGone) != 0 {
		if m = c.sender(); m == nil {
			return errNoSendKey
		}
	}
	err := c.signWith(m, seg)
	if err != nil && errors.Is(err, ErrKeyNotFound) {
		return c.signAgain(m, seg, err)
	}
	return err
}

// errNoSendKey: no MKT of the peer is inside its send lifetime.
var errNoSendKey = fmt.Errorf("%w: no MKT of the peer is inside its send lifetime", ErrNoCurrentKey)

// sender makes the newest MKT of the peer inside its send lifetime the
// current key, for a Sign that found its current key outside its own or
// deleted (its keyring's Advance or Delete moves the connection too, and
// may be about to): nil without one.
func (c *Conn) sender() *MKT {
	for {
		n := c.ring.newestWith(c.remote.Addr(), c.l3, offSend, nil)
		if n == nil {
			return nil
		}
		if c.setRole(roleCurrent, n) {
			return n
		}
		// n was deleted as it was picked: the next lookup cannot find it.
	}
}

// usable is what Sign and Verify ask first: a set-up, open connection
// and a parsed segment.
func (c *Conn) usable(seg *segment.Segment) error {
	if c == nil || c.ring == nil {
		return ErrNotInitialized
	}
	switch c.state.Load() {
	case stateOpen:
		return seg.Check()
	case stateRevoked:
		return ErrRevoked
	}
	return ErrConnClosed
}

// signWith signs seg with current key m: it labels the option before
// the lane's lock is taken, which makes these byte stores land before the
// header is read back as whole words.
func (c *Conn) signWith(m *MKT, seg *segment.Segment) error {
	off, err := labelOption(m, seg, c.rnextID(m))
	if err != nil {
		return err
	}
	l := &c.send
	l.mu.Lock()
	err = c.signLocked(l, m, seg, off)
	l.mu.Unlock()
	return err
}

// signAgain signs seg after m, the current key Sign loaded, was deleted
// between the load and its use (err). A delete moves the connection to
// its replacement before it retires the key, so each load sees another
// MKT, until one signs or none is left.
func (c *Conn) signAgain(m *MKT, seg *segment.Segment, err error) error {
	for errors.Is(err, ErrKeyNotFound) {
		n := c.current.Load()
		if n == m {
			return err
		}
		if m = n; m == nil {
			return ErrNoCurrentKey
		}
		err = c.signWith(m, seg)
	}
	return err
}

// rnextID is the RNextKeyID to send with current key m: the RNext key's
// RecvID, or m's own without one.
func (c *Conn) rnextID(m *MKT) uint8 {
	if n := c.rnext.Load(); n != nil {
		return n.recvID
	}
	return m.recvID
}

// signLocked is Sign's part under the send lane's lock, for the current
// key m whose option at off is labelled.
func (c *Conn) signLocked(l *lane, m *MKT, seg *segment.Segment, off int) error {
	h := seg.Header()
	flags, seq := h.Flags(), h.Seq()
	if !c.lisnKnown.Load() {
		// A server's connection: its ISN is its SYN-ACK's.
		if flags&(segment.SYN|segment.ACK) != segment.SYN|segment.ACK {
			return ErrNoISN
		}
		c.setLISN(seq)
	}
	if flags&segment.SYN != 0 && seq != c.lisn {
		// Its traffic keys would be derived from an ISN the peer never
		// sees: every MAC of the connection would be wrong.
		return fmt.Errorf("%w: %v with sequence number %d, ISN %d", ErrISN, flags, seq, c.lisn)
	}
	j := job{m: m, off: off, sne: l.sne.Of(seq)}
	if isSYN(flags) {
		in := c.input(true, true, 0)
		if err := j.once(&in, seg, nil, c.hint); err != nil {
			return err
		}
		l.sne.Advance(seq)
		return nil
	}
	if !c.risnKnown.Load() {
		return ErrNoISN
	}
	k := l.ready(m)
	if k == nil {
		var err error
		if k, err = c.trafficKey(l, m, true); err != nil {
			return err
		}
	}
	w, err := l.work(m, c.policy.Contexts, c.hint)
	if err != nil {
		return err
	}
	j.key, j.w, j.sc = &k.key, w.w, w.sc
	err = j.sign(seg)
	w.end()
	if err == nil {
		l.sne.Advance(seq)
	}
	return err
}

// Verify checks an incoming segment (RFC 5925 §7.6 as Linux's
// tcp_inbound_ao_hash does it) and, only once its MAC verifies, advances
// the receive SNE and follows the peer's RNextKeyID: if it names another
// of our SendIDs, that MKT becomes the current key. A nil error means
// the segment may be processed.
func (c *Conn) Verify(seg *segment.Segment) error {
	if err := c.usable(seg); err != nil {
		return err
	}
	if seg.Auth().MD5 > 0 {
		return ErrUnexpected
	}
	off, opt, err := findOption(seg)
	if err != nil && !errors.Is(err, ErrNoOption) {
		return err
	}
	if err != nil {
		if c.policy.AORequired || c.current.Load() != nil {
			return c.record(nil, nil, ErrAORequired)
		}
		return nil
	}
	m := c.rnext.Load()
	if m == nil || m.recvID != opt.KeyID { // setRole keeps only an RNext key that covers the peer
		m = c.ring.LookupRecv(c.remote.Addr(), opt.KeyID, c.l3)
	}
	if m == nil {
		c.record(nil, nil, ErrKeyNotFound)
		if c.policy.AcceptUnknownKeyID {
			return nil
		}
		return ErrKeyNotFound
	}
	if len(opt.MAC) != int(m.maclen) {
		return c.record(m, nil, ErrMACLength)
	}
	l := &c.recv
	j := job{m: m, off: off}
	l.mu.Lock()
	fresh, err := c.verifyLocked(l, &j, seg, &opt)
	l.mu.Unlock()
	if err == nil && fresh {
		c.rotate(opt) // takes MKTs' locks: never under a lane's
	}
	return err
}

// verifyLocked is Verify's part under the receive lane's lock, for j's
// MKT and option offset; opt is the segment's option. For a segment that
// asks for another current key, it reports whether the segment is fresh
// (lane.fresh), so that its RNextKeyID may be followed; a replayed old
// segment's may not. (A segment that asks for the current key cannot roll
// it back, and the freshness mark need only follow the segments that
// moved it.)
func (c *Conn) verifyLocked(l *lane, j *job, seg *segment.Segment, opt *Option) (fresh bool, err error) {
	got := opt.MAC
	cur := c.current.Load()
	ask := cur == nil || opt.RNextKeyID != cur.sendID
	h := seg.Header()
	flags, seq := h.Flags(), h.Seq()
	switch {
	case isSYN(flags):
		// A (retransmitted) SYN: Receive_SYN key with the SYN's own ISN.
		in := c.input(false, true, seq)
		if err := c.record(j.m, nil, c.live(j.m, j.once(&in, seg, got, c.hint))); err != nil {
			return false, err
		}
		return ask && l.fresh(h), nil
	case !c.risnKnown.Load():
		if flags&segment.SYN == 0 {
			return false, ErrNoISN
		}
		// The SYN-ACK teaches the peer's ISN, but only once it verifies.
		in := c.input(false, false, seq)
		if err := c.record(j.m, nil, c.live(j.m, j.once(&in, seg, got, c.hint))); err != nil {
			return false, err
		}
		c.setRISN(seq)
		return ask && l.fresh(h), nil
	case !c.lisnKnown.Load():
		return false, ErrNoISN // a server's connection before its SYN-ACK
	}
	k := l.ready(j.m)
	if k == nil {
		if k, err = c.trafficKey(l, j.m, false); err != nil {
			return false, c.record(j.m, nil, err)
		}
	}
	w, err := l.work(j.m, c.policy.Contexts, c.hint)
	if err != nil {
		return false, c.record(j.m, nil, err)
	}
	j.key, j.w, j.sc, j.sne = &k.key, w.w, w.sc, l.sne.Of(seq)
	err = c.live(j.m, j.verify(seg, got))
	w.end()
	if err != nil {
		return false, c.record(j.m, k, err)
	}
	c.goodIn(k) // record's good case, inlined on the per-segment path
	fresh = ask && l.fresh(h)
	if flags&segment.SYN == 0 {
		l.sne.Advance(seq)
	}
	return fresh, nil
}

// live is err, or [ErrKeyNotFound] for a segment that verified with m
// after m's delete began or its accept lifetime ended: a removal wins
// over a verify racing with it.
func (c *Conn) live(m *MKT, err error) error {
	if err == nil && m.off.Load()&(offAccept|offGone) != 0 {
		return ErrKeyNotFound
	}
	return err
}

// rotate follows a verified segment's RNextKeyID: if it names another of
// our SendIDs, that MKT becomes the current key (Linux
// tcp_inbound_ao_hash: "If the key is not found we do nothing").
func (c *Conn) rotate(opt Option) {
	if cur := c.current.Load(); cur == nil || opt.RNextKeyID != cur.sendID {
		if n := c.ring.LookupSend(c.remote.Addr(), opt.RNextKeyID, c.l3); n != nil {
			_ = c.switchTo(roleCurrent, n)
		}
	}
}
