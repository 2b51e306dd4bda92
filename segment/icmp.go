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
// fragment is read (Fragment set); a later fragment is ErrFragment.
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
			return ICMP{}, ErrShortPacket
		}
		return ICMP{Type: pkt[ihl], Code: pkt[ihl+1], Body: pkt[ihl+8 : total : total], Fragment: frag&0x2000 != 0}, nil
	case 6:
		if len(pkt) < ipv6HeaderSize {
			return ICMP{}, ErrShortPacket
		}
		end := ipv6HeaderSize + int(binary.BigEndian.Uint16(pkt[4:]))
		if end > len(pkt) {
			return ICMP{}, ErrShortPacket
		}
		pkt = pkt[:end:end]
		next, off, first, err := ipv6Upper(pkt, true)
		switch {
		case err != nil:
			return ICMP{}, err
		case next != 58:
			return ICMP{}, ErrNotICMP
		case off+8 > end:
			return ICMP{}, ErrShortPacket
		}
		return ICMP{V6: true, Type: pkt[off], Code: pkt[off+1], Body: pkt[off+8:], Fragment: first}, nil
	}
	return ICMP{}, ErrIPVersion
}

// QuotedTCP returns the source and destination of the TCP segment an
// ICMP error message quotes (an IP header of the message's family, past
// IPv6 extension headers, then at least the TCP ports), or false.
func (m ICMP) QuotedTCP() (src, dst netip.AddrPort, ok bool) {
	b := m.Body
	var tcp []byte
	switch {
	case !m.V6 && len(b) >= ipv4MinimumSize && b[0]>>4 == 4:
		ihl := int(b[0]&0x0f) * 4
		if ihl < ipv4MinimumSize || len(b) < ihl+4 || b[9] != protoTCP {
			return
		}
		src = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[12:16])), 0)
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[16:20])), 0)
		tcp = b[ihl:]
	case m.V6 && len(b) >= ipv6HeaderSize && b[0]>>4 == 6:
		// The quoted packet is cut short: walk what there is.
		next, off, _, err := ipv6Upper(b, true)
		if err != nil || next != protoTCP || len(b) < off+4 {
			return
		}
		src = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), 0)
		dst = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[24:40])), 0)
		tcp = b[off:]
	default:
		return
	}
	src = netip.AddrPortFrom(src.Addr(), binary.BigEndian.Uint16(tcp))
	dst = netip.AddrPortFrom(dst.Addr(), binary.BigEndian.Uint16(tcp[2:]))
	return src, dst, true
}
