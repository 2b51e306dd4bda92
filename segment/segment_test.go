package segment

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// Packets from RFC 9235 (TCP-AO test vectors), transcribed in
// shared/rfc/rfc9235-test-vectors.json. KeyID 61 (client), RNextKeyID 84.
var (
	// §4.1.1: IPv4, client SYN, 10.11.12.13:59863 -> 172.27.28.29:179.
	rfc9235v4SYN = "45e0004cdd0f4000ff06bf6b0a0b0c0dac1b1c1d" +
		"e9d700b3fbfbab5a00000000e002ffffcac40000" +
		"020405b4010303080402080a00155ab700000000" +
		"1d103d542ee437c6f8ede6d7c4d602e7"
	// §4.1.3: IPv4, client non-SYN with 67 bytes of BGP payload.
	rfc9235v4Data = "45e0008736a14000ff06659f0a0b0c0dac1b1c1d" +
		"e9d700b3fbfbab5b11c14262c0180104a1620000" +
		"0101080a00155ac184a50beb1d103d547064cf998cc6c315c2c2e2bf" +
		"ffffffffffffffffffffffffffffffff00430104dabf00b40a0b0c0d" +
		"260206010400010001020280000202020002024200020641040000dabf" +
		"02084006006400010100"
	// §6.1.1: IPv6, client SYN, [fd00::1]:63460 -> [fd00::2]:179.
	rfc9235v6SYN = "6e0891dc00380640" +
		"fd000000000000000000000000000001fd000000000000000000000000000002" +
		"f7e400b3176a833f00000000e002ffff47210000" +
		"020405a0010303080402080a0041d08700000000" +
		"1d103d549033ec3d7334b64c5edd039f"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tcpHdr returns a 20-byte TCP header (ports 1000 -> 179, ACK) followed by
// opts, with the data offset covering both; opts must be a multiple of 4.
func tcpHdr(opts ...byte) []byte {
	h := make([]byte, TCPMinimumSize, TCPMinimumSize+len(opts))
	binary.BigEndian.PutUint16(h[0:], 1000)
	binary.BigEndian.PutUint16(h[2:], 179)
	h[12] = byte((TCPMinimumSize+len(opts))/4) << 4
	h[13] = byte(ACK)
	return append(h, opts...)
}

// v4 wraps payload (normally a TCP segment) in a 20-byte IPv4 header.
func v4(payload []byte) []byte {
	p := make([]byte, 20, 20+len(payload))
	p[0], p[8], p[9] = 0x45, 64, protoTCP
	binary.BigEndian.PutUint16(p[2:], uint16(20+len(payload)))
	copy(p[12:], []byte{192, 0, 2, 1, 192, 0, 2, 2})
	return append(p, payload...)
}

// v6 wraps the concatenated parts in an IPv6 header whose next header is next.
func v6(next byte, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	p := make([]byte, 40, 40+len(body))
	p[0], p[6], p[7] = 0x60, next, 64
	binary.BigEndian.PutUint16(p[4:], uint16(len(body)))
	p[8], p[23] = 0x20, 1 // 2000::1
	p[24], p[39] = 0x20, 2
	return append(p, body...)
}

// ext returns an 8-byte IPv6 extension header (hop-by-hop, routing or
// destination options shape, length 0) followed by next.
func ext(next byte) []byte { return []byte{next, 0, 1, 4, 0, 0, 0, 0} }

func set(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

// Option bytes used by the tables.
var (
	md5Opt = append([]byte{1, 1, OptionKindMD5, MD5OptionLen}, make([]byte, 16)...)
	aoOpt  = []byte{OptionKindAO, 8, 61, 84, 0xaa, 0xbb, 0xcc, 0xdd}
)

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestParsePacketErrors(t *testing.T) {
	v4SYN, v6SYN := unhex(t, rfc9235v4SYN), unhex(t, rfc9235v6SYN)
	tcp := tcpHdr()
	var twenty []byte
	for range 20 {
		twenty = append(twenty, ext(60)...)
	}
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, ErrShortPacket},
		{"IPv4 header truncated", v4SYN[:19], ErrShortPacket},
		{"IPv4 IHL < 5", set(v4SYN, 0, 0x44), ErrIPHeaderLength},
		{"IPv4 IHL past the end", set(v4(tcp), 0, 0x4f), ErrIPHeaderLength},
		{"IPv4 total length > buffer", v4SYN[:len(v4SYN)-1], ErrShortPacket},
		{"IPv6 header truncated", v6SYN[:39], ErrShortPacket},
		{"IPv6 payload length > buffer", v6SYN[:len(v6SYN)-1], ErrShortPacket},
		{"version 5", set(v4SYN, 0, 0x55), ErrIPVersion},
		{"version 0", make([]byte, 40), ErrIPVersion},
		{"IPv4 UDP", set(v4SYN, 9, 17), ErrNotTCP},
		{"IPv4 more fragments", set(v4SYN, 6, 0x20), ErrFragment},
		{"IPv4 fragment offset", set(v4SYN, 7, 1), ErrFragment},
		{"IPv6 UDP", set(v6SYN, 6, 17), ErrNotTCP},
		{"IPv6 fragment header", v6(44, []byte{6, 0, 0, 0, 0, 0, 0, 1}, tcp), ErrFragment},
		{"IPv6 ext header cut before its length", v6(60, []byte{6}), ErrExtHeaderChain},
		{"IPv6 ext header cut mid-header", v6(60, []byte{6, 1, 1, 4, 0, 0, 0, 0}), ErrExtHeaderChain},
		{"IPv6 AH cut mid-header", v6(51, []byte{6, 4, 0, 0}, make([]byte, 12)), ErrExtHeaderChain},
		{"IPv6 chain ends in ext header", v6(60, ext(60)), ErrExtHeaderChain},
		{"IPv6 20 ext headers, then UDP", v6(60, twenty[:19*8], ext(17), tcp), ErrNotTCP},
		{"IPv6 20 ext headers, the last cut", v6(60, twenty[:19*8], ext(6)[:1]), ErrExtHeaderChain},
		{"IPv6 hop-by-hop not first", v6(60, ext(0), ext(6), tcp), ErrExtHeaderChain},
		{"IPv6 ESP", v6(50, tcp), ErrNotTCP},
		{"IPv6 no next header", v6(59, tcp), ErrNotTCP},
		{"IPv6 ext header then UDP", v6(60, ext(17), tcp), ErrNotTCP},
		{"TCP < 20 bytes", v4(tcp[:19]), ErrShortTCP},
		{"IPv6 TCP empty", v6(6), ErrShortTCP},
		{"data offset < 5", v4(set(tcp, 12, 0x40)), ErrDataOffset},
		{"data offset past the end", v4(set(tcpHdr(1, 1, 1, 1, 1, 1, 1, 1), 12, 0xf0)), ErrDataOffset},
		{"option length 0", v4(tcpHdr(8, 0, 0, 0, 0, 0, 0, 0)), ErrOptionLength},
		{"option length 1", v4(tcpHdr(8, 1, 0, 0, 0, 0, 0, 0)), ErrOptionLength},
		{"option past the end", v4(tcpHdr(1, 1, 8, 7, 0, 0, 0, 0)), ErrOptionLength},
		{"AO past the end", v4(tcpHdr(29, 9, 61, 84, 0, 0, 0, 0)), ErrOptionLength},
		{"MD5 length 17", v4(tcpHdr(set(md5Opt, 3, 17)...)), ErrAuthOption},
		{"MD5 length 19", v4(tcpHdr(cat(set(md5Opt, 3, 19), []byte{1, 1, 1, 1})...)), ErrAuthOption},
		{"AO length 4", v4(tcpHdr(29, 4, 61, 84, 1, 1, 1, 1)), ErrAuthOption},
		{"AO length 2", v4(tcpHdr(29, 2, 1, 1, 1, 1, 1, 1)), ErrAuthOption},
		{"two AO", v4(tcpHdr(cat(aoOpt, aoOpt)...)), ErrDuplicateAuth},
		{"two MD5", v4(tcpHdr(cat(md5Opt, md5Opt)...)), ErrDuplicateAuth},
		{"MD5 then AO", v4(tcpHdr(cat(md5Opt, aoOpt)...)), ErrBothAuth},
		{"AO then MD5", v4(tcpHdr(cat(aoOpt, md5Opt)...)), ErrBothAuth},
		{"IPv6 two AO", v6(6, tcpHdr(cat(aoOpt, aoOpt)...)), ErrDuplicateAuth},
	}
	// Linux's input path takes any number of extension headers, and so
	// does the walk: 17 and 20 of them before TCP parse.
	for _, n := range []int{17, 20} {
		if _, err := ParsePacket(v6(60, twenty[:(n-1)*8], ext(6), tcp)); err != nil {
			t.Errorf("IPv6 %d ext headers: %v", n, err)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParsePacket(tt.pkt)
			if !errors.Is(err, tt.want) {
				t.Fatalf("ParsePacket = %v, want %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "segment: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
			if s.header != nil || s.src.IsValid() {
				t.Errorf("ParsePacket returned a partial Segment %+v with its error", s)
			}
		})
	}
}

func TestParsePacketRFC9235(t *testing.T) {
	v4Data := unhex(t, rfc9235v4Data)
	tests := []struct {
		name       string
		pkt        string
		src, dst   string
		sport      uint16
		seq, ack   uint32
		flags      Flags
		window     uint16
		checksum   uint16
		doff, ao   int
		mac        string
		payload    []byte
		pseudoHdr  string
		pseudoSize int
	}{
		{
			name: "§4.1.1 IPv4 SYN", pkt: rfc9235v4SYN,
			src: "10.11.12.13", dst: "172.27.28.29", sport: 59863,
			seq: 0xfbfbab5a, ack: 0, flags: SYN, window: 0xffff, checksum: 0xcac4,
			doff: 56, ao: 40, mac: "2ee437c6f8ede6d7c4d602e7",
			pseudoHdr: "0a0b0c0d ac1b1c1d 0006 0038",
		},
		{
			name: "§4.1.3 IPv4 data", pkt: rfc9235v4Data,
			src: "10.11.12.13", dst: "172.27.28.29", sport: 59863,
			seq: 0xfbfbab5b, ack: 0x11c14262, flags: PSH | ACK, window: 0x0104, checksum: 0xa162,
			doff: 48, ao: 32, mac: "7064cf998cc6c315c2c2e2bf",
			payload:   v4Data[20+48:],
			pseudoHdr: "0a0b0c0d ac1b1c1d 0006 0073", // 48 + 67 = 115
		},
		{
			name: "§6.1.1 IPv6 SYN", pkt: rfc9235v6SYN,
			src: "fd00::1", dst: "fd00::2", sport: 63460,
			seq: 0x176a833f, ack: 0, flags: SYN, window: 0xffff, checksum: 0x4721,
			doff: 56, ao: 40, mac: "9033ec3d7334b64c5edd039f",
			pseudoHdr: "fd000000000000000000000000000001 fd000000000000000000000000000002" +
				"00000038 00000006",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParsePacket(unhex(t, tt.pkt))
			if err != nil {
				t.Fatal(err)
			}
			h := s.header
			if s.src != netip.MustParseAddr(tt.src) || s.dst != netip.MustParseAddr(tt.dst) {
				t.Errorf("addresses %v -> %v, want %s -> %s", s.src, s.dst, tt.src, tt.dst)
			}
			if h.SrcPort() != tt.sport || h.DstPort() != 179 {
				t.Errorf("ports %d -> %d, want %d -> 179", h.SrcPort(), h.DstPort(), tt.sport)
			}
			if h.Seq() != tt.seq || h.Ack() != tt.ack {
				t.Errorf("seq %#x ack %#x, want %#x %#x", h.Seq(), h.Ack(), tt.seq, tt.ack)
			}
			if h.Flags() != tt.flags || h.Window() != tt.window || h.Checksum() != tt.checksum {
				t.Errorf("flags %v window %#x checksum %#x, want %v %#x %#x",
					h.Flags(), h.Window(), h.Checksum(), tt.flags, tt.window, tt.checksum)
			}
			if h.DataOffset() != tt.doff || len(h) != tt.doff || len(h.Options()) != tt.doff-20 {
				t.Errorf("data offset %d, len %d, options %d; want %d", h.DataOffset(), len(h), len(h.Options()), tt.doff)
			}
			a := s.Auth()
			if a.MD5 != 0 || a.AO != tt.ao || a.AOLen != 16 {
				t.Fatalf("Auth = %+v, want AO at %d, length 16", a, tt.ao)
			}
			if h[a.AO+2] != 61 || h[a.AO+3] != 84 {
				t.Errorf("KeyID %d RNextKeyID %d, want 61 84", h[a.AO+2], h[a.AO+3])
			}
			if got := hex.EncodeToString(h[a.AO+4 : a.AO+a.AOLen]); got != tt.mac {
				t.Errorf("MAC %s, want %s", got, tt.mac)
			}
			if !bytes.Equal(s.payload, tt.payload) || s.frags != nil {
				t.Errorf("payload %x frags %v, want %x", s.payload, s.frags, tt.payload)
			}
			if s.Len() != tt.doff+len(tt.payload) {
				t.Errorf("Len = %d, want %d", s.Len(), tt.doff+len(tt.payload))
			}
			ph := AppendPseudoHeader(nil, s.src, s.dst, s.Len())
			if want := unhex(t, tt.pseudoHdr); !bytes.Equal(ph, want) {
				t.Errorf("pseudo-header\n got %x\nwant %x", ph, want)
			}
			if s.Is4() != (len(ph) == 12) {
				t.Errorf("Is4 = %v with a %d-byte pseudo-header", s.Is4(), len(ph))
			}
		})
	}
}

