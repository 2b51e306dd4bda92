package packetauth

import (
	"encoding/binary"

	"github.com/tcpsig/tcpsig/segment"
)

// words returns the ones' complement sum, folded to 16 bits, of the
// big-endian 16-bit words of a TCP header (tcp, options included, of even
// length; its words summed in pairs) but its checksum field, plus the pseudo-header's length words
// for a segment of tcpLen bytes: what changes when options are
// rewritten, inserted or removed.
func words(tcp []byte, tcpLen int) uint16 {
	s := uint64(uint32(tcpLen)>>16) + uint64(uint32(tcpLen)&0xffff)
	i := 0
	for ; i+4 <= len(tcp); i += 4 {
		s += uint64(binary.BigEndian.Uint32(tcp[i:]))
	}
	if i+2 <= len(tcp) {
		s += uint64(binary.BigEndian.Uint16(tcp[i:]))
	}
	if len(tcp) >= segment.TCPMinimumSize {
		// Take the checksum field out: adding its ones' complement
		// subtracts it.
		s += uint64(^binary.BigEndian.Uint16(tcp[segment.TCPChecksumOffset:]))
	}
	s = s&0xffffffff + s>>32
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	return uint16(s)
}

// updateChecksum returns checksum hc updated for words whose sum was old
// and is now new (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')). The sum over
// the segment and its pseudo-header is the same before and after: a right
// checksum stays right, and a wrong one stays wrong by as much. Like
// segment.TCPChecksum it never returns 0 (0xFFFF, the same ones'
// complement zero, instead): Linux's TCP-AO misreads a zero checksum.
func updateChecksum(hc, old, new uint16) uint16 {
	s := uint32(^hc) + uint32(^old) + uint32(new)
	s = s&0xffff + s>>16
	s = s&0xffff + s>>16
	if c := ^uint16(s); c != 0 {
		return c
	}
	return 0xffff
}
