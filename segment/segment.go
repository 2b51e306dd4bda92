// Package segment parses TCP segments for TCP-AO (RFC 5925) and TCP-MD5
// (RFC 2385) and builds the TCP pseudo-header both of them put under the MAC.
//
// It promises, for any input bytes:
//   - no copies: a [Segment] is a view (sub-slices) of the caller's buffer;
//   - no allocations in [ParsePacket], [FromTCP], [TCP.AuthOptions],
//     [AppendPseudoHeader] (given capacity) and [Segment.EachPayload];
//   - no panics and no reads past the IP or TCP lengths: malformed input
//     returns one of the sentinel errors below, to be tested with errors.Is;
//   - the authentication options are checked exactly as Linux's
//     tcp_do_parse_auth_options() checks them, so a segment Linux drops with
//     SKB_DROP_REASON_TCP_AUTH_HDR is an error here too.
//
// In order, for a received packet: [ParsePacket] (or [FromTCP] with the
// addresses) finds the options (Segment.Auth), then ao or md5sig verifies
// it; to send: [AppendPacket], the ao or md5sig signer, [SetTCPChecksum].
//
// Checksums (IPv4 header, TCP) are not verified: TCP-AO and TCP-MD5 compute
// their MAC with the checksum field zeroed. For stacks that build packets,
// [AppendPacket], [AppendIP], [Lengths], [TCPChecksum] and [SetTCPChecksum]
// lay out IPv4/IPv6 headers, lengths and checksums, and [Flags.Has] and the
// TCP setters handle the header fields.
package segment

import (
	"encoding/binary"
	"errors"
	"math"
	"net/netip"
)

// Errors for malformed input. ErrOptionLength, ErrAuthOption,
// ErrDuplicateAuth and ErrBothAuth are the cases Linux drops with
// SKB_DROP_REASON_TCP_AUTH_HDR.
var (
	ErrShortPacket    = errors.New("segment: IP packet truncated")
	ErrIPVersion      = errors.New("segment: IP version is neither 4 nor 6")
	ErrIPHeaderLength = errors.New("segment: bad IPv4 header length")
	ErrNotTCP         = errors.New("segment: not a TCP packet")
	ErrFragment       = errors.New("segment: IP fragment")
	ErrExtHeaderChain = errors.New("segment: malformed IPv6 extension header chain")
	ErrShortTCP       = errors.New("segment: TCP header shorter than 20 bytes")
	ErrDataOffset     = errors.New("segment: bad TCP data offset")
	ErrOptionLength   = errors.New("segment: bad TCP option length")
	ErrAuthOption     = errors.New("segment: bad length of MD5 or AO option")
	ErrDuplicateAuth  = errors.New("segment: duplicate MD5 or AO option")
	ErrBothAuth       = errors.New("segment: both MD5 and AO options")
	ErrAddrFamily     = errors.New("segment: invalid or mixed address families")
	ErrSegmentTooLong = errors.New("segment: segment too long for the pseudo-header length field")
	// ErrUnparsed is a Segment that ParsePacket or FromTCP did not make.
	ErrUnparsed = errors.New("segment: not as ParsePacket or FromTCP made it")
)

const (
	protoTCP        = 6
	ipv4MinimumSize = 20
	ipv6HeaderSize  = 40
)

// Segment is a view of a TCP segment and the addresses of its pseudo-header.
// It never copies the header or the payload. Only ParsePacket and FromTCP
// (and WithTCP, from one of theirs) make one: they validate it once and
// note where its authentication option is ([Segment.Auth]). Its fields
// are its own, so what the parse found cannot be changed by a caller:
// [Segment.Check] only asks whether a parse made it. (The bytes stay the
// caller's: a signer writes the MAC into them, and whatever a caller
// writes there is read within the lengths the parse fixed.)
type Segment struct {
	src, dst netip.Addr // from the IP header, or given to FromTCP
	header   TCP        // the TCP header with options: exactly DataOffset bytes of the input (capacity too)
	payload  []byte     // payload contiguous with the header in the input; may be empty
	frags    [][]byte   // further payload (scatter-gather), owned by the caller; may be nil
	auth     Auth       // where the parse found the MD5 and AO options in header
	parsed   bool       // made by ParsePacket or FromTCP
}

