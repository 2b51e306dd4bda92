package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors"
)

// TestChecksumsRFC9235: the 32 packets of RFC 9235 carry real IPv4
// header checksums, which IPv4Checksum and SetTCPChecksum must reproduce.
// (Their TCP checksums are not those of the packets as printed, so the TCP
// checksum of each is checked against gopacket's instead.)
func TestChecksumsRFC9235(t *testing.T) {
	set, err := testvectors.RFC9235()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range set.Vectors {
		s, err := segment.ParsePacket(v.Packet)
		if err != nil {
			t.Fatal(err)
		}
		off, end := segment.TCPOffset(v.Packet, &s)
		if end != len(v.Packet) {
			t.Fatalf("%s: end %d of %d", v.Section, end, len(v.Packet))
		}
		tcp := segment.TCP(v.Packet[off:end])
		if got, want := segment.TCPChecksum(s.Src(), s.Dst(), tcp), gopacketChecksum(t, v.Packet); got != want {
			t.Fatalf("%s: TCP checksum %#04x, gopacket %#04x", v.Section, got, want)
		}
		p := bytes.Clone(v.Packet)
		if v.IPVersion == 4 {
			if got, want := segment.IPv4Checksum(p[:20]), binary.BigEndian.Uint16(p[10:]); got != want {
				t.Fatalf("%s: IPv4 checksum %#04x, the RFC has %#04x", v.Section, got, want)
			}
			p[10], p[11] = 0, 0
		}
		if err := segment.SetTCPChecksum(p); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p[:off], v.Packet[:off]) || segment.TCP(p[off:]).Checksum() != segment.TCPChecksum(s.Src(), s.Dst(), tcp) {
			t.Fatalf("%s: SetTCPChecksum", v.Section)
		}
	}
}

// gopacketChecksum returns the TCP checksum gopacket computes for pkt.
func gopacketChecksum(t *testing.T, pkt []byte) uint16 {
	t.Helper()
	tl := gopacketTCP(t, pkt)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, tl, gopacket.Payload(tl.Payload)); err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint16(buf.Bytes()[16:])
}

// gopacketTCP decodes pkt's TCP layer with gopacket, ready to checksum.
func gopacketTCP(t *testing.T, pkt []byte) *layers.TCP {
	t.Helper()
	first := layers.LayerTypeIPv4
	if pkt[0]>>4 == 6 {
		first = layers.LayerTypeIPv6
	}
	g := gopacket.NewPacket(pkt, first, gopacket.Default)
	tl, _ := g.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if tl == nil {
		t.Fatal("gopacket finds no TCP")
	}
	if err := tl.SetNetworkLayerForChecksum(g.NetworkLayer()); err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestAppendPacketGopacket builds packets with AppendPacket and has
// gopacket decode them and recompute their checksums.
func TestAppendPacketGopacket(t *testing.T) {
	for _, c := range []struct{ src, dst string }{{"192.0.2.1", "198.51.100.2"}, {"2001:db8::1", "2001:db8:1::2"}} {
		for _, n := range []int{0, 1, 7, 1448} {
			payload := bytes.Repeat([]byte{0xa5, 0x5a, 3}, n)[:n]
			ip := segment.IP{Src: netip.MustParseAddr(c.src), Dst: netip.MustParseAddr(c.dst), TTL: 17, TOS: 0x10, ID: 777, FlowLabel: 0x12345}
			f := segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 0xfffffff0, Ack: 5, Flags: segment.PSH | segment.ACK, Window: 512,
				Options: [][]byte{{1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8}}}
			pkt, err := segment.AppendPacket([]byte("junk"), ip, f, payload)
			if err != nil {
				t.Fatal(err)
			}
			if string(pkt[:4]) != "junk" {
				t.Fatal("dst prefix lost")
			}
			pkt = pkt[4:]
			first := layers.LayerTypeIPv4
			if ip.Src.Is6() {
				first = layers.LayerTypeIPv6
			}
			g := gopacket.NewPacket(pkt, first, gopacket.Default)
			if e := g.ErrorLayer(); e != nil {
				t.Fatal(e.Error())
			}
			tl, _ := g.Layer(layers.LayerTypeTCP).(*layers.TCP)
			if tl == nil || tl.Seq != f.Seq || tl.Ack != 5 || !tl.PSH || !tl.ACK || tl.SYN || !bytes.Equal(tl.Payload, payload) || tl.DataOffset != 8 {
				t.Fatalf("gopacket reads %+v", tl)
			}
			want := tl.Checksum
			var nl gopacket.NetworkLayer
			if ip.Src.Is4() {
				v4 := g.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				if v4.TTL != 17 || v4.Id != 777 || v4.Flags != layers.IPv4DontFragment || int(v4.Length) != len(pkt) {
					t.Fatalf("IPv4 %+v", v4)
				}
				nl = v4
				// gopacket's own header checksum of the same header
				buf := gopacket.NewSerializeBuffer()
				v4c := *v4
				if err := v4c.SerializeTo(buf, gopacket.SerializeOptions{ComputeChecksums: true}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf.Bytes()[:20], pkt[:20]) {
					t.Fatalf("IPv4 header\n%x\ngopacket\n%x", pkt[:20], buf.Bytes()[:20])
				}
			} else {
				v6 := g.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
				if v6.HopLimit != 17 || v6.FlowLabel != 0x12345 || v6.TrafficClass != 0x10 || int(v6.Length) != len(pkt)-40 {
					t.Fatalf("IPv6 %+v", v6)
				}
				nl = v6
			}
			if err := tl.SetNetworkLayerForChecksum(nl); err != nil {
				t.Fatal(err)
			}
			buf := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{ComputeChecksums: true}, tl, gopacket.Payload(payload)); err != nil {
				t.Fatal(err)
			}
			if got := binary.BigEndian.Uint16(buf.Bytes()[16:]); got != want {
				t.Fatalf("%s %d bytes: checksum %#04x, gopacket %#04x", c.src, n, want, got)
			}
		}
	}
}

