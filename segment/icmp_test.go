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

// FuzzParseICMP: no input makes ParseICMP, Quoted or QuotedTCP panic,
// what they return lies within the packet, and a quoted packet read
// without an error has both addresses.
func FuzzParseICMP(f *testing.F) {
	for _, p := range seedPackets(f) {
		f.Add(p)
	}
	v4SYN, v6SYN := unhex(f, rfc9235v4SYN), unhex(f, rfc9235v6SYN)
	r4, r6 := netip.MustParseAddr("203.0.113.254"), netip.MustParseAddr("2001:db8:ff::1")
	to4, to6 := netip.AddrFrom4([4]byte(v4SYN[12:16])), netip.AddrFrom16([16]byte(v6SYN[8:24]))
	quoted6 := slices.Concat(v6SYN[:40], ext(0), v6SYN[40:])
	quoted6[6], quoted6[40] = 60, 6
	f.Add(icmpPacket(f, r4, to4, 3, 3, v4SYN, 0, nil))
	f.Add(icmpPacket(f, r6, to6, 1, 4, v6SYN, 0, nil))
	f.Add(icmpPacket(f, r6, to6, 1, 4, quoted6, 0, nil))
	f.Add(icmpPacket(f, r6, to6, 1, 1, v6SYN, 44, []byte{0, 0, 0, 1, 0, 0, 0, 7}))
	f.Fuzz(func(t *testing.T, pkt []byte) {
		m, err := ParseICMP(pkt)
		if err != nil {
			if m.Body != nil || m.Type != 0 || m.Code != 0 {
				t.Fatalf("%+v with error %v", m, err)
			}
			return
		}
		if len(m.Body) > len(pkt) {
			t.Fatalf("body of %d bytes from a %d-byte packet", len(m.Body), len(pkt))
		}
		if q, err := m.Quoted(); err == nil && (!q.Src.IsValid() || !q.Dst.IsValid() || q.Dst.Addr().Is4() == m.V6) {
			t.Fatalf("quoted %+v from %+v", q, m)
		}
		m.QuotedTCP()
	})
}

