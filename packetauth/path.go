package packetauth

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/internal/csum"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// The unsigned-segment errors of ao and md5sig, as ErrUnsigned too.
var (
	errUnsignedAO  = fmt.Errorf("%w: %w", ErrUnsigned, ao.ErrAORequired)
	errUnsignedMD5 = fmt.Errorf("%w: %w", ErrUnsigned, md5sig.ErrMissing)
)

// cover says how a peer in L3 domain l3 is covered: TCP-AO if an MKT
// applies to it there (Linux refuses MD5 for such a peer), else TCP-MD5 if
// a key does, else 0. An MKT or key bound to another domain does not apply.
func (l *Layer) cover(peer netip.Addr, l3 int) Kind {
	peer = peer.Unmap()
	if l.cfg.AO != nil && l.cfg.AO.Covers(peer, l3) {
		return KindAO
	}
	if l.cfg.MD5 != nil && l.cfg.MD5.Lookup(peer, l3) != nil {
		return KindMD5
	}
	return 0
}

// Outbound takes a packet the local stack sends. For a peer no key covers
// it returns pkt itself, untouched. For a covered peer it appends to dst
// the packet with the TCP-AO / MD5 option inserted first among the options
// (SACK blocks trimmed, as Linux, when 40 bytes would be exceeded), signed,
// IP lengths and IPv4/TCP checksums fixed (the TCP checksum updated from
// the stack's if Config.StackChecksums), and returns it (dst with
// cap >= len(pkt)+Overhead() means no allocation; dst must not overlap
// pkt). A non-nil error means drop; it is counted.
//
// An outbound SYN to a TCP-AO peer starts a client connection; a SYN-ACK
// completes a server connection whose SYN Inbound verified. A segment to a
// TCP-AO peer with no tracked connection, a RST included, cannot be signed
// (its ISNs are unknown) and is dropped with ErrNoConn, as Linux sends no
// RST it cannot sign (RFC 5925 §7.7); the peer's own timers then end its
// side. TCP-MD5 needs no ISNs: every segment to an MD5 peer is signed.
//
// The packet is taken to be in the layer's L3 domain, Config.L3Index;
// [Layer.OutboundL3] takes the domain per packet.
func (l *Layer) Outbound(dst, pkt []byte) ([]byte, error) {
	if !l.setUp() {
		return nil, ErrNotSetUp
	}
	return l.outbound(dst, pkt, l.cfg.L3Index)
}

func (l *Layer) outbound(dst, pkt []byte, l3 int) ([]byte, error) {
	p := packet{raw: pkt, l3: l3}
	var err error
	if p.seg, err = segment.ParsePacket(pkt); err != nil {
		return l.unparsed(pkt, err, false, l3)
	}
	seg := &p.seg
	h := seg.Header()
	flags := h.Flags()
	t := tuple{seg.Src().As16(), seg.Dst().As16(), h.SrcPort(), h.DstPort(), uint32(l3)}
	for try := 0; try < 2; try++ {
		sh, c := l.lookup(&t)
		if c != nil && !newClient(c, flags, h.Seq()) {
			out, free, err := l.outConn(sh, c, dst, &p)
			sh.mu.RUnlock()
			if free {
				l.remove(&t, c)
			}
			return out, err
		}
		sh.mu.RUnlock()
		kind := l.cover(seg.Dst(), l3)
		if c != nil && kind == 0 {
			l.remove(&t, c) // a new connection on a revoked one's addresses, to a peer no longer covered
		}
		switch {
		case kind == 0 && l.cfg.Policy.AORequired:
			return nil, l.drop(sh, nil, ao.ErrKeyNotFound)
		case kind == 0:
			sh.passed.Add(1)
			return pkt, nil
		case l.closed.Load():
			return nil, l.drop(sh, nil, ErrClosed)
		case flags.Only(segment.SYN, segment.SYN|segment.ACK|segment.RST) && try == 0:
			if err := l.startClient(kind, &t, seg); err != nil {
				return nil, l.drop(sh, nil, err)
			}
			continue // sign it as the new connection's
		case kind == KindMD5:
			out, err := l.signMD5(dst, &p, nil)
			if err != nil {
				return nil, l.drop(sh, nil, err)
			}
			sh.signed.Add(1)
			return out, nil
		}
		return nil, l.drop(sh, nil, ErrNoConn)
	}
	return nil, l.drop(l.shard(&t), nil, ErrNoConn) // the new connection vanished (Close)
}