// TestLengthsExtensionHeaders: with IPv6 extension headers before TCP,
// Lengths and TCPOffset find the TCP header where it is.
func TestLengthsExtensionHeaders(t *testing.T) {
	ip := segment.IP{Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2")}
	pkt, err := segment.AppendPacket(nil, ip, segment.Fields{SrcPort: 1, DstPort: 2, Flags: segment.SYN}, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	// Insert a hop-by-hop (8 bytes) and a destination-options header (16).
	ext := []byte{60, 0, 1, 4, 0, 0, 0, 0, 6, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	pkt[6] = 0
	pkt = append(pkt[:40:40], append(ext, pkt[40:]...)...)
	pkt = append(pkt, 0xee, 0xee) // link padding, beyond the IP length once fixed
	if err := segment.Lengths(pkt[:len(pkt)-2]); err != nil {
		t.Fatal(err)
	}
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	off, end := segment.TCPOffset(pkt, &s)
	if off != 64 || end != len(pkt)-2 || string(s.Payload()) != "hello" {
		t.Fatalf("TCP at %d, end %d", off, end)
	}
	if err := segment.SetTCPChecksum(pkt); err != nil {
		t.Fatal(err)
	}
	tcp := segment.TCP(pkt[off:end])
	if segment.TCPChecksum(s.Src(), s.Dst(), tcp) != tcp.Checksum() || tcp.Checksum() == 0 {
		t.Fatal("checksum not set")
	}
}

// TestPacketErrors: misuse gets typed errors, never a panic.
func TestPacketErrors(t *testing.T) {
	v4, v6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	for _, c := range []struct {
		ip   segment.IP
		n    int
		want error
	}{
		{segment.IP{}, 0, segment.ErrAddrFamily},
		{segment.IP{Src: v4, Dst: v6}, 0, segment.ErrAddrFamily},
		{segment.IP{Src: v4, Dst: v4}, 65516, segment.ErrPacketTooLong},
		{segment.IP{Src: v6, Dst: v6}, 65536, segment.ErrPacketTooLong},
		{segment.IP{Src: v4, Dst: v4}, -1, segment.ErrPacketTooLong},
	} {
		if _, err := segment.AppendIP(nil, c.ip, c.n); !errors.Is(err, c.want) {
			t.Errorf("AppendIP(%+v, %d) = %v, want %v", c.ip, c.n, err, c.want)
		}
	}
	if _, err := segment.AppendPacket(nil, segment.IP{Src: v4, Dst: v4}, segment.Fields{Options: [][]byte{make([]byte, 41)}}, nil); !errors.Is(err, segment.ErrDataOffset) {
		t.Errorf("41 option bytes: %v", err)
	}
	for _, p := range [][]byte{nil, {0x45}, {0x60}, {0x75, 0, 0}, make([]byte, 20)} {
		if err := segment.Lengths(p); err == nil {
			t.Errorf("Lengths(%x) accepted", p)
		}
		if err := segment.SetTCPChecksum(p); err == nil {
			t.Errorf("SetTCPChecksum(%x) accepted", p)
		}
	}
	if segment.IPv4Checksum(nil) != 0 || segment.TCPChecksum(v4, v4, nil) == 0 {
		t.Error("short inputs")
	}
}

// TestFlagHelpers checks Has, Only and the setters against the header
// bytes RFC 9293 §3.1 lays out.
func TestFlagHelpers(t *testing.T) {
	h := segment.TCP(make([]byte, 20))
	h[12] = 0x5f // data offset 5 and the reserved/AE bits, which SetDataOffset keeps
	h.SetFlags(segment.SYN | segment.ACK)
	h.SetSeq(0x01020304)
	h.SetAck(0x05060708)
	h.SetDataOffset(32)
	h.SetChecksum(0xbeef)
	if !bytes.Equal(h[4:14], []byte{1, 2, 3, 4, 5, 6, 7, 8, 0x8f, 0x12}) || h.Checksum() != 0xbeef {
		t.Fatalf("%x", []byte(h))
	}
	f := h.Flags()
	if !f.Has(segment.SYN) || !f.Has(segment.SYN|segment.ACK) || f.Has(segment.SYN|segment.RST) {
		t.Fatal("Has")
	}
	if f.Only(segment.SYN, segment.SYN|segment.ACK) || !f.Only(segment.SYN|segment.ACK, segment.SYN|segment.ACK|segment.RST) {
		t.Fatal("Only")
	}
}

// TestTCPChecksumNeverZero: a segment whose ones'-complement sum is zero
// gets 0xFFFF, not 0 (Linux's TCP-AO hashes an inbound segment with a
// zero checksum as if it were its own outbound one, and refuses it), and
// 0xFFFF passes a receiver's check, which sums the whole segment with
// its checksum field and expects all ones.
func TestTCPChecksumNeverZero(t *testing.T) {
	for _, a := range []string{"192.0.2.1", "2001:db8::1"} {
		ip := segment.IP{Src: netip.MustParseAddr(a), Dst: netip.MustParseAddr(a).Next()}
		f := segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1, Ack: 2, Flags: segment.ACK, Window: 512}
		pkt, err := segment.AppendPacket(nil, ip, f, []byte("payload!"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := segment.ParsePacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		off, end := segment.TCPOffset(pkt, &s)
		tcp := segment.TCP(pkt[off:end])
		// Add the checksum into the first payload word: the sum of the
		// segment becomes all ones, and its complement zero.
		c := uint32(segment.TCPChecksum(s.Src(), s.Dst(), tcp))
		w := uint32(binary.BigEndian.Uint16(tcp[20:])) + c
		binary.BigEndian.PutUint16(tcp[20:], uint16(w&0xffff+w>>16))
		if g := gopacketChecksum(t, pkt); g != 0 {
			t.Fatalf("%s: gopacket computes %#04x, want 0 (the test's segment is wrong)", a, g)
		}
		got := segment.TCPChecksum(s.Src(), s.Dst(), tcp)
		if got != 0xffff {
			t.Fatalf("%s: TCPChecksum = %#04x, want 0xffff", a, got)
		}
		tcp.SetChecksum(got)
		if v := gopacketValid(t, pkt); !v {
			t.Fatalf("%s: a receiver refuses checksum 0xffff", a)
		}
	}
}

// gopacketValid reports whether pkt's TCP checksum passes the receiver's
// check: the complement of gopacket's ones'-complement sum over the
// pseudo-header and the segment, its checksum field included, is zero.
func gopacketValid(t *testing.T, pkt []byte) bool {
	t.Helper()
	csum, err := gopacketTCP(t, pkt).ComputeChecksum() // over the segment as it is, its checksum field included
	if err != nil {
		t.Fatal(err)
	}
	return csum == 0
}