// TestICMPReadAsLinux: the ICMP errors the kernel acts on are read in
// full, however their quoted packet is dressed (finding 3 of issue 38):
// a quoted IPv4 header whose version nibble is not 4, a quoted IPv6 chain
// with hop-by-hop options after destination options, or more than 16
// extension headers, before the message or before the quoted TCP header.
// What the kernel drops (a quoted IHL under 5, a quoted packet cut short)
// is an error, with the quoted destination still read; a first fragment
// cut before its ICMPv6 header says it is a fragment.
func TestICMPReadAsLinux(t *testing.T) {
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
	r4, r6 := netip.MustParseAddr("203.0.113.254"), netip.MustParseAddr("2001:db8:ff::1")
	// chain puts the extension headers kinds (8 bytes each) between
	// pkt's IPv6 header and what followed it.
	chain := func(pkt []byte, kinds ...byte) []byte {
		out := slices.Clone(pkt[:40])
		for i, k := range kinds {
			next := pkt[6]
			if i+1 < len(kinds) {
				next = kinds[i+1]
			}
			out = append(out, next, 0, 1, 4, 0, 0, 0, 0)
			if k == 44 {
				copy(out[len(out)-8+1:], []byte{0, 0, 0, 0, 0, 0, 9})
			}
		}
		out = append(out, pkt[40:]...)
		out[6] = kinds[0]
		binary.BigEndian.PutUint16(out[4:], uint16(len(out)-40))
		return out
	}
	seventeen := slices.Repeat([]byte{60}, 17)
	v4ver := func(nibble byte) []byte {
		q := slices.Clone(seg4)
		q[0] = nibble<<4 | q[0]&0x0f
		return q
	}
	tcp4 := Quote{Src: local4, Dst: peer4, Proto: 6}
	tcp6 := Quote{Src: local6, Dst: peer6, Proto: 6}
	for _, c := range []struct {
		name string
		pkt  []byte
		want Quote
	}{
		{"v4 quoting version 0", icmpPacket(t, r4, local4.Addr(), 3, 3, v4ver(0), 0, nil), tcp4},
		{"v4 quoting version 6", icmpPacket(t, r4, local4.Addr(), 3, 4, v4ver(6), 0, nil), tcp4},
		{"v4 quoting version 15", icmpPacket(t, r4, local4.Addr(), 3, 2, v4ver(15), 0, nil), tcp4},
		{"v6 quoting destination options then hop-by-hop", icmpPacket(t, r6, local6.Addr(), 1, 4, chain(seg6, 60, 0), 0, nil), tcp6},
		{"v6 quoting 17 extension headers", icmpPacket(t, r6, local6.Addr(), 1, 4, chain(seg6, seventeen...), 0, nil), tcp6},
		{"v6 quoting a first fragment", icmpPacket(t, r6, local6.Addr(), 1, 4, chain(seg6, 44), 0, nil), tcp6},
		{"v6 behind 17 extension headers", chain(icmpPacket(t, r6, local6.Addr(), 1, 1, seg6, 0, nil), seventeen...), tcp6},
		{"v6 quoting UDP", icmpPacket(t, r6, local6.Addr(), 1, 4, set(seg6, 6, 17), 0, nil),
			Quote{Src: netip.AddrPortFrom(local6.Addr(), 0), Dst: netip.AddrPortFrom(peer6.Addr(), 0), Proto: 17}},
	} {
		m, err := ParseICMP(c.pkt)
		if err != nil || !m.HardError() || m.Fragment {
			t.Errorf("%s: %+v, %v", c.name, m, err)
			continue
		}
		if q, err := m.Quoted(); err != nil || q != c.want {
			t.Errorf("%s: quoted %+v, %v; want %+v", c.name, q, err, c.want)
		}
	}

	// A later fragment quoted: the walk ends at its header (44), which
	// no error handler takes.
	later := chain(seg6, 44)
	later[43] = 16 // offset 2
	m, err := ParseICMP(icmpPacket(t, r6, local6.Addr(), 1, 4, later, 0, nil))
	if q, qerr := m.Quoted(); err != nil || qerr != nil || q.Proto != 44 {
		t.Errorf("quoting a later fragment: %+v, %v, %v", q, err, qerr)
	}

	// What the kernel drops is an error, the destination read.
	ihl4 := set(seg4, 0, 0x44)
	for _, c := range []struct {
		name string
		pkt  []byte
		want error
		dst  netip.Addr
	}{
		{"v4 quoting IHL 4", icmpPacket(t, r4, local4.Addr(), 3, 3, ihl4, 0, nil), ErrIPHeaderLength, peer4.Addr()},
		{"v4 quoting 7 bytes of TCP", icmpPacket(t, r4, local4.Addr(), 3, 3, seg4[:27], 0, nil), ErrShortPacket, peer4.Addr()},
		{"v4 quoting 19 bytes", icmpPacket(t, r4, local4.Addr(), 3, 3, seg4[:19], 0, nil), ErrShortPacket, netip.Addr{}},
		{"v6 quoting 39 bytes", icmpPacket(t, r6, local6.Addr(), 1, 4, seg6[:39], 0, nil), ErrShortPacket, netip.Addr{}},
		{"v6 quoting a chain cut short", icmpPacket(t, r6, local6.Addr(), 1, 4, chain(seg6, 60, 60)[:52], 0, nil), ErrExtHeaderChain, peer6.Addr()},
		{"v6 quoting 7 bytes of TCP", icmpPacket(t, r6, local6.Addr(), 1, 4, seg6[:47], 0, nil), ErrShortPacket, peer6.Addr()},
	} {
		m, err := ParseICMP(c.pkt)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		q, err := m.Quoted()
		if !errors.Is(err, c.want) || q.Dst.Addr() != c.dst {
			t.Errorf("%s: quoted %+v, %v; want %v with destination %v", c.name, q, err, c.want, c.dst)
		}
		if _, _, ok := m.QuotedTCP(); ok {
			t.Errorf("%s: QuotedTCP ok", c.name)
		}
	}

	// Fragments: the first with only the 8-byte ICMPv6 header reads,
	// flagged, its quoted packet an error; one cut before the ICMPv6
	// header, or mid-chain, is an error that still says "first fragment";
	// an atomic fragment (offset 0, no more) is a whole message.
	hard := icmpPacket(t, r6, local6.Addr(), 1, 4, seg6, 0, nil)
	eight := chain(hard[:48], 44)
	eight[40+3] = 1 // more fragments
	binary.BigEndian.PutUint16(eight[4:], 16)
	if m, err := ParseICMP(eight); err != nil || !m.Fragment || !m.HardError() {
		t.Errorf("first fragment with 8 bytes of ICMPv6: %+v, %v", m, err)
	} else if q, err := m.Quoted(); !errors.Is(err, ErrShortPacket) || q.Dst.IsValid() {
		t.Errorf("first fragment with 8 bytes of ICMPv6: quoted %+v, %v", q, err)
	}
	cut := chain(hard, 44, 60, 60)
	cut[40+3] = 1
	cut = cut[:40+16]
	binary.BigEndian.PutUint16(cut[4:], 16)
	if m, err := ParseICMP(cut); !errors.Is(err, ErrExtHeaderChain) || !m.Fragment || !m.V6 {
		t.Errorf("first fragment cut mid-chain: %+v, %v", m, err)
	}
	cut = chain(hard, 44)
	cut[40+3] = 1
	cut = cut[:40+8]
	binary.BigEndian.PutUint16(cut[4:], 8)
	if m, err := ParseICMP(cut); !errors.Is(err, ErrShortPacket) || !m.Fragment {
		t.Errorf("first fragment cut before the ICMPv6 header: %+v, %v", m, err)
	}
	if m, err := ParseICMP(chain(hard, 44)); err != nil || m.Fragment || !m.HardError() {
		t.Errorf("atomic fragment: %+v, %v", m, err)
	}
}
