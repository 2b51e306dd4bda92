package segment

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

// icmpPacket is an ICMP (v4) or ICMPv6 message of type and code from
// router to a.Src, quoting q; ext, if not nil, is an IPv6 extension
// header inserted before the ICMPv6 header (its first byte is set).
func icmpPacket(t testing.TB, router, to netip.Addr, typ, code uint8, q []byte, extKind byte, ext []byte) []byte {
	t.Helper()
	body := slices.Concat([]byte{typ, code, 0, 0, 0, 0, 0, 0}, q)
	if ext != nil {
		ext = slices.Clone(ext)
		ext[0] = 58
		body = append(ext, body...)
	}
	pkt, err := AppendIP(nil, IP{Src: router, Dst: to}, len(body))
	if err != nil {
		t.Fatal(err)
	}
	if router.Is4() {
		pkt[9] = 1
		binary.BigEndian.PutUint16(pkt[10:], IPv4Checksum(pkt))
	} else if ext != nil {
		pkt[6] = extKind
	} else {
		pkt[6] = 58
	}
	return append(pkt, body...)
}

// TestParseICMP: type, code, the quoted TCP ports and addresses, through
// IPv6 extension headers before the ICMPv6 header and before the quoted
// TCP header, a first fragment read and flagged, a later one refused; TCP
// and malformed packets are errors, never a panic.
func TestParseICMP(t *testing.T) {
	local4, peer4 := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("198.51.100.2:179")
	local6, peer6 := netip.MustParseAddrPort("[2001:db8::1]:40000"), netip.MustParseAddrPort("[2001:db8:1::2]:179")
	seg4, err := AppendPacket(nil, IP{Src: local4.Addr(), Dst: peer4.Addr()}, Fields{SrcPort: 40000, DstPort: 179, Flags: ACK}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seg6, err := AppendPacket(nil, IP{Src: local6.Addr(), Dst: peer6.Addr()}, Fields{SrcPort: 40000, DstPort: 179, Flags: ACK}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dstOpts := []byte{0, 0, 1, 4, 0, 0, 0, 0}
	seg6ext := slices.Concat(seg6[:40], dstOpts, seg6[40:])
	seg6ext[6], seg6ext[40] = 60, 6
	r4, r6 := netip.MustParseAddr("203.0.113.254"), netip.MustParseAddr("2001:db8:ff::1")
	fragFirst := []byte{0, 0, 0, 1, 0, 0, 0, 7}
	fragLater := []byte{0, 0, 0, 16, 0, 0, 0, 7}
	for _, c := range []struct {
		name      string
		pkt       []byte
		v6, hard  bool
		fragment  bool
		quotedTCP bool
		local     netip.AddrPort
	}{
		{"v4 port unreachable", icmpPacket(t, r4, local4.Addr(), 3, 3, seg4, 0, nil), false, true, false, true, local4},
		{"v4 host unreachable", icmpPacket(t, r4, local4.Addr(), 3, 1, seg4, 0, nil), false, false, false, true, local4},
		{"v6 port unreachable", icmpPacket(t, r6, local6.Addr(), 1, 4, seg6, 0, nil), true, true, false, true, local6},
		{"v6 behind destination options", icmpPacket(t, r6, local6.Addr(), 1, 1, seg6, 60, dstOpts), true, true, false, true, local6},
		{"v6 quoting destination options", icmpPacket(t, r6, local6.Addr(), 1, 4, seg6ext, 0, nil), true, true, false, true, local6},
		{"v6 first fragment", icmpPacket(t, r6, local6.Addr(), 1, 4, seg6, 44, fragFirst), true, true, true, true, local6},
		{"v6 echo", icmpPacket(t, r6, local6.Addr(), 128, 0, nil, 0, nil), true, false, false, false, netip.AddrPort{}},
	} {
		m, err := ParseICMP(c.pkt)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.V6 != c.v6 || m.HardError() != c.hard || m.Fragment != c.fragment {
			t.Errorf("%s: %+v, hard %v", c.name, m, m.HardError())
		}
		src, dst, ok := m.QuotedTCP()
		if ok != c.quotedTCP || ok && (src != c.local || dst.Port() != 179) {
			t.Errorf("%s: quoted %v -> %v, %v", c.name, src, dst, ok)
		}
	}
	for _, c := range []struct {
		name string
		pkt  []byte
		want error
	}{
		{"TCP", seg4, ErrNotICMP},
		{"v6 TCP", seg6, ErrNotICMP},
		{"v6 later fragment", icmpPacket(t, r6, local6.Addr(), 1, 4, seg6, 44, fragLater), ErrFragment},
		{"empty", nil, ErrShortPacket},
		{"short v6", seg6[:30], ErrShortPacket},
	} {
		if _, err := ParseICMP(c.pkt); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzParseICMP: no input makes ParseICMP or QuotedTCP panic, and what
// they return lies within the packet.
func FuzzParseICMP(f *testing.F) {
	for _, p := range seedPackets(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		m, err := ParseICMP(pkt)
		if err != nil {
			return
		}
		if len(m.Body) > len(pkt) {
			t.Fatalf("body of %d bytes from a %d-byte packet", len(m.Body), len(pkt))
		}
		m.QuotedTCP()
	})
}