// Src returns the source address of the segment's pseudo-header.
func (s *Segment) Src() netip.Addr {
	if s == nil {
		return netip.Addr{}
	}
	return s.src
}

// Dst returns the destination address of the segment's pseudo-header.
func (s *Segment) Dst() netip.Addr {
	if s == nil {
		return netip.Addr{}
	}
	return s.dst
}

// Header returns the TCP header with its options: exactly its data
// offset's bytes of the input, a view of the caller's buffer.
func (s *Segment) Header() TCP {
	if s == nil {
		return nil
	}
	return s.header
}

// Payload returns the payload that follows the header in the input
// (maybe empty).
func (s *Segment) Payload() []byte {
	if s == nil {
		return nil
	}
	return s.payload
}

// Frags returns the further payload FromTCP was given (scatter-gather),
// the caller's; nil without.
func (s *Segment) Frags() [][]byte {
	if s == nil {
		return nil
	}
	return s.frags
}

// Auth returns where the parse found the MD5 and AO options in Header
// (the zero Auth for a Segment that ParsePacket or FromTCP did not make).
func (s *Segment) Auth() Auth {
	if s == nil {
		return noAuth
	}
	return s.auth
}

// Check is the one check a signer or verifier makes of a segment: that
// ParsePacket or FromTCP made it, [ErrUnparsed] otherwise (a nil or zero
// Segment). What they found cannot have changed since.
func (s *Segment) Check() error {
	if s == nil || !s.parsed {
		return ErrUnparsed
	}
	return nil
}

// ShortenAO shortens the segment's TCP-AO option to n bytes (at least 4,
// at most its length), turning the bytes it frees into NOPs: how a signer
// fits an option laid out for a longer MAC. Without a TCP-AO option, or
// with n out of range, it is [ErrAuthOption].
func (s *Segment) ShortenAO(n int) error {
	if err := s.Check(); err != nil {
		return err
	}
	off, old := s.auth.AO, s.auth.AOLen
	if off == 0 || n < 4 || n > old {
		return ErrAuthOption
	}
	s.header[off+1] = byte(n)
	for i := off + n; i < off+old; i++ {
		s.header[i] = OptionKindNOP
	}
	s.auth.AOLen = n
	return nil
}

// ParsePacket parses a whole IPv4 or IPv6 packet carrying a TCP segment.
//
// The IPv4 total length or IPv6 payload length decides where the packet
// ends; trailing bytes (Ethernet padding) are ignored. IPv4 fragments are
// refused. IPv6 extension headers are skipped: hop-by-hop options (only as
// the first), routing, destination options and AH, at most 16 of them; a
// fragment header is ErrFragment, anything else that is not TCP (ESP,
// no-next-header) is ErrNotTCP. Jumbograms are not supported.
//
// A packet parsed from an IPv6 header keeps 16-byte addresses, even
// IPv4-mapped ones, so its pseudo-header is the IPv6 one, as on the wire.
func ParsePacket(pkt []byte) (Segment, error) {
	if len(pkt) == 0 {
		return Segment{}, ErrShortPacket
	}
	switch pkt[0] >> 4 {
	case 4:
		return parseIPv4(pkt)
	case 6:
		return parseIPv6(pkt)
	}
	return Segment{}, ErrIPVersion
}