// packet is a packet handed to the layer, the segment ParsePacket found
// in it (parsed once on the way in, then passed down) and its L3 domain.
type packet struct {
	raw []byte
	seg segment.Segment
	l3  int
}

// newClient reports whether an outbound SYN starts a new connection in
// place of c: another ISN than c's (the 4-tuple reused).
func newClient(c *conn, flags segment.Flags, seq uint32) bool {
	if !flags.Only(segment.SYN, segment.SYN|segment.ACK|segment.RST) {
		return false
	}
	lisn, _ := c.isns()
	return lisn != seq
}

// startClient tracks a connection the local stack opens with seg, a SYN.
func (l *Layer) startClient(kind Kind, t *tuple, seg *segment.Segment) error {
	now := time.Now()
	h := seg.Header()
	c := &conn{kind: kind, l3: t.l3, local: netip.AddrPortFrom(seg.Src(), h.SrcPort()), remote: netip.AddrPortFrom(seg.Dst(), h.DstPort())}
	c.touch(now)
	c.phase.Store(uint32(StateSynSent))
	if kind == KindMD5 {
		c.lisn = h.Seq()
	} else {
		ep := ao.Endpoint{Local: c.local, Remote: c.remote, L3Index: int(t.l3), LocalISN: h.Seq()}
		if err := c.ao.Init(l.cfg.AO, ep, l.cfg.Policy); err != nil {
			return err
		}
	}
	if err := l.insert(t, c, now); err != nil {
		c.close()
		return err
	}
	return nil
}

// outConn signs p for its tracked connection c (its shard read-locked)
// and reports whether c is to be freed.
func (l *Layer) outConn(sh *shard, c *conn, dst []byte, p *packet) ([]byte, bool, error) {
	c.seen()
	flags := p.seg.Header().Flags()
	var (
		out []byte
		err error
	)
	switch {
	case l.closed.Load():
		err = ErrClosed
	case l.revoke(c):
		err = ErrRevoked
	case c.kind == KindMD5:
		out, err = l.signMD5(dst, p, c.md5.Load())
	default:
		if out, err = l.signAO(dst, p, c); err != nil && beforeSynAck(c, flags) {
			err = ErrNoConn
		}
	}
	if err != nil {
		return nil, flags.Has(segment.RST), l.drop(sh, c, err)
	}
	c.signed.Add(1)
	sh.signed.Add(1)
	return out, c.track(flags, finOut), nil
}

// beforeSynAck reports whether c is a server connection whose SYN-ACK
// has not been signed and flags are not those of that SYN-ACK. The
// SYN-ACK gives the ao.Conn its local ISN as it is signed; nothing the
// stack sends before it (its RST refusing the connection, say) can be
// signed, and the peer knows no connection it belongs to: whatever
// refused it, it is ErrNoConn. It asks the ao.Conn: for the error path.
func beforeSynAck(c *conn, flags segment.Flags) bool {
	return c.phase.Load() == uint32(StateSynReceived) &&
		!flags.Only(segment.SYN|segment.ACK, segment.SYN|segment.ACK|segment.RST) && c.State() == StateSynReceived
}

// track follows FIN and RST on a segment that passed in direction dir
// (finOut or finIn) and reports whether the connection is to be freed.
func (c *conn) track(flags segment.Flags, dir uint32) bool {
	if flags.Has(segment.RST) {
		return true
	}
	if flags.Has(segment.FIN) && c.fins.Or(dir)|dir == finOut|finIn {
		if p := c.phase.Load(); p != uint32(StateClosing) && c.State() == StateEstablished &&
			c.phase.CompareAndSwap(p, uint32(StateClosing)) {
			c.closedAt.Store(time.Now().UnixNano())
		}
	}
	return false
}

