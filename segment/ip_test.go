package segment

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// TestPacketAddrs: the ends of every packet with a whole fixed header,
// those ParsePacket refuses included; typed errors for the rest.
func TestPacketAddrs(t *testing.T) {
	v4a, v4b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	v6a, v6b := netip.MustParseAddr("2000::1"), netip.MustParseAddr("2000::2")
	udp := set(v4(make([]byte, 8)), 9, 17)
	frag := set(v4(tcpHdr()), 6, 0x20)   // more fragments
	badIHL := set(v4(tcpHdr()), 0, 0x44) // IHL 16 bytes
	short := set(v4(tcpHdr()), 3, 200)   // total length past the packet
	mapped := v6(6, tcpHdr())            // a v4-mapped pair stays 16 bytes
	m1 := netip.AddrFrom4([4]byte{192, 0, 2, 1}).As16()
	copy(mapped[8:24], m1[:])
	for _, c := range []struct {
		name     string
		pkt      []byte
		src, dst netip.Addr
		err      error
	}{
		{"IPv4 TCP", v4(tcpHdr()), v4a, v4b, nil},
		{"IPv4 UDP", udp, v4a, v4b, nil},
		{"IPv4 fragment", frag, v4a, v4b, nil},
		{"IPv4 bad IHL", badIHL, v4a, v4b, nil},
		{"IPv4 total length past the end", short, v4a, v4b, nil},
		{"IPv4 fixed header only", v4(nil)[:20], v4a, v4b, nil},
		{"IPv6 TCP", v6(6, tcpHdr()), v6a, v6b, nil},
		{"IPv6 fragment", v6(44, []byte{6, 0, 0, 1, 0, 0, 0, 1}, tcpHdr()), v6a, v6b, nil},
		{"IPv6 v4-mapped", mapped, netip.MustParseAddr("::ffff:192.0.2.1"), v6b, nil},
		{"empty", nil, netip.Addr{}, netip.Addr{}, ErrShortPacket},
		{"IPv4 19 bytes", v4(nil)[:19], netip.Addr{}, netip.Addr{}, ErrShortPacket},
		{"IPv6 39 bytes", v6(6)[:39], netip.Addr{}, netip.Addr{}, ErrShortPacket},
		{"version 5", set(v4(tcpHdr()), 0, 0x55), netip.Addr{}, netip.Addr{}, ErrIPVersion},
	} {
		src, dst, err := PacketAddrs(c.pkt)
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) || src != c.src || dst != c.dst {
			t.Errorf("%s: %v -> %v, %v; want %v -> %v, %v", c.name, src, dst, err, c.src, c.dst, c.err)
		}
		if s, perr := ParsePacket(c.pkt); perr == nil && (s.src != src || s.dst != dst) {
			t.Errorf("%s: ParsePacket has %v -> %v", c.name, s.src, s.dst)
		}
	}
}

