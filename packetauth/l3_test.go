package packetauth

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// boundAO returns a keyring with one hmac(sha1) MKT for peer bound to L3
// domain l3 (keys.AO.HasIfIndex), or unbound for l3 < 0.
func boundAO(t testing.TB, peer netip.Addr, send, recv uint8, key string, l3 int) *ao.Keyring {
	t.Helper()
	c := keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: send, RecvID: recv,
		Algorithm: "hmac(sha1)", Key: []byte(key), MACLen: 12}
	if l3 >= 0 {
		c.IfIndex, c.HasIfIndex = l3, true
	}
	r := ao.NewKeyring(nil)
	if _, err := r.Add(c); err != nil {
		t.Fatal(err)
	}
	return r
}

// boundMD5 is boundAO for a TCP-MD5 key.
func boundMD5(t testing.TB, peer netip.Addr, key string, l3 int) *md5sig.Keyring {
	t.Helper()
	r := md5sig.NewKeyring(nil)
	if _, err := r.Add(keys.MD5{Peer: netip.PrefixFrom(peer, peer.BitLen()), Key: []byte(key), IfIndex: l3, HasIfIndex: true}); err != nil {
		t.Fatal(err)
	}
	return r
}

// carryL3 is carry with B's side in L3 domain l3 (A's in its default):
// A's Outbound, then B's InboundL3, or B's OutboundL3, then A's Inbound.
func (p *pair) carryL3(from, to *end, pkt []byte, l3 int) (wire, got []byte, err error) {
	p.t.Helper()
	out, in := from.l.Outbound, to.l.Inbound
	if from == p.b {
		out = func(dst, pkt []byte) ([]byte, error) { return p.b.l.OutboundL3(dst, pkt, l3) }
	} else {
		in = func(dst, pkt []byte) ([]byte, error) { return p.b.l.InboundL3(dst, pkt, l3) }
	}
	if wire, err = out(make([]byte, 0, len(pkt)+40), pkt); err != nil {
		return nil, nil, err
	}
	if got, err = in(nil, wire); err != nil {
		return wire, nil, err
	}
	s, err := segment.ParsePacket(got)
	if err != nil {
		p.t.Fatalf("delivered packet does not parse: %v", err)
	}
	n := uint32(len(s.Payload()))
	if f := s.Header().Flags(); f.Has(segment.SYN) || f.Has(segment.FIN) {
		n++
	}
	to.ack, from.seq = s.Header().Seq()+n, s.Header().Seq()+n
	return wire, got, nil
}

func (p *pair) sendL3(from, to *end, l3 int, f segment.Flags, payload []byte, opts ...[]byte) (wire, got []byte) {
	p.t.Helper()
	wire, got, err := p.carryL3(from, to, p.build(from, to, f, payload, opts...), l3)
	if err != nil {
		p.t.Fatalf("%v from %v in domain %d: %v", f, from.ap, l3, err)
	}
	return wire, got
}

func (p *pair) handshakeL3(l3 int) {
	p.t.Helper()
	p.sendL3(p.a, p.b, l3, segment.SYN, nil, []byte{2, 4, 0x05, 0xb4})
	p.sendL3(p.b, p.a, l3, segment.SYN|segment.ACK, nil, []byte{2, 4, 0x05, 0xb4})
	p.sendL3(p.a, p.b, l3, segment.ACK, nil)
}

