package packetauth

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

// fuzzSetup returns an established pair (TCP-AO over IPv4, or MD5 over
// IPv6), the wire packets A signed (the only segments of A that B may
// ever deliver: any other would need a forged MAC) and the stack packets
// they were signed from.
func fuzzSetup(tb testing.TB, md5 bool) (p *pair, signed, stack [][]byte) {
	if md5 {
		p = newPair(tb, true, Config{MD5: md5Ring(tb, addrB6, "m")}, Config{MD5: md5Ring(tb, addrA6, "m")})
	} else {
		p = aoPair(tb, false, "k", "k")
	}
	for _, s := range []struct {
		from, to *end
		f        segment.Flags
		opts     [][]byte
	}{
		{p.a, p.b, segment.SYN, [][]byte{mssOpt}},
		{p.b, p.a, segment.SYN | segment.ACK, [][]byte{mssOpt}},
		{p.a, p.b, segment.ACK, nil},
	} {
		pkt := p.build(s.from, s.to, s.f, nil, s.opts...)
		wire, _, err := p.carry(s.from, s.to, pkt)
		if err != nil {
			tb.Fatal(err)
		}
		if s.from == p.a {
			signed, stack = append(signed, wire), append(stack, pkt)
		}
	}
	// Signed by A, not delivered yet: data, data with TS and SACK, FIN, RST.
	for _, s := range []struct {
		f    segment.Flags
		pay  []byte
		opts [][]byte
	}{
		{segment.ACK | segment.PSH, payload, nil},
		{segment.ACK, nil, [][]byte{tsOpt, sack3}},
		{segment.ACK | segment.FIN, nil, nil},
		{segment.RST, nil, nil},
	} {
		pkt := p.build(p.a, p.b, s.f, s.pay, s.opts...)
		wire, err := p.a.l.Outbound(nil, pkt)
		if err != nil {
			tb.Fatal(err)
		}
		if s.f.Has(segment.RST) { // the RST freed A's connection: track it again
			p.a.l.Close()
			l, _ := New(p.a.l.cfg)
			p.a.l = l
			tb.Cleanup(l.Close)
		}
		signed, stack = append(signed, wire), append(stack, pkt)
	}
	return p, signed, stack
}

// covered is the part of a segment its MAC covers, as a comparable
// string: addresses, TCP header with the checksum zeroed (only the fixed
// 20 bytes for MD5, which leaves options uncovered), payload.
func covered(t *testing.T, pkt []byte, md5 bool) (string, bool) {
	s, err := segment.ParsePacket(pkt)
	if err != nil {
		return "", false
	}
	h := slices.Clone([]byte(s.Header))
	segment.TCP(h).SetChecksum(0)
	if md5 {
		h = h[:segment.TCPMinimumSize]
	}
	return s.Src.String() + s.Dst.String() + string(h) + string(s.Payload), true
}

// FuzzLayer feeds arbitrary packets to the layers of an established
// connection. mode bit 0: the packet is A's stack's, through A's Outbound
// and then B's Inbound; else it arrives on the wire at B. mode bit 1:
// MD5 over IPv6 instead of TCP-AO over IPv4. Properties: no panic; B
// delivers a covered peer's TCP segment only if A signed exactly that
// segment (what the MAC covers is one of A's signed segments); what A's
// Outbound signs, B verifies, with the payload intact; an uncovered
// peer's packet comes back untouched.
func FuzzLayer(f *testing.F) {
	for _, md5 := range []bool{false, true} {
		_, signed, stack := fuzzSetup(f, md5)
		m := byte(0)
		if md5 {
			m = 2
		}
		for i := range signed {
			f.Add(signed[i], m)
			f.Add(stack[i], m|1)
		}
	}
	f.Add([]byte{0x45, 0, 0, 20}, byte(0))
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		md5 := mode&2 != 0
		p, signed, _ := fuzzSetup(t, md5)
		legit := map[string]bool{}
		for _, w := range signed {
			k, _ := covered(t, w, md5)
			legit[k] = true
		}
		in := slices.Clone(data)
		if mode&1 != 0 {
			out, err := p.a.l.Outbound(nil, in)
			if !bytes.Equal(in, data) {
				t.Fatal("Outbound changed its input")
			}
			if err != nil {
				return
			}
			if same(out, in) {
				if s, err := segment.ParsePacket(out); err == nil && p.a.l.cover(s.Dst) != 0 {
					t.Fatalf("a covered peer's segment passed unsigned: %x", out)
				}
				return
			}
			k, ok := covered(t, out, md5)
			if !ok {
				t.Fatalf("Outbound produced an unparsable packet %x", out)
			}
			legit[k] = true
			s, _ := segment.ParsePacket(in)
			got, err := p.b.l.Inbound(nil, out)
			if err != nil {
				t.Fatalf("B refuses what A signed: %v\nstack %x\nwire %x", err, in, out)
			}
			if g, _ := segment.ParsePacket(got); !bytes.Equal(g.Payload, s.Payload) {
				t.Fatalf("payload changed: %x -> %x", s.Payload, g.Payload)
			}
			in = out
		}
		wire := slices.Clone(in)
		got, err := p.b.l.Inbound(nil, wire)
		if !bytes.Equal(wire, in) {
			t.Fatal("Inbound changed its input")
		}
		if err != nil {
			return
		}
		s, perr := segment.ParsePacket(got)
		if perr != nil || p.b.l.cover(s.Src) == 0 {
			if !same(got, wire) {
				t.Fatal("an uncovered or non-TCP packet was copied, not passed")
			}
			return
		}
		if k, _ := covered(t, wire, md5); !legit[k] {
			t.Fatalf("B delivered a segment of A that A never signed:\n%x", wire)
		}
		if s.Auth.HasAO() || s.Auth.HasMD5() {
			t.Fatalf("delivered with the option: %x", got)
		}
	})
}

// same reports whether a and b are the same bytes in memory.
func same(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
