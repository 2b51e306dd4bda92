package md5sig

import (
	"github.com/tcpsig/tcpsig/segment"
)

// PacketAuth signs and verifies whole IP packets in place with a keyring:
// the shape a userspace stack that builds raw IPv4/IPv6 packets wants. A
// stack reserves OptionLen bytes at the start of the TCP options (NOPs);
// Sign lays the MD5 option out there as Linux does and fills in the
// digest, before the stack computes checksums; Verify applies Linux's
// decision table to a received packet.
type PacketAuth struct {
	Ring    *Keyring
	IfIndex int // the L3 domain of the packets
}

// OptionLen returns the option space TCP-MD5 needs in every segment.
func (a PacketAuth) OptionLen(syn bool) int { return OptionSpace }

// Sign signs pkt, whose first OptionSpace bytes of TCP options are
// reserved for the MD5 option.
func (a PacketAuth) Sign(pkt []byte) error {
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	if len(seg.Header) < segment.TCPMinimumSize+OptionSpace {
		return ErrNoOption
	}
	var opt [OptionSpace]byte
	copy(seg.Header[segment.TCPMinimumSize:], AppendOption(opt[:0]))
	return a.Ring.Sign(&seg, a.IfIndex)
}

// Verify verifies a received packet.
func (a PacketAuth) Verify(pkt []byte) error {
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	return a.Ring.Verify(&seg, a.IfIndex)
}
