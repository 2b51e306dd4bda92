package packetauth

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// fuzzProfile is what a fuzzed connection runs.
type fuzzProfile uint8

const (
	fuzzAO    fuzzProfile = iota // TCP-AO hmac(sha1), maclen 12, over IPv4
	fuzzMD5                      // TCP-MD5 over IPv6
	fuzzDraft                    // TCP-AO kmac256-128 (a 20-byte option, a 32-byte key) over IPv4
	fuzzProfiles
)

// fuzzSetup returns an established pair of profile prof, the wire
// packets A signed (the only segments of A that B may ever deliver: any
// other would need a forged MAC) and the stack packets they were signed
// from.
func fuzzSetup(tb testing.TB, prof fuzzProfile) (p *pair, signed, stack [][]byte) {
	switch prof {
	case fuzzMD5:
		p = newPair(tb, true, Config{MD5: md5Ring(tb, addrB6, "m")}, Config{MD5: md5Ring(tb, addrA6, "m")})
	case fuzzDraft:
		p = newPair(tb, false, Config{AO: draftRing(tb, addrB4, "kmac256-128", 1, 2, 7)}, Config{AO: draftRing(tb, addrA4, "kmac256-128", 2, 1, 7)})
	default:
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

// macOf verifies wire, a segment from A that B delivered, without the
// layer: MD5 with a keyring of its own; TCP-AO with an ao.TrafficKey of
// the MKT its KeyID names on a keyring of its own, the connection's ISNs
// (a SYN's own sequence number) and the SNE of its sequence number
// against B's receive basis st.
func macOf(t *testing.T, p *pair, wire []byte, prof fuzzProfile, st ao.Endpoint) error {
	s, err := segment.ParsePacket(wire)
	if err != nil {
		return err
	}
	if prof == fuzzMD5 {
		return md5Ring(t, addrA6, "m").Verify(&s, 0)
	}
	if !s.Auth().HasAO() {
		return ao.ErrNoOption
	}
	ring := aoRing(t, addrA4, 12, mkt{2, 1, "k"})
	if prof == fuzzDraft {
		ring = draftRing(t, addrA4, "kmac256-128", 2, 1, 7)
	}
	m := ring.LookupRecv(s.Src(), s.Header()[s.Auth().AO+2], 0)
	if m == nil {
		return ao.ErrKeyNotFound
	}
	h := s.Header()
	isns, sne := ao.ISNs{Src: fuzzISNA, Dst: fuzzISNB}, ao.ComputeSNE(st.RecvSNE, st.RecvSeq, h.Seq())
	if h.Flags().Has(segment.SYN) && !h.Flags().Has(segment.ACK) {
		isns, sne = ao.ISNs{Src: h.Seq()}, 0
	}
	var k ao.TrafficKey
	defer k.Wipe()
	if err := k.Derive(m, isns, &s); err != nil {
		return err
	}
	return k.Verify(&s, sne)
}

// The ISNs of fuzzSetup's connection: A's and B's toy stacks start there.
const fuzzISNA, fuzzISNB = 0x10000000, 0x20000000

// FuzzLayer feeds arbitrary packets to the layers of an established
// connection. mode bit 0: the packet is A's stack's, through A's Outbound
// and then B's Inbound; else it arrives on the wire at B. mode>>1 (mod
// 3): TCP-AO hmac(sha1) over IPv4, MD5 over IPv6, or TCP-AO kmac256-128
// (the draft's 20-byte option) over IPv4. Properties: no panic; B
// delivers a covered peer's TCP segment only if its MAC verifies under
// A's key for the connection, checked apart from the layer (ao's
// per-segment core with the connection's ISNs and SNE, or a keyring of
// its own for MD5); what A's Outbound signs, B verifies, with the payload
// intact; an uncovered peer's packet comes back untouched.
func FuzzLayer(f *testing.F) {
	for prof := range fuzzProfiles {
		_, signed, stack := fuzzSetup(f, prof)
		m := byte(prof) << 1
		for i := range signed {
			f.Add(signed[i], m)
			f.Add(stack[i], m|1)
		}
	}
	f.Add([]byte{0x45, 0, 0, 20}, byte(0))
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		prof := fuzzProfile(mode>>1) % fuzzProfiles
		p, _, _ := fuzzSetup(t, prof)
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
				if s, err := segment.ParsePacket(out); err == nil && p.a.l.cover(s.Dst(), 0) != 0 {
					t.Fatalf("a covered peer's segment passed unsigned: %x", out)
				}
				return
			}
			if _, err := segment.ParsePacket(out); err != nil {
				t.Fatalf("Outbound produced an unparsable packet %x", out)
			}
			s, _ := segment.ParsePacket(in)
			got, err := p.b.l.Inbound(nil, out)
			if err != nil {
				t.Fatalf("B refuses what A signed: %v\nstack %x\nwire %x", err, in, out)
			}
			if g, _ := segment.ParsePacket(got); !bytes.Equal(g.Payload(), s.Payload()) {
				t.Fatalf("payload changed: %x -> %x", s.Payload(), g.Payload())
			}
			in = out
		}
		wire := slices.Clone(in)
		var st ao.Endpoint // B's receive SNE and its basis, before the segment
		if c, ok := p.b.l.Conn(p.b.ap, p.a.ap); ok {
			st = c.Endpoint()
		}
		got, err := p.b.l.Inbound(nil, wire)
		if !bytes.Equal(wire, in) {
			t.Fatal("Inbound changed its input")
		}
		if err != nil {
			return
		}
		s, perr := segment.ParsePacket(got)
		if perr != nil || p.b.l.cover(s.Src(), 0) == 0 {
			if !same(got, wire) {
				t.Fatal("an uncovered or non-TCP packet was copied, not passed")
			}
			return
		}
		if err := macOf(t, p, wire, prof, st); err != nil {
			t.Fatalf("B delivered a segment of A whose MAC does not verify (%v):\n%x", err, wire)
		}
		if s.Auth().HasAO() || s.Auth().HasMD5() {
			t.Fatalf("delivered with the option: %x", got)
		}
	})
}

// same reports whether a and b are the same bytes in memory.
func same(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
