package segment

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// ErrNotICMP: ParseICMP was given a packet that is not ICMP (IPv4) or
// ICMPv6.
var ErrNotICMP = errors.New("segment: not an ICMP packet")

// ICMP is an ICMP (IPv4) or ICMPv6 message: its type and code and what
// follows its 8-byte header, which for an error message is the start of
// the packet it quotes.
type ICMP struct {
	V6         bool
	Type, Code uint8
	Body       []byte
	// Fragment: the message is the first fragment of a fragmented
	// packet, so Body may stop short (the rest comes in later fragments).
	Fragment bool
}

// HardError reports whether m is one of the ICMP hard errors RFC 5925
// §7.8 has a TCP-AO connection ignore, as Linux's tcp_ao_ignore_icmp:
// destination unreachable with codes 2–4 (ICMP) or 1 and 4 (ICMPv6).
func (m ICMP) HardError() bool {
	if m.V6 {
		return m.Type == 1 && (m.Code == 1 || m.Code == 4)
	}
	return m.Type == 3 && m.Code >= 2 && m.Code <= 4
}

// ParseICMP reads the ICMP or ICMPv6 message of an IP packet, past
// IPv6 extension headers as Linux's input path skips them. A first
// fragment is read (Fragment set); a later fragment is ErrFragment. On
// an error, Fragment (and V6) still report a first fragment whose ICMP
// header, or a header before it, is cut short: the rest may come in
// later fragments, so what the reassembled message says is unknown.
func ParseICMP(pkt []byte) (ICMP, error) {
	if len(pkt) == 0 {
		return ICMP{}, ErrShortPacket
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < ipv4MinimumSize {
			return ICMP{}, ErrShortPacket
		}
		ihl, total := int(pkt[0]&0x0f)*4, int(binary.BigEndian.Uint16(pkt[2:]))
		frag := binary.BigEndian.Uint16(pkt[6:])
		first := frag&0x2000 != 0
		switch {
		case ihl < ipv4MinimumSize || ihl > total:
			return ICMP{}, ErrIPHeaderLength
		case total > len(pkt):
			return ICMP{}, ErrShortPacket
		case pkt[9] != 1:
			return ICMP{}, ErrNotICMP
		case frag&0x1fff != 0: // a later fragment
			return ICMP{}, ErrFragment
		case ihl+8 > total:
			return ICMP{Fragment: first}, ErrShortPacket
		}
		return ICMP{Type: pkt[ihl], Code: pkt[ihl+1], Body: pkt[ihl+8 : total : total], Fragment: first}, nil
	case 6:
		if len(pkt) < ipv6HeaderSize {
			return ICMP{}, ErrShortPacket
		}
		end := ipv6HeaderSize + int(binary.BigEndian.Uint16(pkt[4:]))
		if end > len(pkt) {
			return ICMP{}, ErrShortPacket
		}
		pkt = pkt[:end:end]
		next, off, first, err := ipv6Upper(pkt, walkFirst)
		switch {
		case err != nil:
			return ICMP{V6: true, Fragment: first}, err
		case next != 58:
			return ICMP{}, ErrNotICMP
		case off+8 > end:
			return ICMP{V6: true, Fragment: first}, ErrShortPacket
		}
		return ICMP{V6: true, Type: pkt[off], Code: pkt[off+1], Body: pkt[off+8:], Fragment: first}, nil
	}
	return ICMP{}, ErrIPVersion
}

// Quote is what an ICMP error message quotes of the packet that caused
// it, as [ICMP.Quoted] reads it.
type Quote struct {
	// Src and Dst: the quoted packet's source and destination, in the
	// message's family; the ports only when Proto is TCP.
	Src, Dst netip.AddrPort
	// Proto: the protocol whose error handler Linux hands the message
	// to: the quoted IPv4 header's protocol field, or the IPv6 header
	// that ends the walk past its extension headers (44, a later
	// fragment's header, which no handler takes).
	Proto uint8
}

// TCP reports whether the kernel hands the error to TCP (Proto is 6).
func (q Quote) TCP() bool { return q.Proto == protoTCP }

// Quoted reads the packet an ICMP error message quotes as Linux reads it
// before handing the error to a protocol (icmp_unreach and
// icmp_socket_deliver, icmpv6_notify), then to tcp_v4_err or tcp_v6_err:
// the header is read as the message's family whatever its version nibble;
// an IPv4 one needs 20 bytes and an IHL of 5 or more; an IPv6 one's
// extension headers are skipped as ipv6_skip_exthdr skips them
// (hop-by-hop anywhere, any number of them); then 8 bytes of the
// protocol's header must follow. Where the kernel would drop the message
// instead (too short, a chain it cannot walk), or the quoted packet is
// cut short in a first fragment's body, Quoted returns an error; Dst's
// address is still set when the quoted header's addresses are there.
func (m ICMP) Quoted() (q Quote, err error) {
	b := m.Body
	var off int
	if m.V6 {
		if len(b) < ipv6HeaderSize {
			return Quote{}, ErrShortPacket
		}
		src, dst := netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
		q = Quote{Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(dst, 0)}
		q.Proto, off, _, err = ipv6Upper(b, walkQuoted)
		if err != nil {
			return q, err
		}
	} else {
		if len(b) < ipv4MinimumSize {
			return Quote{}, ErrShortPacket
		}
		src, dst := netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
		q = Quote{Src: netip.AddrPortFrom(src, 0), Dst: netip.AddrPortFrom(dst, 0), Proto: b[9]}
		if off = int(b[0]&0x0f) * 4; off < ipv4MinimumSize {
			return q, ErrIPHeaderLength
		}
	}
	if len(b) < off+8 {
		return q, ErrShortPacket
	}
	if q.TCP() {
		q.Src = netip.AddrPortFrom(q.Src.Addr(), binary.BigEndian.Uint16(b[off:]))
		q.Dst = netip.AddrPortFrom(q.Dst.Addr(), binary.BigEndian.Uint16(b[off+2:]))
	}
	return q, nil
}

// QuotedTCP returns the source and destination of the TCP segment an
// ICMP error message quotes, as [ICMP.Quoted] reads it, or false.
func (m ICMP) QuotedTCP() (src, dst netip.AddrPort, ok bool) {
	q, err := m.Quoted()
	if err != nil || !q.TCP() {
		return netip.AddrPort{}, netip.AddrPort{}, false
	}
	return q.Src, q.Dst, true
}
