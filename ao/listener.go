package ao

import (
	"errors"

	"github.com/tcpsig/tcpsig/mac"
	"github.com/tcpsig/tcpsig/segment"
)

// Listener verifies incoming SYNs against a keyring and starts
// connections (Linux's listening socket with TCP-AO keys; it never uses
// current or RNext keys itself). Safe for concurrent use.
type Listener struct {
	ring   *Keyring
	policy Policy
	l3     int
	counters
}

// NewListener returns a listener over ring in L3 domain l3 (0: default).
func NewListener(ring *Keyring, p Policy, l3 int) *Listener {
	return &Listener{ring: ring, policy: p, l3: l3}
}

// Counters returns the listener's counters.
func (l *Listener) Counters() Counters {
	if l == nil {
		return Counters{}
	}
	return l.counters.snapshot()
}

// Accept verifies an incoming SYN with the Receive_SYN traffic key of the
// MKT its KeyID names, and on success prepares conn for the connection:
// the peer's ISN known, current key = the MKT whose SendID is the SYN's
// RNextKeyID (else the newest MKT for the peer), RNext key = the MKT that
// verified the SYN (Linux tcp_ao_copy_all_matching). The stack then signs
// its SYN-ACK, which may carry payload, with conn.Sign: the SYN-ACK's
// sequence number is the connection's local ISN, so the stack may choose
// it after Accept.
//
// signed is false, with a nil error, for an unsigned SYN from a peer no
// MKT covers: the connection then runs without TCP-AO.
func (l *Listener) Accept(syn *segment.Segment, conn *Conn) (signed bool, err error) {
	if l == nil || l.ring == nil || conn == nil {
		return false, ErrNotInitialized
	}
	if err := syn.Check(); err != nil {
		return false, err
	}
	h := syn.Header
	if !isSYN(h.Flags()) {
		return false, ErrNotSYN
	}
	if syn.Auth().MD5 > 0 {
		return false, ErrUnexpected
	}
	src := syn.Src.Unmap()
	off, opt, err := findOption(syn)
	if err != nil {
		if l.policy.AORequired || l.ring.Covers(src, l.l3) {
			l.aoRequired.Add(1)
			return false, ErrAORequired
		}
		return false, nil
	}
	m := l.ring.LookupRecv(src, opt.KeyID, l.l3)
	if m == nil {
		l.keyNotFound.Add(1)
		return false, ErrKeyNotFound
	}
	if len(opt.MAC) != int(m.maclen) {
		l.bad.Add(1)
		m.bad.Add(1)
		return true, ErrMACLength
	}
	ep := Endpoint{
		Local:   netipAddrPort(syn.Dst, h.DstPort()),
		Remote:  netipAddrPort(src, h.SrcPort()),
		L3Index: l.l3,
	}
	conn.Close()
	conn.reset(l.ring, ep, l.policy)
	conn.risn = h.Seq() // for the Receive_SYN key; committed once the SYN verifies
	rl := &conn.recv
	rl.mu.Lock()
	k, _, err := conn.keyEntry(rl, m, false, true)
	var w *mac.Context
	if err == nil {
		w, err = rl.context(m)
	}
	if err == nil {
		j := job{m: m, key: k, w: w, sc: rl.scratch[:], off: off}
		err = j.verify(syn, opt.MAC)
	}
	rl.mu.Unlock()
	if err != nil {
		conn.Close()
		if errors.Is(err, ErrKeyNotFound) {
			l.keyNotFound.Add(1)
			return true, err
		}
		l.bad.Add(1)
		m.bad.Add(1)
		return true, err
	}
	l.good.Add(1)
	m.good.Add(1)
	conn.setRISN(h.Seq())
	// As Linux's tcp_ao_copy_all_matching: current = the MKT whose SendID
	// is the SYN's RNextKeyID, else the newest MKT for the peer.
	r := l.ring
	r.mu.Lock()
	if !r.has(m) {
		// The MKT was deleted as the SYN arrived: as gone.
		r.mu.Unlock()
		conn.Close()
		return true, ErrKeyNotFound
	}
	cur := r.LookupSend(src, opt.RNextKeyID, l.l3)
	if cur == nil {
		cur = r.newest(src, l.l3)
	}
	if cur == nil {
		cur = m
	}
	r.setRole(conn, roleCurrent, cur)
	r.setRole(conn, roleRNext, m)
	r.mu.Unlock()
	return true, nil
}
