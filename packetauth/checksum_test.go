package packetauth

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/tcpsig/tcpsig/internal/csum"
	"github.com/tcpsig/tcpsig/segment"
)

// checksumOK reports whether pkt's TCP checksum is right (0 and 0xffff
// are the same ones' complement number).
func checksumOK(t *testing.T, pkt []byte) bool {
	t.Helper()
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	off, end := segment.TCPOffset(pkt, &s)
	tcp := segment.TCP(pkt[off:end])
	got, want := tcp.Checksum(), segment.TCPChecksum(s.Src(), s.Dst(), tcp)
	return got == want || got|want == 0xffff && got&want == 0
}

// corrupt flips bits of pkt's TCP checksum field, which neither MAC covers.
func corrupt(t *testing.T, pkt []byte) []byte {
	t.Helper()
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		t.Fatal(err)
	}
	off, _ := segment.TCPOffset(pkt, &s)
	p := bytes.Clone(pkt)
	p[off+segment.TCPChecksumOffset] ^= 0x5a
	return p
}

// TestChecksumKept: Outbound (with and without StackChecksums) and
// Inbound leave a right TCP checksum right, through option insertion,
// SACK trimming, MSS clamping, odd and even payloads, IPv4 and IPv6,
// TCP-AO and MD5; with StackChecksums a wrong checksum from the stack
// leaves wrong, and Inbound delivers a segment whose MAC verifies but
// whose checksum was damaged on the way with a wrong checksum, for the
// stack to drop.
func TestChecksumKept(t *testing.T) {
	for _, md5 := range []bool{false, true} {
		for _, v6 := range []bool{false, true} {
			for _, stack := range []bool{false, true} {
				a, b := addrA4, addrB4
				if v6 {
					a, b = addrA6, addrB6
				}
				ca, cb := Config{AO: aoRing(t, b, 12, mkt{1, 2, "k"})}, Config{AO: aoRing(t, a, 12, mkt{2, 1, "k"})}
				if md5 {
					ca, cb = Config{MD5: md5Ring(t, b, "k")}, Config{MD5: md5Ring(t, a, "k")}
				}
				ca.StackChecksums, cb.StackChecksums = stack, stack
				p := newPair(t, v6, ca, cb)
				check := func(name string, wire, got []byte) {
					t.Helper()
					if !checksumOK(t, wire) || !checksumOK(t, got) {
						t.Fatalf("md5 %v v6 %v stack %v %s: wire %v delivered %v", md5, v6, stack, name,
							checksumOK(t, wire), checksumOK(t, got))
					}
				}
				w, g := p.send(p.a, p.b, segment.SYN, nil, netstackSYN)
				check("SYN", w, g)
				w, g = p.send(p.b, p.a, segment.SYN|segment.ACK, nil, netstackSYN)
				check("SYN-ACK", w, g)
				for n := range 70 {
					data := bytes.Repeat([]byte{0xff, byte(n)}, n)[:n]
					w, g = p.send(p.a, p.b, segment.ACK, data, tsOpt, sackN(n%4))
					check("data", w, g)
				}
				// Damaged in the checksum field only: the MAC verifies, the
				// checksum stays wrong.
				w, err := p.a.l.Outbound(nil, p.build(p.a, p.b, segment.ACK, payload, tsOpt))
				if err != nil {
					t.Fatal(err)
				}
				g, err = p.b.l.Inbound(nil, corrupt(t, w))
				if err != nil || checksumOK(t, g) {
					t.Fatalf("md5 %v v6 %v stack %v: damaged checksum: %v, delivered right", md5, v6, stack, err)
				}
				w, err = p.a.l.Outbound(nil, corrupt(t, p.build(p.a, p.b, segment.ACK, payload, tsOpt)))
				if err != nil || checksumOK(t, w) != !stack {
					t.Fatalf("md5 %v v6 %v stack %v: stack's wrong checksum: %v, leaves right: %v", md5, v6, stack, err, checksumOK(t, w))
				}
			}
		}
	}
}

// TestUpdateChecksum: the incremental update agrees with a full sum for
// arbitrary changes of a header's words.
func TestUpdateChecksum(t *testing.T) {
	seg := make([]byte, 60+7)
	for i := range seg {
		seg[i] = byte(i*37 + 11)
	}
	seg[12] = 15 << 4
	src, dst := addrA4, addrB4
	hc := segment.TCPChecksum(src, dst, seg)
	for i := range 60 * 256 {
		if i/256 == segment.TCPChecksumOffset || i/256 == segment.TCPChecksumOffset+1 {
			continue
		}
		q := bytes.Clone(seg)
		q[i/256] = byte(i)
		old, new := words(seg[:60], len(seg)), words(q[:60], len(q))
		got, want := csum.Update(hc, old, new), segment.TCPChecksum(src, dst, q)
		if got != want {
			t.Fatalf("byte %d = %#x: %#04x, want %#04x", i/256, byte(i), got, want)
		}
	}
	// A change after which the segment sums to zero: 0xFFFF, never 0
	// (Linux's TCP-AO misreads a zero checksum).
	q := bytes.Clone(seg)
	w := uint32(binary.BigEndian.Uint16(q[4:])) + uint32(hc)
	binary.BigEndian.PutUint16(q[4:], uint16(w&0xffff+w>>16))
	if got := csum.Update(hc, words(seg[:60], len(seg)), words(q[:60], len(q))); got != 0xffff {
		t.Fatalf("a segment summing to zero: %#04x, want 0xffff", got)
	}
}
