package segment

import "net/netip"

// PacketAddrs returns the source and destination addresses of an IPv4 or
// IPv6 packet. It reads only the version and the fixed header's address
// fields, so a packet [ParsePacket] refuses (a bad length, a fragment, a
// protocol other than TCP, options that do not parse) still names its
// ends: what a caller needs to decide whose packet it is before judging
// it. IPv6 addresses keep their 16-byte form, as ParsePacket keeps them.
// A packet too short for its addresses is [ErrShortPacket], another
// version [ErrIPVersion]; it never reads past the fixed header.
func PacketAddrs(pkt []byte) (src, dst netip.Addr, err error) {
	if len(pkt) == 0 {
		return netip.Addr{}, netip.Addr{}, ErrShortPacket
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < ipv4MinimumSize {
			return netip.Addr{}, netip.Addr{}, ErrShortPacket
		}
		return netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20])), nil
	case 6:
		if len(pkt) < ipv6HeaderSize {
			return netip.Addr{}, netip.Addr{}, ErrShortPacket
		}
		return netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40])), nil
	}
	return netip.Addr{}, netip.Addr{}, ErrIPVersion
}

// WithTCP returns the segment of tcp (a TCP header with its options,
// and payload) carried in place of s's by a packet rebuilt from the one
// s was parsed from with the same IP addresses: an option inserted, say.
// The IP header is not read again, and s's addresses are kept exactly as
// s has them (a v4-mapped pair parsed from an IPv6 header stays IPv6,
// where [FromTCP] would unmap it); tcp is checked as FromTCP checks it
// and its errors are FromTCP's. s must pass [Segment.Check]
// ([ErrUnparsed]); its Frags are not carried over.
func (s *Segment) WithTCP(tcp []byte) (Segment, error) {
	if err := s.Check(); err != nil {
		return Segment{}, err
	}
	return parseTCP(s.src, s.dst, tcp, nil)
}