// signAO inserts the TCP-AO option of c's current key into a copy of p
// appended to dst, and signs it. ao.Conn.Sign moves on by itself to the
// key that replaces one deleted mid-sign; what it cannot do is lay the
// option out anew when that key's MAC is longer than the option
// (ao.ErrNoRoom): the copy is made once more for the key current then.
func (l *Layer) signAO(dst []byte, p *packet, c *conn) ([]byte, error) {
	for try := 0; ; try++ {
		cur := c.ao.Current()
		if cur == nil {
			return nil, ao.ErrNoCurrentKey
		}
		var opt [20]byte
		out, s, err := insertOption(dst, p, ao.AppendOption(opt[:0], cur.MACLen()))
		if err == nil {
			err = c.ao.Sign(&s.seg)
		}
		if errors.Is(err, ao.ErrNoRoom) && try == 0 {
			continue
		}
		if err != nil {
			return nil, err
		}
		l.checksum(&p.seg, &s)
		return out, nil
	}
}

// signMD5 inserts NOP NOP + the MD5 option into a copy of p appended to
// dst, and signs it with the key for its destination in p's L3 domain
// (the key the peer signed with last, peerKey, while its schedule
// accepts it).
func (l *Layer) signMD5(dst []byte, p *packet, peerKey *md5sig.Key) ([]byte, error) {
	var opt [md5sig.OptionSpace]byte
	o := append(opt[:0], segment.OptionKindNOP, segment.OptionKindNOP, md5sig.OptionKind, md5sig.OptionLen)
	out, s, err := insertOption(dst, p, o[:md5sig.OptionSpace])
	if err == nil {
		_, err = l.cfg.MD5.SignWith(&s.seg, p.l3, peerKey)
	}
	if err != nil {
		return nil, err
	}
	l.checksum(&p.seg, &s)
	return out, nil
}

// checksum sets the TCP checksum of s, the signed packet made of the
// stack's seg: updated from seg's for the header words and the length
// that changed if Config.StackChecksums (the payload moved by a multiple
// of 4 bytes, so its words are the same), else summed anew.
func (l *Layer) checksum(seg *segment.Segment, s *packet) {
	off, _ := segment.TCPOffset(s.raw, &s.seg)
	tcp := segment.TCP(s.raw[off:])
	if !l.cfg.StackChecksums {
		tcp.SetChecksum(segment.TCPChecksum(s.seg.Src(), s.seg.Dst(), tcp))
		return
	}
	old := words(seg.Header(), len(seg.Header())+len(seg.Payload()))
	tcp.SetChecksum(csum.Update(seg.Header().Checksum(), old, words(s.seg.Header(), len(tcp))))
}

// insertOption appends to dst a copy of p (up to its IP length) with opt
// first among the TCP options, SACK blocks trimmed to fit, data offset and
// IP lengths set. It returns dst extended and the new packet (its tail)
// with its segment: the IP header is p's, so only the new TCP header is
// checked.
func insertOption(dst []byte, p *packet, opt []byte) ([]byte, packet, error) {
	seg := &p.seg
	if seg.Auth().AO > 0 || seg.Auth().MD5 > 0 {
		return nil, packet{}, ErrOptions // the stack signs itself: not ours to sign again
	}
	off, _ := segment.TCPOffset(p.raw, seg)
	h := seg.Header()
	var buf [segment.MaxOptionsLen]byte
	n := copy(buf[:], opt)
	rest, err := fitOptions(buf[n:n], h.Options(), len(buf)-n)
	if err != nil {
		return nil, packet{}, err
	}
	total := n + len(rest)
	for total%4 != 0 {
		buf[total] = segment.OptionKindNOP
		total++
	}
	start := len(dst)
	dst = append(dst, p.raw[:off]...)
	dst = append(dst, h[:segment.TCPMinimumSize]...)
	dst = append(dst, buf[:total]...)
	dst = append(dst, seg.Payload()...)
	np := packet{raw: dst[start:]}
	segment.TCP(np.raw[off:]).SetDataOffset(segment.TCPMinimumSize + total)
	if err := segment.Lengths(np.raw); err != nil {
		return nil, packet{}, err
	}
	if np.seg, err = seg.WithTCP(np.raw[off:]); err != nil {
		return nil, packet{}, err
	}
	return dst, np, nil
}