// TestParsePacketTrim checks that bytes after the IP length (Ethernet
// padding, a capture's snap slack) are not part of the segment.
func TestParsePacketTrim(t *testing.T) {
	for _, vec := range []string{rfc9235v4SYN, rfc9235v4Data, rfc9235v6SYN} {
		pkt := unhex(t, vec)
		want, err := ParsePacket(pkt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParsePacket(append(pkt, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.header, want.header) || !bytes.Equal(got.payload, want.payload) || got.Len() != want.Len() {
			t.Errorf("padding changed the segment: %x|%x, want %x|%x", got.header, got.payload, want.header, want.payload)
		}
		if cap(got.payload) != len(got.payload) {
			t.Errorf("Payload capacity %d reaches into the padding", cap(got.payload))
		}
	}
}

func TestParsePacketIPv6ExtHeaders(t *testing.T) {
	tcp := unhex(t, rfc9235v6SYN)[40:]
	ah := append([]byte{60, 4, 0, 0}, make([]byte, 20)...) // 24 bytes: (4+2)*4
	routing := []byte{51, 0, 0, 0, 0, 0, 0, 0}
	bigDstOpts := append([]byte{6, 1, 1, 12}, make([]byte, 12)...) // 16 bytes
	var sixteen [][]byte
	for range 15 {
		sixteen = append(sixteen, ext(60))
	}
	tests := []struct {
		name string
		pkt  []byte
	}{
		{"hop-by-hop, destination options", v6(0, ext(60), ext(6), tcp)},
		{"hop-by-hop, routing, AH, destination options", v6(0, ext(43), routing, ah, bigDstOpts, tcp)},
		{"16 extension headers", v6(60, cat(sixteen...), ext(6), tcp)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParsePacket(tt.pkt)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(s.header, tcp) || len(s.payload) != 0 || s.Auth().AO != 40 || s.Len() != len(tcp) {
				t.Errorf("got header %x payload %x auth %+v", s.header, s.payload, s.Auth())
			}
			if want := netip.MustParseAddr("2000::1"); s.src != want {
				t.Errorf("Src = %v, want %v", s.src, want)
			}
		})
	}
}

func TestFromTCP(t *testing.T) {
	tcp := append(tcpHdr(aoOpt...), "hello"...)
	v4a, v4b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	mapped := netip.MustParseAddr("::ffff:192.0.2.1")
	v6a, v6z := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("fe80::2%eth0")
	tests := []struct {
		name     string
		src, dst netip.Addr
		frags    [][]byte
		want     error
		is4      bool
		length   int
	}{
		{name: "IPv4", src: v4a, dst: v4b, is4: true, length: 33},
		{name: "IPv6 with zone", src: v6a, dst: v6z, length: 33},
		{name: "v4-mapped is unmapped", src: mapped, dst: v4b, is4: true, length: 33},
		{name: "frags", src: v4a, dst: v4b, frags: [][]byte{[]byte("ab"), nil, []byte("c")}, is4: true, length: 36},
		{name: "empty frags", src: v4a, dst: v4b, frags: [][]byte{}, is4: true, length: 33},
		{name: "IPv4 64 KiB", src: v4a, dst: v4b, frags: [][]byte{make([]byte, 65535-33)}, is4: true, length: 65535},
		{name: "IPv4 too long", src: v4a, dst: v4b, frags: [][]byte{make([]byte, 65536-33)}, want: ErrSegmentTooLong},
		{name: "IPv6 past 64 KiB", src: v6a, dst: v6a, frags: [][]byte{make([]byte, 65536-33)}, length: 65536},
		{name: "mixed families", src: v4a, dst: v6a, want: ErrAddrFamily},
		{name: "invalid address", src: netip.Addr{}, dst: v4b, want: ErrAddrFamily},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := FromTCP(tt.src, tt.dst, tcp, tt.frags...)
			if !errors.Is(err, tt.want) {
				t.Fatalf("FromTCP = %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			if s.Is4() != tt.is4 || s.Len() != tt.length || s.src.Zone() != "" || s.dst.Zone() != "" {
				t.Errorf("Is4 %v Len %d (%v -> %v), want %v %d", s.Is4(), s.Len(), s.src, s.dst, tt.is4, tt.length)
			}
			if string(s.payload) != "hello" || s.Auth().AO != 20 || len(s.header) != 28 || cap(s.header) != 28 {
				t.Errorf("header %x payload %q auth %+v", s.header, s.payload, s.Auth())
			}
			if len(tt.frags) == 0 && s.frags != nil {
				t.Errorf("Frags = %v, want nil", s.frags)
			}
		})
	}
}