// TestL3BoundAO: B's MKT for A is bound to L3 domain 7. In domain 7 B's
// layer enforces it (a handshake and data verify both ways; A's unsigned
// segment is dropped), in domain 9 and through the domain-less Inbound
// (the default domain) it does not cover A, as Linux's key lookup for a
// socket of another VRF finds no such key.
func TestL3BoundAO(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		a, b := addrA4, addrB4
		if v6 {
			a, b = addrA6, addrB6
		}
		p := newPair(t, v6, Config{AO: aoRing(t, b, 12, mkt{1, 2, "k"})}, Config{AO: boundAO(t, a, 2, 1, "k", 7)})
		p.handshakeL3(7)
		_, got := p.sendL3(p.a, p.b, 7, segment.ACK|segment.PSH, []byte("in the VRF"))
		if s, _ := segment.ParsePacket(got); string(s.Payload()) != "in the VRF" {
			t.Fatalf("v6=%v: payload %q", v6, s.Payload())
		}
		wire, _ := p.sendL3(p.b, p.a, 7, segment.ACK|segment.PSH, []byte("reply"))
		if s, _ := segment.ParsePacket(wire); s.Auth().AO == 0 {
			t.Fatalf("v6=%v: B's segment in domain 7 left unsigned", v6)
		}
		ci, ok := info(p.b)
		if !ok || ci.L3Index != 7 || ci.Kind != KindAO || ci.State != StateEstablished {
			t.Fatalf("v6=%v: B's connection %+v (tracked %v), want TCP-AO established in domain 7", v6, ci, ok)
		}
		// A's stack, unsigned, straight to B in domain 7: dropped.
		unsigned := p.build(p.a, p.b, segment.ACK|segment.PSH, []byte("forged"))
		if _, err := p.b.l.InboundL3(nil, unsigned, 7); !errors.Is(err, ErrUnsigned) {
			t.Fatalf("v6=%v: unsigned segment in domain 7: %v, want ErrUnsigned", v6, err)
		}
		syn := p.build(p.a, p.b, segment.SYN, nil)
		if _, err := p.b.l.InboundL3(nil, syn, 7); !errors.Is(err, ErrUnsigned) {
			t.Fatalf("v6=%v: unsigned SYN in domain 7: %v, want ErrUnsigned", v6, err)
		}
		// The MKT bound to 7 does not cover A in domain 9, nor in the
		// default domain: A's packets pass there untouched, and B's stack
		// sends unsigned.
		for _, in := range []func([]byte, []byte) ([]byte, error){
			func(dst, pkt []byte) ([]byte, error) { return p.b.l.InboundL3(dst, pkt, 9) },
			p.b.l.Inbound,
		} {
			for _, pkt := range [][]byte{unsigned, syn} {
				got, err := in(nil, pkt)
				if err != nil || !same(got, pkt) {
					t.Fatalf("v6=%v: A's packet outside domain 7: %v, passed untouched %v", v6, err, same(got, pkt))
				}
			}
		}
		out := p.build(p.b, p.a, segment.ACK, nil)
		if got, err := p.b.l.OutboundL3(nil, out, 9); err != nil || !same(got, out) {
			t.Fatalf("v6=%v: B's packet in domain 9: %v, passed untouched %v", v6, err, same(got, out))
		}
	}
}

// TestL3TwoDomains: the same addresses and ports in two L3 domains are
// two connections, each verified with the MKT bound to its own domain: a
// segment signed with domain 8's MKT is refused in domain 7.
func TestL3TwoDomains(t *testing.T) {
	ring := boundAO(t, addrA4, 2, 1, "seven", 7)
	if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(addrA4, 32), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)",
		Key: []byte("eight"), MACLen: 12, IfIndex: 8, HasIfIndex: true}); err != nil {
		t.Fatal(err)
	}
	p7 := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "seven"})}, Config{AO: ring})
	p8 := &pair{t: t, a: &end{l: mustLayer(t, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "eight"})}), ap: p7.a.ap, seq: 0x30000000},
		b: &end{l: p7.b.l, ap: p7.b.ap, seq: 0x40000000}}
	p7.handshakeL3(7)
	p8.handshakeL3(8)
	domains := map[int]bool{}
	for ci := range p7.b.l.Conns {
		domains[ci.L3Index] = ci.State == StateEstablished
	}
	if len(domains) != 2 || !domains[7] || !domains[8] {
		t.Fatalf("B's connections by domain (established): %v, want 7 and 8", domains)
	}
	p7.sendL3(p7.a, p7.b, 7, segment.ACK|segment.PSH, []byte("seven"))
	p8.sendL3(p8.a, p8.b, 8, segment.ACK|segment.PSH, []byte("eight"))
	// Domain 8's peer, signed with domain 8's MKT, delivered in domain 7.
	wire, err := p8.a.l.Outbound(nil, p8.build(p8.a, p8.b, segment.ACK|segment.PSH, []byte("crossed")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p7.b.l.InboundL3(nil, wire, 7); !errors.Is(err, ao.ErrBadMAC) {
		t.Fatalf("domain 8's segment in domain 7: %v, want ao.ErrBadMAC", err)
	}
	if _, err := p7.b.l.InboundL3(nil, wire, 8); err != nil {
		t.Fatalf("domain 8's segment in domain 8: %v", err)
	}
}

func mustLayer(t testing.TB, c Config) *Layer {
	t.Helper()
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// TestL3BoundMD5: a TCP-MD5 key bound to domain 7 signs and verifies in
// domain 7 only; an unsigned segment is dropped there and passes in 9.
func TestL3BoundMD5(t *testing.T) {
	p := newPair(t, false, Config{MD5: md5Ring(t, addrB4, "m")}, Config{MD5: boundMD5(t, addrA4, "m", 7)})
	p.handshakeL3(7)
	p.sendL3(p.a, p.b, 7, segment.ACK|segment.PSH, []byte("md5 in the VRF"))
	wire, _ := p.sendL3(p.b, p.a, 7, segment.ACK, nil)
	if s, _ := segment.ParsePacket(wire); s.Auth().MD5 == 0 {
		t.Fatal("B's segment in domain 7 left unsigned")
	}
	unsigned := p.build(p.a, p.b, segment.ACK|segment.PSH, []byte("forged"))
	if _, err := p.b.l.InboundL3(nil, unsigned, 7); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("unsigned in domain 7: %v, want ErrUnsigned", err)
	}
	if got, err := p.b.l.InboundL3(nil, unsigned, 9); err != nil || !same(got, unsigned) {
		t.Fatalf("unsigned in domain 9: %v, untouched %v", err, same(got, unsigned))
	}
	out := p.build(p.b, p.a, segment.ACK, nil)
	if got, err := p.b.l.OutboundL3(nil, out, 9); err != nil || !same(got, out) {
		t.Fatalf("B's packet in domain 9: %v, untouched %v", err, same(got, out))
	}
}

// TestL3Range: a domain outside 0..MaxInt32 is refused, never taken for
// another; a nil layer says ErrConfig.
func TestL3Range(t *testing.T) {
	p := newPair(t, false, Config{MD5: md5Ring(t, addrB4, "m")}, Config{MD5: boundMD5(t, addrA4, "m", 7)})
	pkt := p.build(p.a, p.b, segment.SYN, nil)
	for _, l3 := range []int{-1, 1 << 31, -7} {
		if _, err := p.b.l.InboundL3(nil, pkt, l3); !errors.Is(err, ErrL3Index) {
			t.Errorf("InboundL3 domain %d: %v, want ErrL3Index", l3, err)
		}
		if _, err := p.b.l.OutboundL3(nil, pkt, l3); !errors.Is(err, ErrL3Index) {
			t.Errorf("OutboundL3 domain %d: %v, want ErrL3Index", l3, err)
		}
	}
	var l *Layer
	if _, err := l.InboundL3(nil, pkt, 7); !errors.Is(err, ErrConfig) {
		t.Errorf("nil layer: %v", err)
	}
	if _, err := l.OutboundL3(nil, pkt, 7); !errors.Is(err, ErrConfig) {
		t.Errorf("nil layer: %v", err)
	}
}

// TestL3ZeroAllocs: the per-domain paths allocate nothing once a
// connection is established, as the domain-less ones.
func TestL3ZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"})}, Config{AO: boundAO(t, addrA4, 2, 1, "k", 7)})
	p.handshakeL3(7)
	in, _ := p.sendL3(p.a, p.b, 7, segment.ACK|segment.PSH, make([]byte, 1448), tsOpt)
	out := p.build(p.b, p.a, segment.ACK|segment.PSH, make([]byte, 1448), tsOpt)
	dst := make([]byte, 0, 2048)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := p.b.l.OutboundL3(dst, out, 7); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("OutboundL3: %v allocs", n)
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := p.b.l.InboundL3(dst, in, 7); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("InboundL3: %v allocs", n)
	}
}

