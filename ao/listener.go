package ao

import (
	"errors"

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
	h := syn.Header()
	if !isSYN(h.Flags()) {
		return false, ErrNotSYN
	}
	if syn.Auth().MD5 > 0 {
		return false, ErrUnexpected
	}
	src := syn.Src().Unmap()
	off, opt, err := findOption(syn)
	if err != nil && !errors.Is(err, ErrNoOption) {
		return false, err
	}
	if err != nil {
		if l.policy.AORequired || l.ring.Covers(src, l.l3) {
			return false, l.record(nil, nil, ErrAORequired)
		}
		return false, nil
	}
	m := l.ring.LookupRecv(src, opt.KeyID, l.l3)
	if m == nil {
		return false, l.record(nil, nil, ErrKeyNotFound)
	}
	if len(opt.MAC) != int(m.maclen) {
		return true, l.record(m, nil, ErrMACLength)
	}
	ep := Endpoint{
		Local:   netipAddrPort(syn.Dst(), h.DstPort()),
		Remote:  netipAddrPort(src, h.SrcPort()),
		L3Index: l.l3,
	}
	conn.Close()
	conn.reset(l.ring, ep, l.policy)
	in := conn.input(false, true, h.Seq())
	j := job{m: m, off: off}
	err = j.once(&in, syn, opt.MAC, conn.hint)
	if err == nil && m.off.Load()&offAccept != 0 {
		err = ErrKeyNotFound // its accept lifetime ended as the SYN arrived
	}
	if err := l.record(m, nil, err); err != nil {
		conn.Close()
		return true, err
	}
	conn.setRISN(h.Seq())
	if !l.roles(conn, m, opt.RNextKeyID) {
		// The MKT was deleted as the SYN arrived: as gone.
		conn.Close()
		return true, ErrKeyNotFound
	}
	return true, nil
}

// roles gives conn its keys as Linux's tcp_ao_copy_all_matching does:
// current = the MKT whose SendID is the SYN's RNextKeyID, else the newest
// MKT for the peer, else m; RNext = m, the MKT that verified the SYN. It
// reports false if m is gone.
func (l *Listener) roles(conn *Conn, m *MKT, rnextKeyID uint8) bool {
	peer := conn.remote.Addr()
	if !conn.setRole(roleRNext, m) {
		return false
	}
	for _, cur := range [...]*MKT{l.ring.LookupSend(peer, rnextKeyID, l.l3), l.ring.pick(peer, l.l3, offSend), m} {
		if cur != nil && conn.setRole(roleCurrent, cur) {
			return true
		}
	}
	return false
}
