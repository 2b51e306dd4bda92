package segment

import (
	"encoding/binary"
	"errors"
	"math"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/csum"
)

// Sizes of the IP headers this package builds, and of the TCP option space.
const (
	IPv4HeaderLen = 20 // IPv4 header without options
	IPv6HeaderLen = 40 // fixed IPv6 header
	MaxOptionsLen = MaxHeaderLen - TCPMinimumSize
)

// ErrPacketTooLong: the packet does not fit its IP length field (65535
// bytes for IPv4, a 65535-byte payload for IPv6; jumbograms are not built).
var ErrPacketTooLong = errors.New("segment: packet too long for its IP length field")

// IP holds the fields of an IP header for [AppendIP] and [AppendPacket].
// The family of Src and Dst picks IPv4 or IPv6; both must be valid and of
// one family (IPv4-mapped addresses count as IPv4).
type IP struct {
	Src, Dst    netip.Addr
	TTL         uint8  // IPv4 time to live or IPv6 hop limit; 0 means 64
	TOS         uint8  // IPv4 type of service or IPv6 traffic class
	ID          uint16 // IPv4 identification
	MayFragment bool   // IPv4: leave Don't Fragment clear (TCP normally sets it)
	FlowLabel   uint32 // IPv6 flow label, 20 bits
}

// AppendIP appends an IPv4 header without options, its checksum computed,
// or an IPv6 header without extension headers, for a TCP segment of tcpLen
// bytes (header, options and payload), and returns the extended slice. It
// does not allocate when dst has room.
func AppendIP(dst []byte, ip IP, tcpLen int) ([]byte, error) {
	src, d := ip.Src.Unmap(), ip.Dst.Unmap()
	if !src.IsValid() || !d.IsValid() || src.Is4() != d.Is4() {
		return dst, ErrAddrFamily
	}
	ttl := ip.TTL
	if ttl == 0 {
		ttl = 64
	}
	if src.Is4() {
		if tcpLen < 0 || tcpLen > math.MaxUint16-IPv4HeaderLen {
			return dst, ErrPacketTooLong
		}
		var h [IPv4HeaderLen]byte
		h[0], h[1] = 0x45, ip.TOS
		binary.BigEndian.PutUint16(h[2:], uint16(IPv4HeaderLen+tcpLen))
		binary.BigEndian.PutUint16(h[4:], ip.ID)
		if !ip.MayFragment {
			h[6] = 0x40
		}
		h[8], h[9] = ttl, protoTCP
		s4, d4 := src.As4(), d.As4()
		copy(h[12:], s4[:])
		copy(h[16:], d4[:])
		binary.BigEndian.PutUint16(h[10:], IPv4Checksum(h[:]))
		return append(dst, h[:]...), nil
	}
	if tcpLen < 0 || tcpLen > math.MaxUint16 {
		return dst, ErrPacketTooLong
	}
	var h [IPv6HeaderLen]byte
	binary.BigEndian.PutUint32(h[0:], 6<<28|uint32(ip.TOS)<<20|ip.FlowLabel&0xfffff)
	binary.BigEndian.PutUint16(h[4:], uint16(tcpLen))
	h[6], h[7] = protoTCP, ttl
	s16, d16 := src.As16(), d.As16()
	copy(h[8:], s16[:])
	copy(h[24:], d16[:])
	return append(dst, h[:]...), nil
}

// AppendPacket appends a whole IP packet: the IP header of ip, the TCP
// header of f (laid out as [AppendTCP] does), the payload; lengths and
// checksums (IPv4 header, TCP) are set. A TCP-AO or TCP-MD5 option in
// f.Options is signed afterwards, and the TCP checksum then recomputed
// with [SetTCPChecksum].
func AppendPacket(dst []byte, ip IP, f Fields, payload []byte) ([]byte, error) {
	n := f.optionsLen()
	if n > MaxOptionsLen {
		return dst, ErrDataOffset
	}
	tcpLen := TCPMinimumSize + n + len(payload)
	out, err := AppendIP(dst, ip, tcpLen)
	if err != nil {
		return dst, err
	}
	tcp := len(out)
	out = AppendTCP(out, f)
	out = append(out, payload...)
	TCP(out[tcp:]).SetChecksum(TCPChecksum(ip.Src, ip.Dst, out[tcp:]))
	return out, nil
}

// Lengths sets the IP length fields of pkt, a whole IPv4/IPv6 packet, to
// len(pkt): the IPv4 total length (and the header checksum) or the IPv6
// payload length. Callers that add or remove bytes (a TCP option, say)
// call it, then [SetTCPChecksum].
func Lengths(pkt []byte) error {
	if len(pkt) == 0 {
		return ErrShortPacket
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < IPv4HeaderLen {
			return ErrShortPacket
		}
		ihl := int(pkt[0]&0x0f) * 4
		if ihl < IPv4HeaderLen || ihl > len(pkt) {
			return ErrIPHeaderLength
		}
		if len(pkt) > math.MaxUint16 {
			return ErrPacketTooLong
		}
		binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
		binary.BigEndian.PutUint16(pkt[10:], IPv4Checksum(pkt[:ihl]))
		return nil
	case 6:
		if len(pkt) < IPv6HeaderLen {
			return ErrShortPacket
		}
		if len(pkt)-IPv6HeaderLen > math.MaxUint16 {
			return ErrPacketTooLong
		}
		binary.BigEndian.PutUint16(pkt[4:], uint16(len(pkt)-IPv6HeaderLen))
		return nil
	}
	return ErrIPVersion
}