// TestL3ExportSeed: a connection of domain 7 is exported with its domain
// (not found in the default one), taken back by another layer into
// domain 7, where it carries on, and not into the default domain; a
// revoked one seeded into domain 7 drops its packets there and only there.
func TestL3ExportSeed(t *testing.T) {
	ringB := boundAO(t, addrA4, 2, 1, "k", 7)
	p := newPair(t, false, Config{AO: aoRing(t, addrB4, 12, mkt{1, 2, "k"})}, Config{AO: ringB})
	p.handshakeL3(7)
	p.sendL3(p.a, p.b, 7, segment.ACK|segment.PSH, []byte("before"))
	if _, ok := p.b.l.Export(p.b.ap, p.a.ap); ok {
		t.Fatal("Export found domain 7's connection in the default domain")
	}
	ep, ok := p.b.l.ExportL3(p.b.ap, p.a.ap, 7)
	if !ok || ep.L3Index != 7 {
		t.Fatalf("ExportL3: %+v %v, want domain 7", ep, ok)
	}
	b2 := mustLayer(t, Config{AO: ringB})
	if err := b2.Seed(ep); !errors.Is(err, ErrNotCovered) {
		t.Errorf("Seed into the default domain, where no MKT covers the peer: %v, want ErrNotCovered", err)
	}
	if err := b2.SeedL3(ep); err != nil {
		t.Fatal(err)
	}
	p.b.l = b2
	p.sendL3(p.a, p.b, 7, segment.ACK|segment.PSH, []byte("after the restart"))
	p.sendL3(p.b, p.a, 7, segment.ACK, nil)

	// Revoked in domain 7, no key anywhere: dropped in 7, passed in 0.
	empty := mustLayer(t, Config{AO: ao.NewKeyring(nil)})
	if err := empty.SeedRevokedL3(p.b.ap, p.a.ap, KindAO, 7); err != nil {
		t.Fatal(err)
	}
	pkt := p.build(p.a, p.b, segment.ACK|segment.PSH, []byte("x"))
	if _, err := empty.InboundL3(nil, pkt, 7); !errors.Is(err, ErrRevoked) {
		t.Errorf("revoked session's segment in domain 7: %v, want ErrRevoked", err)
	}
	if got, err := empty.Inbound(nil, pkt); err != nil || !same(got, pkt) {
		t.Errorf("the same addresses in the default domain: %v, want passed", err)
	}
	if err := empty.SeedRevokedL3(p.b.ap, p.a.ap, KindAO, -1); !errors.Is(err, ErrL3Index) {
		t.Errorf("SeedRevokedL3 domain -1: %v", err)
	}
}