// TestFromTCPErrors checks that FromTCP validates the TCP header like
// ParsePacket does.
func TestFromTCPErrors(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	for _, tt := range []struct {
		tcp  []byte
		want error
	}{
		{nil, ErrShortTCP},
		{tcpHdr()[:19], ErrShortTCP},
		{set(tcpHdr(), 12, 0x60), ErrDataOffset},
		{tcpHdr(cat(md5Opt, aoOpt)...), ErrBothAuth},
	} {
		if _, err := FromTCP(a, a, tt.tcp); !errors.Is(err, tt.want) {
			t.Errorf("FromTCP(%x) = %v, want %v", tt.tcp, err, tt.want)
		}
	}
}

func TestAuthOptions(t *testing.T) {
	md5 := md5Opt[2:] // the bare 18-byte option
	tests := []struct {
		name string
		opts []byte
		want Auth
	}{
		{"no options", nil, Auth{AO: 0}},
		{"AO", aoOpt, Auth{AO: 20, AOLen: 8}},
		{"MD5 after NOPs", md5Opt, Auth{MD5: 22, AO: 0}},
		{"AO after timestamps", cat([]byte{1, 1, 8, 10}, make([]byte, 8), aoOpt), Auth{AO: 32, AOLen: 8}},
		{"AO with 1-byte MAC then NOPs", []byte{29, 5, 1, 2, 0xff, 1, 1, 1}, Auth{AO: 20, AOLen: 5}},
		{"EOL hides what follows", cat([]byte{0, 1, 1, 1}, aoOpt, aoOpt), Auth{AO: 0}},
		{"MD5 then EOL then junk", cat(md5, []byte{0, 0xff}), Auth{MD5: 20, AO: 0}},
		// Linux stops when fewer than 5 bytes remain: a broken option there is ignored.
		{"broken option in the last 4 bytes", cat(aoOpt, []byte{8, 0, 0, 0}), Auth{AO: 20, AOLen: 8}},
		{"AO length 4 in the last 4 bytes", cat(aoOpt, []byte{29, 4, 1, 1}), Auth{AO: 20, AOLen: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TCP(tcpHdr(tt.opts...)).AuthOptions()
			if err != nil || got != tt.want {
				t.Errorf("AuthOptions = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	// The header is DataOffset bytes: payload bytes are never read as options.
	withPayload := append(tcpHdr(1, 1, 1, 1), aoOpt...)
	if got, err := TCP(withPayload).AuthOptions(); err != nil || got.AO != 0 {
		t.Errorf("AuthOptions read the payload: %+v, %v", got, err)
	}
}

func TestAppendPseudoHeader(t *testing.T) {
	v4a, v4b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.7")
	v6a, v6b := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:ffff::abcd%eth0")
	tests := []struct {
		name     string
		src, dst netip.Addr
		length   int
		want     string
	}{
		{"IPv4", v4a, v4b, 20, "c0000201 c6336407 00 06 0014"},
		{"IPv4 max length", v4b, v4a, 65535, "c6336407 c0000201 00 06 ffff"},
		{"IPv6", v6a, v6b, 0x12345,
			"20010db8000000000000000000000001 20010db8ffff0000000000000000abcd 00012345 00000006"},
		{"IPv4 to IPv6 (mixed: 16-byte forms)", v4a, v6a, 40,
			"00000000000000000000ffffc0000201 20010db8000000000000000000000001 00000028 00000006"},
		{"IPv4-mapped stays IPv6", netip.AddrFrom16(v4a.As16()), netip.AddrFrom16(v4b.As16()), 40,
			"00000000000000000000ffffc0000201 00000000000000000000ffffc6336407 00000028 00000006"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AppendPseudoHeader([]byte("pre"), tt.src, tt.dst, tt.length)
			if want := append([]byte("pre"), unhex(t, tt.want)...); !bytes.Equal(got, want) {
				t.Errorf("\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestFlagsString(t *testing.T) {
	for f, want := range map[Flags]string{
		0: "none", SYN: "S", SYN | ACK: "S.", ACK: ".", PSH | ACK: "P.", FIN | ACK: "F.",
		RST: "R", RST | ACK: "R.", ACK | ECE | CWR: ".EW", URG | ACK: ".U", 0xff: "FSRP.UEW",
	} {
		if got := f.String(); got != want {
			t.Errorf("Flags(%#x).String() = %q, want %q", uint8(f), got, want)
		}
	}
}

func TestEachPayload(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	frags := [][]byte{nil, []byte("wor"), {}, []byte("ld")}
	s, err := FromTCP(a, a, append(tcpHdr(), "hello, "...), frags...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	s.EachPayload(func(b []byte) { got = append(got, string(b)) })
	if strings.Join(got, "|") != "hello, |wor|ld" {
		t.Errorf("EachPayload visited %q", got)
	}
	s.payload = nil
	got = got[:0]
	s.EachPayload(func(b []byte) { got = append(got, string(b)) })
	if strings.Join(got, "|") != "wor|ld" {
		t.Errorf("EachPayload without Payload visited %q", got)
	}
}

func TestAllocs(t *testing.T) {
	pkt4, pkt6 := unhex(t, rfc9235v4Data), unhex(t, rfc9235v6SYN)
	tcp := pkt4[20:]
	hdr := TCP(tcp[:48])
	a, b := netip.MustParseAddr("10.11.12.13"), netip.MustParseAddr("fd00::2")
	frags := [][]byte{[]byte("more"), []byte("data")}
	buf := make([]byte, 0, 64)
	var s Segment
	var n int
	for name, fn := range map[string]func(){
		"ParsePacket IPv4":      func() { s, _ = ParsePacket(pkt4) },
		"ParsePacket IPv6":      func() { s, _ = ParsePacket(pkt6) },
		"ParsePacket error":     func() { s, _ = ParsePacket(pkt4[:30]) },
		"FromTCP":               func() { s, _ = FromTCP(a, a, tcp) },
		"FromTCP frags...":      func() { s, _ = FromTCP(a, a, tcp, frags...) },
		"AuthOptions":           func() { _, _ = hdr.AuthOptions() },
		"AppendPseudoHeader v4": func() { buf = AppendPseudoHeader(buf[:0], a, a, 100) },
		"AppendPseudoHeader v6": func() { buf = AppendPseudoHeader(buf[:0], b, b, 100) },
		"EachPayload":           func() { s.EachPayload(func(b []byte) { n += len(b) }) },
	} {
		if allocs := testing.AllocsPerRun(100, fn); allocs != 0 {
			t.Errorf("%s: %v allocations, want 0", name, allocs)
		}
	}
}

func BenchmarkParsePacket(b *testing.B) {
	for _, bm := range []struct{ name, pkt string }{{"IPv4", rfc9235v4Data}, {"IPv6", rfc9235v6SYN}} {
		pkt := unhex(b, bm.pkt)
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(pkt)))
			var buf [40]byte
			for b.Loop() {
				s, err := ParsePacket(pkt)
				if err != nil {
					b.Fatal(err)
				}
				AppendPseudoHeader(buf[:0], s.src, s.dst, s.Len())
			}
		})
	}
}

// TestParsePacketV4MappedIPv6 checks the rule for IPv4-mapped addresses in a
// real IPv6 header: they stay IPv6, and so does the pseudo-header.
func TestParsePacketV4MappedIPv6(t *testing.T) {
	pkt := v6(6, tcpHdr(aoOpt...))
	copy(pkt[8:], unhex(t, "00000000000000000000ffffc0000201 00000000000000000000ffffc0000202"))
	s, err := ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	if s.Is4() || !s.src.Is4In6() || s.dst.Unmap() != netip.MustParseAddr("192.0.2.2") {
		t.Errorf("addresses %v -> %v, Is4 %v; want v4-mapped IPv6", s.src, s.dst, s.Is4())
	}
	if n := len(AppendPseudoHeader(nil, s.src, s.dst, s.Len())); n != 40 {
		t.Errorf("pseudo-header is %d bytes, want 40", n)
	}
}

// TestCheck: a parsed segment passes the one check until what the parse
// noted stops holding; a Segment made by hand never does. ShortenAO fits
// the option and keeps the segment passing.
func TestCheck(t *testing.T) {
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	tcp := make([]byte, 40)
	tcp[12] = 10 << 4
	copy(tcp[20:], []byte{OptionKindAO, 20, 1, 2})
	seg, err := FromTCP(src, dst, tcp)
	if err != nil || seg.Check() != nil || seg.Auth().AO != 20 || seg.Auth().AOLen != 20 {
		t.Fatalf("parsed: %v, Check %v, Auth %+v", err, seg.Check(), seg.Auth())
	}
	if err := seg.ShortenAO(16); err != nil || seg.Check() != nil || seg.header[21] != 16 || seg.Auth().AOLen != 16 {
		t.Fatalf("ShortenAO(16): %v, Check %v, length byte %d", err, seg.Check(), seg.header[21])
	}
	for i := 36; i < 40; i++ {
		if seg.header[i] != OptionKindNOP {
			t.Fatalf("byte %d freed by ShortenAO is %d, not NOP", i, seg.header[i])
		}
	}
	for _, n := range []int{3, 17} {
		if err := seg.ShortenAO(n); !errors.Is(err, ErrAuthOption) {
			t.Errorf("ShortenAO(%d): %v", n, err)
		}
	}
	// Only the parser sets a Segment's fields: a zero one (all another
	// package can make) and nil are refused; a parsed one stays as the
	// parse found it, whatever its caller writes into the bytes.
	seg.header[20] = OptionKindNOP
	if err := seg.Check(); err != nil || seg.Auth().AOLen != 16 || len(seg.Header()) != 40 {
		t.Errorf("a parsed segment whose bytes changed: Check %v, Auth %+v", err, seg.Auth())
	}
	for name, s := range map[string]*Segment{"zero": {}, "nil": nil} {
		if err := s.Check(); !errors.Is(err, ErrUnparsed) {
			t.Errorf("%s: Check %v", name, err)
		}
	}
}