// TCPOffset returns the offset in pkt of the TCP header of s, a segment
// [ParsePacket] parsed from pkt, and the end of the packet by its IP length
// (bytes after it, such as Ethernet padding, are not part of it).
func TCPOffset(pkt []byte, s *Segment) (off, end int) {
	switch {
	case len(pkt) >= IPv4HeaderLen && pkt[0]>>4 == 4:
		end = int(binary.BigEndian.Uint16(pkt[2:]))
	case len(pkt) >= IPv6HeaderLen && pkt[0]>>4 == 6:
		end = IPv6HeaderLen + int(binary.BigEndian.Uint16(pkt[4:]))
	}
	if s == nil {
		return end, end
	}
	return end - len(s.header) - len(s.payload), end
}

// SetTCPChecksum computes the TCP checksum of pkt, a whole IPv4/IPv6
// packet whose lengths are right, and writes it into the TCP header; the
// IPv4 header checksum is set too.
func SetTCPChecksum(pkt []byte) error {
	s, err := ParsePacket(pkt)
	if err != nil {
		return err
	}
	off, end := TCPOffset(pkt, &s)
	tcp := TCP(pkt[off:end])
	tcp.SetChecksum(TCPChecksum(s.src, s.dst, tcp))
	if pkt[0]>>4 == 4 {
		ihl := int(pkt[0]&0x0f) * 4
		binary.BigEndian.PutUint16(pkt[10:], IPv4Checksum(pkt[:ihl]))
	}
	return nil
}

// IPv4Checksum returns the header checksum of an IPv4 header (RFC 791,
// RFC 1071), its checksum field taken as zero.
func IPv4Checksum(hdr []byte) uint16 {
	if len(hdr) < IPv4HeaderLen {
		return 0
	}
	s := csum.Sum(hdr[:10], 0)
	s = csum.Sum(hdr[12:], s)
	return ^csum.Fold(s)
}

// TCPChecksum returns the TCP checksum (RFC 9293 §3.1) of tcp, a whole TCP
// segment (header with options, and payload) from src to dst: the ones'
// complement of the ones' complement sum of the pseudo-header and the
// segment, its checksum field taken as zero. IPv4-mapped addresses give the
// IPv4 pseudo-header, as in [FromTCP].
//
// It never returns 0: a sum whose complement is 0 gives 0xFFFF, the
// other ones'-complement form of zero, which every receiver's check
// accepts alike. Linux's TCP-AO (tcp_ao_hash_pseudoheader) takes an
// inbound segment whose checksum field is 0 for one of its own outbound
// segments and hashes the pseudo-header with the addresses swapped, so it
// would refuse such a segment, and every retransmission of it.
func TCPChecksum(src, dst netip.Addr, tcp []byte) uint16 {
	var s uint64
	src, dst = src.Unmap(), dst.Unmap()
	if src.Is4() && dst.Is4() {
		a, b := src.As4(), dst.As4()
		s = csum.Sum(a[:], 0)
		s = csum.Sum(b[:], s)
	} else {
		a, b := src.As16(), dst.As16()
		s = csum.Sum(a[:], 0)
		s = csum.Sum(b[:], s)
	}
	s += protoTCP + uint64(uint32(len(tcp))>>16) + uint64(uint16(len(tcp)))
	if len(tcp) < TCPMinimumSize {
		s = csum.Sum(tcp, s)
	} else {
		s = csum.Sum(tcp[:TCPChecksumOffset], s)
		s = csum.Sum(tcp[TCPChecksumOffset+2:], s)
	}
	return csum.TCP(s)
}

// Has reports whether every flag of g is set in f.
func (f Flags) Has(g Flags) bool { return f&g == g }

// Only reports whether, of the flags in mask, exactly those of g are set:
// Only(SYN, SYN|ACK) is a SYN that is not a SYN-ACK.
func (f Flags) Only(g, mask Flags) bool { return f&mask == g }

// SetSeq sets the sequence number.
func (t TCP) SetSeq(v uint32) {
	if len(t) < TCPMinimumSize {
		return
	}
	binary.BigEndian.PutUint32(t[4:], v)
}

// SetAck sets the acknowledgment number.
func (t TCP) SetAck(v uint32) {
	if len(t) < TCPMinimumSize {
		return
	}
	binary.BigEndian.PutUint32(t[8:], v)
}

// SetFlags sets the eight flag bits of byte 13.
func (t TCP) SetFlags(f Flags) {
	if len(t) < TCPMinimumSize {
		return
	}
	t[13] = byte(f)
}

// SetDataOffset sets the data offset field to n bytes (a multiple of 4
// from 20 to 60); the low four bits of byte 12 are kept.
func (t TCP) SetDataOffset(n int) {
	if len(t) < TCPMinimumSize {
		return
	}
	t[12] = byte(n/4)<<4 | t[12]&0x0f
}

// SetChecksum sets the checksum field.
func (t TCP) SetChecksum(v uint16) {
	if len(t) < TCPMinimumSize {
		return
	}
	binary.BigEndian.PutUint16(t[TCPChecksumOffset:], v)
}