// Inbound takes a packet from the wire. Uncovered peer: pkt, untouched.
// Covered peer: verified, then copied to dst with the option replaced by
// NOPs (so a stack or kernel without the feature never sees it), the MSS
// of a SYN / SYN-ACK reduced by Overhead, the TCP checksum updated for
// the bytes changed (RFC 1624: a packet that came with a wrong checksum
// keeps a wrong one, for the stack to drop); the result is returned. pkt
// itself is never modified, except that dst may be pkt[:0] to rewrite it
// in place. A non-nil error (errors.Is:
// ao.ErrBadMAC, md5sig.ErrBadMAC, ErrUnsigned, ...) means drop; it is
// counted.
//
// A SYN from a TCP-AO peer is verified as ao.Listener.Accept does and
// starts a server connection; any other segment of a TCP-AO peer needs a
// tracked connection (else ErrNoConn). Fragments to or from covered peers
// are dropped (ErrFragment): one fragment carries no verifiable segment.
//
// The packet is taken to be in the layer's L3 domain, Config.L3Index;
// [Layer.InboundL3] takes the domain per packet.
func (l *Layer) Inbound(dst, pkt []byte) ([]byte, error) {
	if !l.setUp() {
		return nil, ErrNotSetUp
	}
	return l.inbound(dst, pkt, l.cfg.L3Index)
}

func (l *Layer) inbound(dst, pkt []byte, l3 int) ([]byte, error) {
	p := packet{raw: pkt, l3: l3}
	var err error
	if p.seg, err = segment.ParsePacket(pkt); err != nil {
		return l.unparsed(pkt, err, true, l3)
	}
	seg := &p.seg
	h := seg.Header()
	flags := h.Flags()
	synOnly := flags.Only(segment.SYN, segment.SYN|segment.ACK|segment.RST)
	t := tuple{seg.Dst().As16(), seg.Src().As16(), h.DstPort(), h.SrcPort(), uint32(l3)}
	sh, c := l.lookup(&t)
	if c != nil && !(synOnly && newServer(c, h.Seq())) {
		err := l.verifyConn(c, seg)
		free := err == nil && c.track(flags, finIn) // while c is tracked: track may ask its ao.Conn
		sh.mu.RUnlock()
		if err != nil {
			return nil, l.drop(sh, c, err)
		}
		c.seen()
		c.verified.Add(1)
		sh.verified.Add(1)
		out := l.strip(dst, &p)
		if free {
			l.remove(&t, c)
		}
		return out, nil
	}
	sh.mu.RUnlock()
	kind := l.cover(seg.Src(), l3)
	switch {
	case kind == 0 && l.cfg.Policy.AORequired && seg.Auth().AO == 0:
		return nil, l.drop(sh, nil, errUnsignedAO)
	case kind == 0 && l.cfg.Policy.AORequired:
		return nil, l.drop(sh, nil, ao.ErrKeyNotFound)
	case kind == 0:
		sh.passed.Add(1)
		return pkt, nil
	case l.closed.Load():
		return nil, l.drop(sh, nil, ErrClosed)
	case kind == KindMD5:
		k, err := l.cfg.MD5.VerifyWith(seg, l3, nil)
		if err != nil {
			return nil, l.drop(sh, nil, unsigned(err))
		}
		if synOnly {
			if err := l.startServer(KindMD5, &t, seg, k); err != nil {
				return nil, l.drop(sh, nil, err)
			}
		} else if !flags.Has(segment.RST) {
			l.adoptMD5(&t, seg, k)
		}
	case seg.Auth().AO == 0 && seg.Auth().MD5 == 0:
		return nil, l.drop(sh, nil, errUnsignedAO)
	case !synOnly:
		return nil, l.drop(sh, nil, ErrNoConn)
	default:
		if err := l.startServer(KindAO, &t, seg, nil); err != nil {
			return nil, l.drop(sh, nil, err)
		}
	}
	sh.verified.Add(1)
	return l.strip(dst, &p), nil
}

