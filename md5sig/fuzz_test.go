package md5sig

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// FuzzVerify feeds arbitrary packets to Keyring.Verify (and, when they
// parse, Sign on a copy): no panic, and only the documented errors. A
// segment that verifies must carry an MD5 option whose digest is the
// reference RFC 2385 digest under the peer's key, or be unsigned from a
// peer no key covers.
func FuzzVerify(f *testing.F) {
	a4, b4 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	a6, b6 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	key := []byte("fuzz-key")
	ring := NewKeyring(nil)
	for _, p := range []netip.Addr{a4, a6} {
		if _, err := ring.Add(keys.MD5{Peer: netip.PrefixFrom(p, p.BitLen()), Key: key}); err != nil {
			f.Fatal(err)
		}
	}
	signer := NewKeyring(nil)
	for _, p := range []netip.Addr{b4, b6} {
		if _, err := signer.Add(keys.MD5{Peer: netip.PrefixFrom(p, p.BitLen()), Key: key}); err != nil {
			f.Fatal(err)
		}
	}
	// Seeds: signed and unsigned segments both ways, IPv4 and IPv6, with
	// and without payload, and their truncations.
	for _, ends := range [][2]netip.Addr{{a4, b4}, {a6, b6}} {
		for _, pay := range [][]byte{nil, []byte("payload bytes")} {
			tcp := append(tcpHeader(179, 40000, 7, 9, segment.ACK|segment.PSH, true, 2, 4, 5, 0xb4), pay...)
			seg, err := segment.FromTCP(ends[0], ends[1], tcp)
			if err != nil {
				f.Fatal(err)
			}
			if err := signer.Sign(&seg, 0); err != nil {
				f.Fatal(err)
			}
			pkt := packet(ends[0], ends[1], tcp)
			f.Add(pkt)
			f.Add(pkt[:len(pkt)/2])
			f.Add(packet(ends[0], ends[1], append(tcpHeader(179, 40000, 7, 9, segment.ACK, false), pay...)))
		}
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		seg, err := segment.ParsePacket(pkt)
		if err != nil {
			return
		}
		err = ring.Verify(&seg, 0)
		switch {
		case err == nil:
			if seg.Auth().MD5 == 0 {
				if ring.Lookup(seg.Src(), 0) != nil {
					t.Fatalf("unsigned segment from a covered peer accepted")
				}
				return
			}
			d := refDigest(seg.Src(), seg.Dst(), whole(&seg), key)
			if got := seg.Header()[seg.Auth().MD5+2 : seg.Auth().MD5+18]; string(got) != string(d[:]) {
				t.Fatalf("accepted digest %x, reference %x", got, d)
			}
		case errors.Is(err, ErrBadMAC), errors.Is(err, ErrMissing), errors.Is(err, ErrUnexpected),
			errors.Is(err, ErrAOOption), errors.Is(err, segment.ErrAuthOption), errors.Is(err, segment.ErrDuplicateAuth),
			errors.Is(err, segment.ErrBothAuth), errors.Is(err, segment.ErrOptionLength), errors.Is(err, segment.ErrDataOffset):
		default:
			t.Fatalf("undocumented error: %v", err)
		}
		// Signing a parsed copy must not panic either.
		cp := append([]byte(nil), pkt...)
		if s2, err := segment.ParsePacket(cp); err == nil {
			_ = ring.Sign(&s2, 0)
		}
	})
}
