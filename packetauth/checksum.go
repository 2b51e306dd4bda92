package packetauth

import (
	"github.com/tcpsig/tcpsig/internal/csum"
	"github.com/tcpsig/tcpsig/segment"
)

// words returns the ones' complement sum, folded to 16 bits, of a TCP
// header's words (tcp, options included, of even length) but its
// checksum field, plus the pseudo-header's length words for a segment of
// tcpLen bytes: what changes when options are rewritten, inserted or
// removed, for csum.Update.
func words(tcp []byte, tcpLen int) uint16 {
	s := uint64(uint32(tcpLen)>>16) + uint64(uint32(tcpLen)&0xffff)
	if len(tcp) < segment.TCPMinimumSize {
		return csum.Fold(csum.Sum(tcp, s))
	}
	s = csum.Sum(tcp[:segment.TCPChecksumOffset], s)
	return csum.Fold(csum.Sum(tcp[segment.TCPChecksumOffset+2:], s))
}