// adoptMD5 tracks a TCP-MD5 session met past its handshake (a front end
// that restarted), on its first verified segment: TCP-MD5 needs no state
// to sign and verify, but a tracked session is one a removed key revokes
// (Layer.RevokeUncovered), never left to pass unsigned. A full table only
// leaves it untracked.
func (l *Layer) adoptMD5(t *tuple, seg *segment.Segment, peerKey *md5sig.Key) {
	now := time.Now()
	h := seg.Header()
	c := &conn{kind: KindMD5, l3: t.l3, local: netip.AddrPortFrom(seg.Dst(), h.DstPort()), remote: netip.AddrPortFrom(seg.Src(), h.SrcPort())}
	c.md5.Store(peerKey)
	c.touch(now)
	c.phase.Store(uint32(StateEstablished))
	c.verified.Add(1)
	_ = l.insert(t, c, now)
}

// newServer reports whether an inbound SYN starts a new connection in
// place of c: a SYN with another ISN on a connection not yet established
// (the peer gave up and retried) or closed by FIN both ways (the 4-tuple
// reused). On an established connection such a SYN is verified with
// c's keys and the stack answers it (a challenge ACK).
func newServer(c *conn, seq uint32) bool {
	switch c.State() {
	case StateSynReceived, StateClosing:
		_, risn := c.isns()
		return risn != seq
	}
	return false
}

// startServer verifies a SYN (TCP-AO: as ao.Listener.Accept; MD5: done
// by the caller, with peerKey) and tracks the connection it starts.
func (l *Layer) startServer(kind Kind, t *tuple, seg *segment.Segment, peerKey *md5sig.Key) error {
	now := time.Now()
	h := seg.Header()
	c := &conn{kind: kind, l3: t.l3, local: netip.AddrPortFrom(seg.Dst(), h.DstPort()), remote: netip.AddrPortFrom(seg.Src(), h.SrcPort())}
	c.md5.Store(peerKey)
	c.touch(now)
	if kind == KindAO {
		c.phase.Store(uint32(StateSynReceived))
		signed, err := l.listenerIn(int(t.l3)).Accept(seg, &c.ao)
		if err == nil && !signed {
			err = errUnsignedAO
		}
		if err != nil {
			c.close()
			return err
		}
	} else {
		c.risn = h.Seq()
		c.phase.Store(uint32(StateEstablished)) // MD5 needs no ISN
	}
	c.verified.Add(1)
	if err := l.insert(t, c, now); err != nil {
		c.close()
		return err
	}
	return nil
}

// verifyConn verifies seg on its tracked connection c (shard read-locked).
func (l *Layer) verifyConn(c *conn, seg *segment.Segment) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if l.revoke(c) {
		return ErrRevoked
	}
	if c.kind == KindMD5 {
		peerKey := c.md5.Load()
		k, err := l.cfg.MD5.VerifyWith(seg, int(c.l3), peerKey)
		if err != nil {
			return unsigned(err)
		}
		if k != peerKey {
			c.md5.Store(k) // the peer moved to another key of its schedule
		}
		if seg.Header().Flags().Has(segment.SYN | segment.ACK) {
			c.phase.CompareAndSwap(uint32(StateSynSent), uint32(StateEstablished))
		}
		return nil
	}
	// The handshake is the ao.Conn's: a verified SYN-ACK gives it the
	// peer's ISN, and it refuses (ao.ErrNoISN) what a connection cannot
	// verify before it knows both.
	return unsigned(c.ao.Verify(seg))
}

// unsigned returns ao's and md5sig's errors for an unsigned segment as
// ErrUnsigned too, and any other error as it is.
func unsigned(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ao.ErrAORequired):
		return errUnsignedAO
	case errors.Is(err, md5sig.ErrMissing):
		return errUnsignedMD5
	}
	return err
}

