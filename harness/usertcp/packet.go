package usertcp

import (
	"encoding/binary"
	"errors"
	"net/netip"

	tcpseg "github.com/tcpsig/tcpsig/segment"
)

// TCP header flags.
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagPSH = 0x08
	flagACK = 0x10
)

const (
	tcpHeaderLen  = 20
	maxOptionLen  = 40
	mssOptionLen  = 4
	defaultMSSRFC = 536 // RFC 9293 §3.7.1: the MSS when the peer sends none
)

var errMalformed = errors.New("usertcp: malformed packet")

// segment is an incoming TCP segment, parsed.
type segment struct {
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8
	wnd      uint32
	mss      int // from the MSS option, 0 if absent
	payload  []byte
}

// parse checks an IPv4 or IPv6 packet carrying TCP and returns its
// segment. tcpsig's segment package checks the lengths and the headers (and
// rejects IPv4 fragments); the checksums, which the MACs leave out, are
// this stack's to check: the IPv4 header's and the TCP checksum.
func parse(pkt []byte) (segment, error) {
	var s segment
	seg, err := tcpseg.ParsePacket(pkt)
	if err != nil || len(seg.Frags()) != 0 {
		return s, errMalformed
	}
	end := 40 + int(binary.BigEndian.Uint16(pkt[4:])) // IPv6: the payload length
	if seg.Is4() {
		end = int(binary.BigEndian.Uint16(pkt[2:])) // IPv4: the total length
		if checksum(pkt[:int(pkt[0]&0x0f)*4], 0) != 0 {
			return s, errMalformed
		}
	}
	h := seg.Header()
	tcp := pkt[end-len(h)-len(seg.Payload()) : end]
	if checksum(tcp, pseudoHeaderSum(seg.Src(), seg.Dst(), len(tcp))) != 0 {
		return s, errMalformed
	}
	s.src = netip.AddrPortFrom(seg.Src(), h.SrcPort())
	s.dst = netip.AddrPortFrom(seg.Dst(), h.DstPort())
	s.seq, s.ack = h.Seq(), h.Ack()
	s.flags = uint8(h.Flags())
	s.wnd = uint32(h.Window())
	s.payload = seg.Payload()
	opts := h.Options()
	for i := 0; i < len(opts); {
		switch opts[i] {
		case 0:
			i = len(opts)
			continue
		case 1:
			i++
			continue
		}
		if i+1 >= len(opts) || opts[i+1] < 2 || i+int(opts[i+1]) > len(opts) {
			return s, errMalformed
		}
		if opts[i] == 2 && opts[i+1] == 4 {
			s.mss = int(binary.BigEndian.Uint16(opts[i+2:]))
		}
		i += int(opts[i+1])
	}
	return s, nil
}

// header describes an outgoing segment.
type header struct {
	src, dst netip.AddrPort
	seq, ack uint32
	flags    uint8
	wnd      uint16
	mss      int // MSS option value; 0 = no MSS option
	ipID     uint16
}

// build writes the packet for h and payload into buf, which must be large
// enough, and returns it; checksums are left zero. It returns the offset of
// the TCP header too.
func build(buf []byte, h header, payload []byte) (pkt []byte, tcpOff int) {
	optLen := 0
	if h.mss != 0 {
		optLen = mssOptionLen
	}
	tcpLen := tcpHeaderLen + optLen + len(payload)
	v4 := h.src.Addr().Is4()
	if v4 {
		tcpOff = 20
	} else {
		tcpOff = 40
	}
	pkt = buf[:tcpOff+tcpLen]
	clear(pkt[:tcpOff+tcpHeaderLen])
	be := binary.BigEndian
	if v4 {
		pkt[0] = 0x45
		be.PutUint16(pkt[2:], uint16(len(pkt)))
		be.PutUint16(pkt[4:], h.ipID)
		be.PutUint16(pkt[6:], 0x4000) // don't fragment
		pkt[8] = 64                   // TTL
		pkt[9] = 6
		s, d := h.src.Addr().As4(), h.dst.Addr().As4()
		copy(pkt[12:], s[:])
		copy(pkt[16:], d[:])
	} else {
		pkt[0] = 0x60
		be.PutUint16(pkt[4:], uint16(tcpLen))
		pkt[6] = 6
		pkt[7] = 64 // hop limit
		s, d := h.src.Addr().As16(), h.dst.Addr().As16()
		copy(pkt[8:], s[:])
		copy(pkt[24:], d[:])
	}
	tcp := pkt[tcpOff:]
	be.PutUint16(tcp[0:], h.src.Port())
	be.PutUint16(tcp[2:], h.dst.Port())
	be.PutUint32(tcp[4:], h.seq)
	if h.flags&flagACK != 0 {
		be.PutUint32(tcp[8:], h.ack)
	}
	tcp[12] = uint8((tcpHeaderLen+optLen)/4) << 4
	tcp[13] = h.flags
	be.PutUint16(tcp[14:], h.wnd)
	opts := tcp[tcpHeaderLen : tcpHeaderLen+optLen]
	if h.mss != 0 {
		opts[0], opts[1] = 2, 4
		be.PutUint16(opts[2:], uint16(h.mss))
	}
	copy(tcp[tcpHeaderLen+optLen:], payload)
	return pkt, tcpOff
}

// finish computes the TCP checksum and, for IPv4, the header checksum,
// with package segment's functions (which never write a zero TCP
// checksum: Linux's TCP-AO misreads one).
func finish(pkt []byte, tcpOff int) {
	tcp := pkt[tcpOff:]
	var src, dst netip.Addr
	if tcpOff == 20 {
		src, dst = netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20]))
		binary.BigEndian.PutUint16(pkt[10:], tcpseg.IPv4Checksum(pkt[:20]))
	} else {
		src, dst = netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40]))
	}
	tcpseg.TCP(tcp).SetChecksum(tcpseg.TCPChecksum(src, dst, tcp))
}

// pseudoHeaderSum is the unfolded one's-complement sum of the TCP
// pseudo-header (RFC 9293 §3.1, RFC 8200 §8.1).
func pseudoHeaderSum(src, dst netip.Addr, tcpLen int) uint32 {
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	add(src.AsSlice())
	add(dst.AsSlice())
	sum += 6
	sum += uint32(tcpLen>>16) + uint32(tcpLen&0xffff)
	return sum
}

// checksum returns the Internet checksum (RFC 1071) of b, starting from
// the partial sum initial. Over data that contains a correct checksum it
// returns 0.
func checksum(b []byte, initial uint32) uint16 {
	sum := uint64(initial)
	for len(b) >= 2 {
		sum += uint64(b[0])<<8 | uint64(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint64(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Sequence-number comparisons modulo 2^32 (RFC 9293 §3.4).
func seqLT(a, b uint32) bool  { return int32(a-b) < 0 }
func seqLEQ(a, b uint32) bool { return int32(a-b) <= 0 }
