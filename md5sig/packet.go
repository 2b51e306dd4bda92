package md5sig

import (
	"github.com/tcpsig/tcpsig/segment"
)

// PacketAuth signs and verifies whole IP packets in place with a keyring:
// the shape a userspace stack that builds raw IPv4/IPv6 packets wants. A
// stack reserves [PacketAuth.OptionLen] bytes at the start of the TCP
// options (NOPs); Sign lays the MD5 option out there as Linux does and
// fills in the digest, before the stack computes checksums; Verify applies
// Linux's decision table to a received packet. Make one with
// [NewPacketAuth]; a zero PacketAuth has no keyring and signs nothing.
type PacketAuth struct {
	ring    *Keyring
	ifIndex int
}

// NewPacketAuth returns the packet signer of ring for packets of L3
// domain ifIndex (0 outside any VRF). A nil ring is [ErrNoKey].
func NewPacketAuth(ring *Keyring, ifIndex int) (*PacketAuth, error) {
	if ring == nil {
		return nil, ErrNoKey
	}
	return &PacketAuth{ring: ring, ifIndex: ifIndex}, nil
}

// OptionLen returns the option space TCP-MD5 needs in every segment, SYN
// or not.
func (a *PacketAuth) OptionLen() int { return OptionSpace }

// Sign signs pkt, whose first OptionSpace bytes of TCP options are
// reserved for the MD5 option: [ErrNoRoom] if there are fewer.
func (a *PacketAuth) Sign(pkt []byte) error {
	if a == nil || a.ring == nil {
		return ErrNoKey
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	if len(seg.Header) < segment.TCPMinimumSize+OptionSpace {
		return ErrNoRoom
	}
	var opt [OptionSpace]byte
	copy(seg.Header[segment.TCPMinimumSize:], AppendOption(opt[:0]))
	if seg, err = segment.ParsePacket(pkt); err != nil { // the header has an option now
		return err
	}
	return a.ring.Sign(&seg, a.ifIndex)
}

// Verify verifies a received packet.
func (a *PacketAuth) Verify(pkt []byte) error {
	if a == nil || a.ring == nil {
		return ErrNoKey
	}
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return err
	}
	return a.ring.Verify(&seg, a.ifIndex)
}