func parseIPv4(pkt []byte) (Segment, error) {
	if len(pkt) < ipv4MinimumSize {
		return Segment{}, ErrShortPacket
	}
	ihl := int(pkt[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(pkt[2:]))
	switch {
	case ihl < ipv4MinimumSize:
		return Segment{}, ErrIPHeaderLength
	case total > len(pkt):
		return Segment{}, ErrShortPacket
	case ihl > total:
		return Segment{}, ErrIPHeaderLength
	case binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0: // MF flag or fragment offset
		return Segment{}, ErrFragment
	case pkt[9] != protoTCP:
		return Segment{}, ErrNotTCP
	}
	src := netip.AddrFrom4([4]byte(pkt[12:16]))
	dst := netip.AddrFrom4([4]byte(pkt[16:20]))
	return parseTCP(src, dst, pkt[ihl:total:total], nil)
}

func parseIPv6(pkt []byte) (Segment, error) {
	if len(pkt) < ipv6HeaderSize {
		return Segment{}, ErrShortPacket
	}
	end := ipv6HeaderSize + int(binary.BigEndian.Uint16(pkt[4:]))
	if end > len(pkt) {
		return Segment{}, ErrShortPacket
	}
	pkt = pkt[:end:end]
	next, off, _, err := ipv6Upper(pkt, walkInput)
	switch {
	case err != nil:
		return Segment{}, err
	case next != protoTCP:
		return Segment{}, ErrNotTCP
	}
	src := netip.AddrFrom16([16]byte(pkt[8:24]))
	dst := netip.AddrFrom16([16]byte(pkt[24:40]))
	return parseTCP(src, dst, pkt[off:], nil)
}

// walk says how ipv6Upper walks a chain of IPv6 extension headers.
type walk uint8

const (
	// walkInput: a packet as Linux's input path takes it. Hop-by-hop
	// options come only right after the IPv6 header (RFC 8200 §4.3; the
	// kernel has no handler for them elsewhere); a fragment header is
	// ErrFragment.
	walkInput walk = iota
	// walkFirst: as walkInput, but through the fragment header of a
	// first fragment (offset 0), as an ICMP message is read.
	walkFirst
	// walkQuoted: the packet an ICMP error quotes, as Linux's
	// ipv6_skip_exthdr skips its headers for icmpv6_notify: hop-by-hop
	// options anywhere, and a later fragment's header ends the walk with
	// 44 as the protocol (no error handler takes it).
	walkQuoted
)

// ipv6Upper walks the extension headers of pkt, an IPv6 packet cut to its
// payload length (or, walkQuoted, the quoted part of one), and returns
// the upper-layer protocol and its offset; frag reports a first fragment
// with more to come, even with an error (a header cut short may continue
// in a later fragment). Like the kernel's walks it has no limit on the
// number of headers: each moves it on by 8 bytes or more, so the work
// is bounded by the packet's length. ESP and "no next header" end the
// walk as upper-layer protocols.
func ipv6Upper(pkt []byte, w walk) (next byte, off int, frag bool, err error) {
	next, off = pkt[6], ipv6HeaderSize
	end := len(pkt)
	for n := 0; ; n++ {
		var size int
		switch next {
		case 0: // hop-by-hop options
			if n != 0 && w != walkQuoted {
				return 0, 0, frag, ErrExtHeaderChain
			}
			fallthrough
		case 43, 60: // routing, destination options: length in 8-octet units, not counting the first
			if off+2 > end {
				return 0, 0, frag, ErrExtHeaderChain
			}
			size = (int(pkt[off+1]) + 1) * 8
		case 51: // AH: length in 4-octet units, not counting the first two (RFC 4302 §2.2)
			if off+2 > end {
				return 0, 0, frag, ErrExtHeaderChain
			}
			size = (int(pkt[off+1]) + 2) * 4
		case 44: // fragment: 8 bytes, the offset in the top 13 bits of bytes 2-3, M in bit 0
			switch {
			case w == walkInput:
				return 0, 0, frag, ErrFragment
			case off+8 > end && w == walkQuoted:
				return 0, 0, frag, ErrExtHeaderChain
			case off+8 > end:
				return 0, 0, frag, ErrFragment
			case binary.BigEndian.Uint16(pkt[off+2:])&^7 == 0: // a first fragment
			case w == walkQuoted:
				return next, off, frag, nil
			default:
				return 0, 0, frag, ErrFragment
			}
			// An atomic fragment (M clear) is a whole packet.
			size, frag = 8, frag || pkt[off+3]&1 != 0
		default: // TCP, ICMPv6, ESP (50), no next header (59), UDP, ...
			return next, off, frag, nil
		}
		if off+size > end {
			return 0, 0, frag, ErrExtHeaderChain
		}
		next, off = pkt[off], off+size
	}
}

// FromTCP makes a Segment of a TCP segment (header and, optionally, the
// payload contiguous with it) given its addresses, plus further payload
// fragments in order. The fragments slice is kept, not copied: pass a slice
// you own as FromTCP(src, dst, tcp, frags...) and FromTCP does not allocate
// (listing fragments as separate arguments makes Go allocate the slice).
//
// Addresses are normalised so that a Segment looks the same whichever way it
// was made: IPv4-mapped IPv6 addresses are unmapped to IPv4 (Linux, too,
// treats them as AF_INET), so the segment gets the IPv4 pseudo-header; IPv6
// zones are dropped, since the pseudo-header has no room for them and parsed
// packets have none. Callers holding a packet that really travelled as IPv6
// with v4-mapped addresses should use ParsePacket. After that, both addresses
// must be valid and of the same family, else ErrAddrFamily.
func FromTCP(src, dst netip.Addr, tcp []byte, frags ...[]byte) (Segment, error) {
	src, dst = src.Unmap().WithZone(""), dst.Unmap().WithZone("")
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return Segment{}, ErrAddrFamily
	}
	return parseTCP(src, dst, tcp, frags)
}

