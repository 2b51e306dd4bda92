package md5sig

import (
	"crypto/md5"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

var (
	addr = netip.MustParseAddr
	pfx  = netip.MustParsePrefix
)

// tcpHeader lays out a TCP header as a stack would: with md5 set, the MD5
// option first (NOP NOP 19 18 + zero digest), then extra options, padded
// with NOPs to a 4-byte boundary.
func tcpHeader(sport, dport uint16, seq, ack uint32, flags segment.Flags, md5 bool, extra ...byte) []byte {
	var opt []byte
	if md5 {
		opt = AppendOption(nil)
	}
	h := segment.AppendTCP(nil, segment.Fields{SrcPort: sport, DstPort: dport, Seq: seq, Ack: ack, Flags: flags, Window: 65535,
		Options: [][]byte{opt, extra}})
	binary.BigEndian.PutUint16(h[16:], 0xbeef) // a checksum the digest must ignore
	return h
}

// packet wraps a TCP segment in an IPv4 or IPv6 header.
func packet(src, dst netip.Addr, tcp []byte) []byte {
	if src.Is4() {
		p := make([]byte, 20, 20+len(tcp))
		p[0] = 0x45
		binary.BigEndian.PutUint16(p[2:], uint16(20+len(tcp)))
		p[8], p[9] = 64, 6
		s, d := src.As4(), dst.As4()
		copy(p[12:], s[:])
		copy(p[16:], d[:])
		return append(p, tcp...)
	}
	p := make([]byte, 40, 40+len(tcp))
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(len(tcp)))
	p[6], p[7] = 6, 64
	s, d := src.As16(), dst.As16()
	copy(p[8:], s[:])
	copy(p[24:], d[:])
	return append(p, tcp...)
}

// refDigest is RFC 2385 as Linux computes it, written out with crypto/md5
// alone: pseudo-header with the segment's length, the 20-byte header with
// the checksum zeroed, the payload, the key. tcp is the whole segment.
func refDigest(src, dst netip.Addr, tcp, key []byte) [md5.Size]byte {
	h := md5.New()
	if src.Unmap().Is4() && dst.Unmap().Is4() {
		var ph [12]byte
		s, d := src.Unmap().As4(), dst.Unmap().As4()
		copy(ph[0:], s[:])
		copy(ph[4:], d[:])
		ph[9] = 6
		binary.BigEndian.PutUint16(ph[10:], uint16(len(tcp)))
		h.Write(ph[:])
	} else {
		var ph [40]byte
		s, d := src.As16(), dst.As16()
		copy(ph[0:], s[:])
		copy(ph[16:], d[:])
		binary.BigEndian.PutUint32(ph[32:], uint32(len(tcp)))
		ph[39] = 6
		h.Write(ph[:])
	}
	var th [20]byte
	copy(th[:], tcp)
	th[16], th[17] = 0, 0
	h.Write(th[:])
	h.Write(tcp[int(tcp[12]>>4)*4:])
	h.Write(key)
	var d [md5.Size]byte
	h.Sum(d[:0])
	return d
}

// whole returns the segment's bytes in one piece.
func whole(seg *segment.Segment) []byte {
	b := append([]byte(nil), seg.Header()...)
	b = append(b, seg.Payload()...)
	for _, f := range seg.Frags() {
		b = append(b, f...)
	}
	return b
}

// digestOf returns the digest in seg's MD5 option.
func digestOf(t testing.TB, seg *segment.Segment) []byte {
	t.Helper()
	a, err := seg.Header().AuthOptions()
	if err != nil || a.MD5 == 0 {
		t.Fatalf("no MD5 option (%v)", err)
	}
	return seg.Header()[a.MD5+2 : a.MD5+OptionLen]
}

func mustAdd(t testing.TB, r *Keyring, cfg keys.MD5) *Key {
	t.Helper()
	k, err := r.Add(cfg)
	if err != nil {
		t.Fatalf("Add(%v): %v", cfg, err)
	}
	return k
}

func mustSeg(t testing.TB, src, dst netip.Addr, tcp []byte, frags ...[]byte) segment.Segment {
	t.Helper()
	s, err := segment.FromTCP(src, dst, tcp, frags...)
	if err != nil {
		t.Fatalf("FromTCP: %v", err)
	}
	return s
}
