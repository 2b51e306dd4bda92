package segment

import (
	"bytes"
	"errors"
	"testing"
)

// seedPackets returns every packet of the tables, valid and malformed.
func seedPackets(t testing.TB) [][]byte {
	pkts := [][]byte{unhex(t, rfc9235v4SYN), unhex(t, rfc9235v4Data), unhex(t, rfc9235v6SYN)}
	tcp := pkts[2][40:]
	pkts = append(pkts,
		v6(0, ext(60), ext(6), tcp),
		v6(44, []byte{6, 0, 0, 0, 0, 0, 0, 1}, tcp),
		v6(51, []byte{6, 4, 0, 0}, make([]byte, 12)),
		v4(tcpHdr(cat(md5Opt, aoOpt)...)),
		v4(tcpHdr(cat(aoOpt, aoOpt)...)),
		v4(tcpHdr(8, 1, 0, 0, 0, 0, 0, 0)),
		v4(tcpHdr(set(md5Opt, 3, 17)...)),
	)
	return pkts
}

func FuzzParsePacket(f *testing.F) {
	for _, p := range seedPackets(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		s, err := ParsePacket(pkt)
		if err != nil {
			if s.header != nil {
				t.Fatalf("error %v with a non-empty Segment", err)
			}
			return
		}
		h := s.header
		if len(h) < TCPMinimumSize || len(h) > MaxHeaderLen || len(h) != h.DataOffset() || cap(h) != len(h) {
			t.Fatalf("header length %d, cap %d, data offset %d", len(h), cap(h), h.DataOffset())
		}
		if s.Len() != len(h)+len(s.payload) || s.frags != nil {
			t.Fatalf("Len %d, header %d, payload %d, frags %v", s.Len(), len(h), len(s.payload), s.frags)
		}
		// Header and payload are one contiguous run at the end of the IP packet.
		seg := append(bytes.Clone(h), s.payload...)
		if !bytes.Contains(pkt, seg) || s.Len() > len(pkt)-20 {
			t.Fatal("segment is not within the packet")
		}
		if !s.src.IsValid() || s.src.Is4() != s.dst.Is4() || s.Is4() != (pkt[0]>>4 == 4) {
			t.Fatalf("addresses %v -> %v from IP version %d", s.src, s.dst, pkt[0]>>4)
		}
		checkAuth(t, h, s.Auth())
		if a, err := h.AuthOptions(); err != nil || a != s.Auth() {
			t.Fatalf("AuthOptions on the header = %+v, %v; Segment has %+v", a, err, s.Auth())
		}
		if err := s.Check(); err != nil {
			t.Fatalf("a parsed segment fails Check: %v", err)
		}
	})
}

func FuzzAuthOptions(f *testing.F) {
	for _, p := range seedPackets(f) {
		if s, err := ParsePacket(p); err == nil {
			f.Add([]byte(s.header))
		}
	}
	for _, opts := range [][]byte{nil, aoOpt, md5Opt, cat(aoOpt, aoOpt), cat(md5Opt, aoOpt), {8, 0, 0, 0, 0, 0, 0, 0}, cat(aoOpt, []byte{8, 0, 0, 0})} {
		f.Add(tcpHdr(opts...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := TCP(b).AuthOptions()
		if err != nil {
			if a != noAuth {
				t.Fatalf("error %v with Auth %+v", err, a)
			}
		} else {
			checkAuth(t, TCP(b), a)
		}
		if len(b) < TCPMinimumSize || TCP(b).DataOffset() < TCPMinimumSize || TCP(b).DataOffset() > len(b) {
			if !errors.Is(err, ErrShortTCP) && !errors.Is(err, ErrDataOffset) {
				t.Fatalf("bad header accepted: %v", err)
			}
			return
		}
		// Compare with a line-by-line transcription of Linux.
		md5, ao, lerr := linuxParseAuthOptions(b)
		switch {
		case lerr == "" && (err != nil || a.MD5 != md5 || a.AO != ao):
			t.Fatalf("Linux finds MD5 at %d, AO at %d; AuthOptions = %+v, %v", md5, ao, a, err)
		case lerr == "EINVAL" && !errors.Is(err, ErrOptionLength) && !errors.Is(err, ErrAuthOption),
			lerr == "EEXIST" && !errors.Is(err, ErrDuplicateAuth) && !errors.Is(err, ErrBothAuth):
			t.Fatalf("Linux says %s, AuthOptions says %v", lerr, err)
		}
	})
}

// checkAuth checks that a successful Auth points at well-formed options
// inside h.
func checkAuth(t *testing.T, h TCP, a Auth) {
	t.Helper()
	if a.MD5 > 0 && a.AO > 0 {
		t.Fatalf("both MD5 and AO: %+v", a)
	}
	if a.MD5 > 0 && (a.MD5 < TCPMinimumSize || a.MD5+MD5OptionLen > h.DataOffset() || h[a.MD5] != OptionKindMD5 || h[a.MD5+1] != MD5OptionLen) {
		t.Fatalf("bad MD5 offset %d in %x", a.MD5, h)
	}
	if a.AO > 0 && (a.AO < TCPMinimumSize || a.AOLen <= 4 || a.AO+a.AOLen > h.DataOffset() || h[a.AO] != OptionKindAO || int(h[a.AO+1]) != a.AOLen) {
		t.Fatalf("bad AO offset %d length %d in %x", a.AO, a.AOLen, h)
	}
	if a.AO == 0 && (a.AO != 0 || a.AOLen != 0) || a.MD5 < 0 {
		t.Fatalf("bad Auth %+v", a)
	}
}

// linuxParseAuthOptions transcribes tcp_do_parse_auth_options() of
// net/ipv4/tcp_input.c (Linux v6.7, CONFIG_TCP_AO) with pointers turned into
// indexes; it returns the offsets of the options' kind bytes (Linux returns
// pointers two bytes further) or "EINVAL" / "EEXIST".
func linuxParseAuthOptions(th []byte) (md5, ao int, errno string) {
	length := int(th[12]>>4)<<2 - 20
	ptr := 20
	minlen := 4 + 1 // sizeof(struct tcp_ao_hdr) + 1
	md5, ao = 0, 0
	for length >= minlen {
		opcode := th[ptr]
		ptr++
		switch opcode {
		case 0: // TCPOPT_EOL
			return md5, ao, ""
		case 1: // TCPOPT_NOP
			length--
			continue
		default:
			opsize := int(th[ptr])
			ptr++
			if opsize < 2 || opsize > length {
				return 0, 0, "EINVAL"
			}
			if opcode == 19 { // TCPOPT_MD5SIG
				if opsize != 18 {
					return 0, 0, "EINVAL"
				}
				if md5 > 0 || ao > 0 {
					return 0, 0, "EEXIST"
				}
				md5 = ptr - 2
			} else if opcode == 29 { // TCPOPT_AO
				if opsize <= 4 {
					return 0, 0, "EINVAL"
				}
				if md5 > 0 || ao > 0 {
					return 0, 0, "EEXIST"
				}
				ao = ptr - 2
			}
			ptr += opsize - 2
			length -= opsize
		}
	}
	return md5, ao, ""
}