func parseTCP(src, dst netip.Addr, tcp []byte, frags [][]byte) (Segment, error) {
	auth, err := TCP(tcp).AuthOptions() // validates length and data offset, too
	if err != nil {
		return Segment{}, err
	}
	if len(frags) == 0 {
		frags = nil
	}
	doff := TCP(tcp).DataOffset()
	s := Segment{
		src:     src,
		dst:     dst,
		header:  TCP(tcp[:doff:doff]),
		payload: tcp[doff:len(tcp):len(tcp)],
		frags:   frags,
		auth:    auth,
		parsed:  true,
	}
	limit := math.MaxUint32
	if src.Is4() {
		limit = math.MaxUint16
	}
	if s.Len() > limit {
		return Segment{}, ErrSegmentTooLong
	}
	return s, nil
}

// Len returns the length of the whole segment, header and all payload: the
// length in its pseudo-header.
func (s *Segment) Len() int {
	if s == nil {
		return 0
	}
	n := len(s.header) + len(s.payload)
	for _, f := range s.frags {
		n += len(f)
	}
	return n
}

// Is4 reports whether the segment has IPv4 addresses, and so the 12-byte
// IPv4 pseudo-header.
func (s *Segment) Is4() bool { return s != nil && s.src.Is4() }

// EachPayload calls fn with Payload and then each of Frags, skipping empty
// ones: the bytes a MAC covers after the header, in order, without copying.
// fn does not escape, so a closure passed here is not allocated.
func (s *Segment) EachPayload(fn func([]byte)) {
	if s == nil || fn == nil {
		return
	}
	if len(s.payload) > 0 {
		fn(s.payload)
	}
	for _, f := range s.frags {
		if len(f) > 0 {
			fn(f)
		}
	}
}

// AppendPseudoHeader appends the TCP pseudo-header for a segment of length
// bytes (header with options plus payload) from src to dstAddr, and returns
// the extended slice; it does not allocate when dst has room.
//
// With two IPv4 addresses it is the 12-byte IPv4 form: saddr, daddr, 0, 6,
// be16(length) (RFC 9293 §3.1, Linux struct tcp4_pseudohdr). Otherwise it is
// the 40-byte IPv6 form: saddr, daddr, be32(length), be32(6) (RFC 8200 §8.1,
// Linux struct tcp6_pseudohdr), an IPv4 address then taking its v4-mapped
// 16-byte form; zones are ignored. The length is truncated to 16 or 32 bits;
// Segment.Len of any Segment fits.
func AppendPseudoHeader(dst []byte, src, dstAddr netip.Addr, length int) []byte {
	if src.Is4() && dstAddr.Is4() {
		s, d := src.As4(), dstAddr.As4()
		dst = append(dst, s[:]...)
		dst = append(dst, d[:]...)
		dst = append(dst, 0, protoTCP)
		return binary.BigEndian.AppendUint16(dst, uint16(length))
	}
	s, d := src.As16(), dstAddr.As16()
	dst = append(dst, s[:]...)
	dst = append(dst, d[:]...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(length))
	return binary.BigEndian.AppendUint32(dst, protoTCP)
}
