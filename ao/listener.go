package ao

import (
	"errors"

	"github.com/tcpsig/tcpsig/kdf"
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
// both ISNs known (localISN is the one the stack chose for its SYN-ACK),
// current key = the MKT whose SendID is the SYN's RNextKeyID (else the
// newest MKT for the peer), RNext key = the MKT that verified the SYN
// (Linux tcp_ao_copy_all_matching). The
// stack then signs its SYN-ACK, which may carry payload, with conn.Sign.
//
// signed is false, with a nil error, for an unsigned SYN from a peer no
// MKT covers: the connection then runs without TCP-AO.
func (l *Listener) Accept(syn *segment.Segment, localISN uint32, conn *Conn) (signed bool, err error) {
	if l == nil || l.ring == nil || conn == nil {
		return false, ErrNotInitialized
	}
	if err := checkSegment(syn); err != nil {
		return false, err
	}
	h := syn.Header
	if !isSYN(h.Flags()) {
		return false, ErrNotSYN
	}
	if syn.Auth.MD5 > 0 {
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
		Local:    netipAddrPort(syn.Dst, h.DstPort()),
		Remote:   netipAddrPort(src, h.SrcPort()),
		L3Index:  l.l3,
		LocalISN: localISN,
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
		err = verify(m, k, w, rl.scratch[:], syn, off, opt.MAC, 0)
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

// SignReset signs a RST the stack built in reply to segment in when no
// connection state exists for it, given the two ISNs the stack can name
// (from a TIME-WAIT record, or a syncookie ACK: see [SyncookieISNs]).
// As Linux does, the RST's KeyID is the one the peer asked for with its
// RNextKeyID and its RNextKeyID is that MKT's RecvID. With no ISNs at all
// a RST cannot be signed (RFC 5925 §7.7); Linux then sends none.
func (l *Listener) SignReset(in, rst *segment.Segment, localISN, remoteISN uint32) error {
	if l == nil || l.ring == nil {
		return ErrNotInitialized
	}
	if err := checkSegment(in); err != nil {
		return err
	}
	src := in.Src.Unmap()
	m := (*MKT)(nil)
	if _, opt, err := findOption(in); err == nil {
		if m = l.ring.LookupSend(src, opt.RNextKeyID, l.l3); m == nil {
			m = l.ring.LookupRecv(src, opt.KeyID, l.l3)
		}
	} else {
		m = l.ring.first(src, l.l3)
	}
	if m == nil {
		return ErrKeyNotFound
	}
	if err := checkSegment(rst); err != nil {
		return err
	}
	sne := ComputeSNE(0, localISN, rst.Header.Seq())
	return SignSegment(m, ISNs{Src: localISN, Dst: remoteISN}, sne, m.recvID, rst)
}

// SignListenReset signs rst, a RST the stack built in reply to segment in
// that a listening socket answers itself (an ACK that matches no
// connection or TIME-WAIT record, say), exactly as a Linux listener does
// (tcp_ao_prepare_reset for TCP_LISTEN). Linux has no ISNs there, so it
// uses the traffic key of in's own direction (in's addresses and ports)
// with ISNs (in's sequence number, 0) and SNE 0, the MKT whose RecvID is
// in's RNextKeyID (Linux compares it with RecvIDs on this path, SendIDs on
// the others), KeyID = that MKT's SendID and RNextKeyID = its RecvID.
// With SendID ≠ RecvID such a MKT usually does not exist: then
// [ErrKeyNotFound], and Linux sends no RST. A peer with a connection
// cannot verify such a RST (its ISNs differ), so Linux peers drop it; it
// is here so that a stack can put on the wire what Linux puts there, and
// a verifier can recognise it. An in without a TCP-AO option gets
// [ErrNoOption]: Linux then sends its RST unsigned.
func (l *Listener) SignListenReset(in, rst *segment.Segment) error {
	if l == nil || l.ring == nil {
		return ErrNotInitialized
	}
	if err := checkSegment(in); err != nil {
		return err
	}
	_, opt, err := findOption(in)
	if err != nil {
		return err
	}
	m := l.ring.LookupRecv(in.Src.Unmap(), opt.RNextKeyID, l.l3)
	if m == nil {
		return ErrKeyNotFound
	}
	if err := checkSegment(rst); err != nil {
		return err
	}
	ki := listenInput(in)
	return signOnce(m, &ki, 0, m.recvID, rst)
}

// VerifyListenReset checks rst, sent in reply to in, as the RST of a Linux
// listening socket (see [Listener.SignListenReset]): its MAC under the
// traffic key of in's direction with ISNs (in's sequence number, 0) and
// SNE 0. m is an MKT of either end with the key, algorithm, MAC length and
// options flag the listener used. No peer accepts such a RST (a
// connection's Verify rejects it); this is for readers of captures, to
// tell it from a forgery or a wrong key. It returns nil, [ErrNoOption],
// [ErrMACLength], [ErrBadMAC], or [ErrKeyNotFound] when m is nil or
// deleted.
func VerifyListenReset(m *MKT, in, rst *segment.Segment) error {
	if err := checkSegment(in); err != nil {
		return err
	}
	ki := listenInput(in)
	return verifyOnce(m, &ki, 0, rst)
}

// listenInput is the KDF input a Linux listener signs a RST to in with
// (tcp_ao_prepare_reset, TCP_LISTEN): in's own direction, ISNs (in's
// sequence number, 0).
func listenInput(in *segment.Segment) kdf.Input {
	h := in.Header
	return kdf.Input{Src: in.Src, Dst: in.Dst, SrcPort: h.SrcPort(), DstPort: h.DstPort(), SrcISN: h.Seq()}
}

// SyncookieISNs returns the ISNs a listener infers from an ACK that
// completes a syncookie handshake (Linux tcp_inbound_ao_hash): the peer's
// is seq−1, ours ack−1. A segment without a TCP header gives zeros.
func SyncookieISNs(ack *segment.Segment) (localISN, remoteISN uint32) {
	if ack == nil || len(ack.Header) < segment.TCPMinimumSize {
		return 0, 0
	}
	return ack.Header.Ack() - 1, ack.Header.Seq() - 1
}