// strip appends to dst a copy of p (up to its IP length) with the
// authentication option overwritten by NOPs, a SYN's MSS clamped by the
// overhead and the TCP checksum updated for the bytes that changed (a
// checksum that was wrong stays wrong).
func (l *Layer) strip(dst []byte, p *packet) []byte {
	pkt, seg := p.raw, &p.seg
	off, end := segment.TCPOffset(pkt, seg)
	hl := len(seg.Header())
	old := words(seg.Header(), 0) // before dst, which may be pkt[:0], overwrites it
	start := len(dst)
	dst = append(dst, pkt[:end]...)
	tcp := segment.TCP(dst[start+off : start+end])
	a := seg.Auth()
	switch {
	case a.AO > 0:
		fill(tcp[a.AO:a.AO+a.AOLen], segment.OptionKindNOP)
	case a.MD5 > 0:
		fill(tcp[a.MD5:a.MD5+segment.MD5OptionLen], segment.OptionKindNOP)
	}
	if tcp.Flags().Has(segment.SYN) {
		clampMSS(tcp[segment.TCPMinimumSize:hl], l.Overhead())
	}
	tcp.SetChecksum(csum.Update(tcp.Checksum(), old, words(tcp[:hl], 0)))
	return dst
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// unparsed decides on a packet ParsePacket refused: a covered peer's is
// dropped (fragments with ErrFragment, the rest as malformed), anything
// else passes untouched: non-TCP packets, packets whose addresses cannot
// be read, and uncovered peers' packets are the stack's to judge.
func (l *Layer) unparsed(pkt []byte, err error, inbound bool, l3 int) ([]byte, error) {
	src, dst, aerr := segment.PacketAddrs(pkt)
	peer, ok := dst, aerr == nil
	if inbound {
		peer = src
	}
	sh := &l.shards[0]
	if inbound && (errors.Is(err, segment.ErrNotTCP) || errors.Is(err, segment.ErrFragment)) {
		if err := l.icmp(pkt, l3); err != nil {
			return nil, l.drop(sh, nil, err)
		}
	}
	if !ok || errors.Is(err, segment.ErrNotTCP) || l.cover(peer, l3) == 0 {
		sh.passed.Add(1)
		return pkt, nil
	}
	if errors.Is(err, segment.ErrFragment) {
		return nil, l.drop(sh, nil, ErrFragment)
	}
	return nil, l.drop(sh, nil, err)
}

// icmp returns ErrICMP for an inbound ICMP hard error (RFC 5925 §7.8,
// segment.ICMP.HardError) for a TCP-AO connection, unless the policy
// accepts ICMP. It reads the message and its quoted packet as the kernel
// does (segment.ICMP.Quoted) and fails closed: it passes a hard error
// only when it quotes a peer no key covers, or a packet the kernel would
// hand to another protocol than TCP, or a whole TCP segment of no
// tracked TCP-AO connection. Anything it cannot judge is dropped: a
// quoted packet cut short or the kernel would not take; a hard error in
// fragments (no router sends one: it fits the minimum MTU) that quotes a
// covered peer, since the kernel would reassemble it past this check;
// and a first fragment cut before its ICMP header. A hard error for a
// tracked connection is counted on it, as Linux's tcp_ao_ignore_icmp.
// Anything else, later fragments included (without their first the
// kernel never reassembles them), is the stack's to judge.
func (l *Layer) icmp(pkt []byte, l3 int) error {
	if l.cfg.Policy.AcceptICMP {
		return nil
	}
	m, err := segment.ParseICMP(pkt)
	switch {
	case err != nil && m.Fragment:
		return ErrICMP
	case err != nil || !m.HardError():
		return nil
	}
	// The quoted packet is one we sent: its destination is the peer.
	q, err := m.Quoted()
	switch {
	case q.Dst.IsValid() && l.cover(q.Dst.Addr(), l3) == 0:
		return nil
	case err != nil || m.Fragment && q.TCP():
		return ErrICMP
	case !q.TCP():
		return nil
	}
	t := tupleOf(q.Src, q.Dst, l3)
	sh, c := l.lookup(&t)
	defer sh.mu.RUnlock()
	if c == nil || c.kind != KindAO {
		return nil
	}
	c.ao.ICMP(m.V6, m.Type, m.Code) // counts it on the connection
	c.dropped.Add(1)
	return ErrICMP
}