// TestWithTCP: a rebuilt TCP header under a parsed segment's addresses
// is parsed as FromTCP parses one, except that a v4-mapped pair from an
// IPv6 header keeps its IPv6 form; a segment not made by a parse, or a
// bad header, is an error.
func TestWithTCP(t *testing.T) {
	mapped := v6(6, tcpHdr())
	m1, m2 := netip.AddrFrom4([4]byte{192, 0, 2, 1}).As16(), netip.AddrFrom4([4]byte{192, 0, 2, 2}).As16()
	copy(mapped[8:24], m1[:])
	copy(mapped[24:40], m2[:])
	for _, pkt := range [][]byte{v4(tcpHdr()), v6(0, ext(6), tcpHdr()), mapped} {
		s, err := ParsePacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		tcp := append(tcpHdr(cat(aoOpt, aoOpt)...), "payload"...)
		if _, err := s.WithTCP(tcp); !errors.Is(err, ErrDuplicateAuth) {
			t.Errorf("duplicate AO: %v", err)
		}
		tcp = append(tcpHdr(cat([]byte{1, 1, 1, 1}, aoOpt)...), "payload"...)
		n, err := s.WithTCP(tcp)
		if err != nil {
			t.Fatal(err)
		}
		if n.src != s.src || n.dst != s.dst || n.src.Is4() != (pkt[0]>>4 == 4) {
			t.Errorf("addresses %v -> %v, the parse's %v -> %v", n.src, n.dst, s.src, s.dst)
		}
		if a := n.Auth(); a.AO != 24 || a.AOLen != len(aoOpt) || !bytes.Equal(n.payload, []byte("payload")) || len(n.header) != 32 {
			t.Errorf("auth %+v, header %d bytes, payload %q", a, len(n.header), n.payload)
		}
		if err := n.Check(); err != nil {
			t.Errorf("Check: %v", err)
		}
		if _, err := s.WithTCP(tcp[:19]); !errors.Is(err, ErrShortTCP) {
			t.Errorf("19-byte header: %v", err)
		}
	}
	var zero Segment
	if _, err := zero.WithTCP(tcpHdr()); !errors.Is(err, ErrUnparsed) {
		t.Errorf("zero Segment: %v", err)
	}
	if _, err := (*Segment)(nil).WithTCP(tcpHdr()); !errors.Is(err, ErrUnparsed) {
		t.Errorf("nil Segment: %v", err)
	}
}

// TestIPAllocs: PacketAddrs and WithTCP allocate nothing.
func TestIPAllocs(t *testing.T) {
	pkt := v4(tcpHdr(aoOpt...))
	s, err := ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	tcp := pkt[20:]
	if n := testing.AllocsPerRun(100, func() {
		_, _, _ = PacketAddrs(pkt)
		_, _ = s.WithTCP(tcp)
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}

// FuzzPacketAddrs: no panic on any input; an answer exactly when the
// fixed header is there, and the same addresses ParsePacket finds.
func FuzzPacketAddrs(f *testing.F) {
	for _, p := range seedPackets(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		src, dst, err := PacketAddrs(pkt)
		if err != nil {
			if !errors.Is(err, ErrShortPacket) && !errors.Is(err, ErrIPVersion) || src.IsValid() || dst.IsValid() {
				t.Fatalf("%v with %v -> %v", err, src, dst)
			}
			return
		}
		if !src.IsValid() || !dst.IsValid() || src.Is4() != (pkt[0]>>4 == 4) || src.Is4() != dst.Is4() {
			t.Fatalf("%v -> %v from version %d", src, dst, pkt[0]>>4)
		}
		if s, err := ParsePacket(pkt); err == nil && (s.src != src || s.dst != dst) {
			t.Fatalf("%v -> %v, ParsePacket %v -> %v", src, dst, s.src, s.dst)
		}
	})
}

// FuzzWithTCP: WithTCP of any bytes under a parsed segment never panics
// and agrees with ParsePacket of the packet rebuilt around them.
func FuzzWithTCP(f *testing.F) {
	for _, p := range seedPackets(f) {
		if s, err := ParsePacket(p); err == nil {
			f.Add(p, append(bytes.Clone(s.header), s.payload...))
		}
	}
	f.Fuzz(func(t *testing.T, pkt, tcp []byte) {
		s, err := ParsePacket(pkt)
		if err != nil {
			return
		}
		n, err := s.WithTCP(tcp)
		// The same IP header (its lengths set anew) around tcp.
		off, _ := TCPOffset(pkt, &s)
		re := append(bytes.Clone(pkt[:off]), tcp...)
		if Lengths(re) != nil {
			return
		}
		p, perr := ParsePacket(re)
		if (err == nil) != (perr == nil) {
			t.Fatalf("WithTCP %v, ParsePacket of the rebuilt packet %v", err, perr)
		}
		if err != nil {
			return
		}
		if n.src != p.src || n.dst != p.dst || n.Auth() != p.Auth() || !bytes.Equal(n.header, p.header) ||
			!bytes.Equal(n.payload, p.payload) || n.Check() != nil {
			t.Fatalf("WithTCP %+v, ParsePacket %+v", n, p)
		}
	})
}
