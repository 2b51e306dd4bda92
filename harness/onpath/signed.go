package onpath

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// ErrNotIPv4 is the error of the functions here for a packet that is not
// an IPv4 packet with a whole header.
var ErrNotIPv4 = errors.New("onpath: not an IPv4 packet")

// BuildSignedSYN appends to dst an IPv4 SYN from from to to whose
// sequence number is isn and IP identification id, carrying a TCP-AO
// option signed with m (KeyID m's SendID, RNextKeyID m's RecvID) as a
// client holding m would sign its SYN (RFC 5925 §5.2: the Send_SYN
// traffic key of ISNs (isn, 0), SNE 0), and returns the extended slice.
// It is what an attacker who holds a compromised MKT sends: a SYN its
// peer's keys verify. k is scratch for the traffic key (wiped on return).
func BuildSignedSYN(dst []byte, k *ao.TrafficKey, m *ao.MKT, from, to netip.AddrPort, isn uint32, id uint16) ([]byte, error) {
	if m == nil || k == nil {
		return dst, ao.ErrNotInitialized
	}
	defer k.Wipe()
	f := segment.Fields{SrcPort: from.Port(), DstPort: to.Port(), Seq: isn, Flags: segment.SYN, Window: 0xffff,
		Options: [][]byte{ao.AppendOption(nil, m.MACLen()), {optMSS, 4, 0x05, 0xb4}}}
	start := len(dst)
	out, err := segment.AppendPacket(dst, segment.IP{Src: from.Addr(), Dst: to.Addr(), ID: id}, f, nil)
	if err != nil {
		return dst, err
	}
	pkt := out[start:]
	seg, err := segment.ParsePacket(pkt)
	if err != nil {
		return dst, err
	}
	if err := k.Derive(m, ao.ISNs{Src: isn}, &seg); err != nil {
		return dst, err
	}
	if err := k.Sign(&seg, 0, m.RecvID()); err != nil {
		return dst, err
	}
	if err := segment.SetTCPChecksum(pkt); err != nil {
		return dst, err
	}
	return out, nil
}

// IPv4ID returns an IPv4 packet's identification field.
func IPv4ID(pkt []byte) (uint16, error) {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return 0, ErrNotIPv4
	}
	return binary.BigEndian.Uint16(pkt[4:]), nil
}

// SetIPv4ID sets an IPv4 packet's identification field. TCP-AO's and
// TCP-MD5's MACs do not cover it (nor the IP header checksum, which the
// attacker's raw socket recomputes), so a replayed segment still
// verifies: a test numbers its replays with it.
func SetIPv4ID(pkt []byte, id uint16) error {
	if len(pkt) < 20 || pkt[0]>>4 != 4 {
		return ErrNotIPv4
	}
	binary.BigEndian.PutUint16(pkt[4:], id)
	return nil
}
