package packetauth

import (
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// Documentation addresses for the two ends of the tests' connections.
var (
	addrA4, addrB4 = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.2")
	addrA6, addrB6 = netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:1::2")
)

// end is one side of a test connection: its layer and a toy stack's
// sequence numbers.
type end struct {
	l        *Layer
	ap       netip.AddrPort
	seq, ack uint32
}

type pair struct {
	t    testing.TB
	a, b *end
}

// aoRing returns a keyring with one MKT per (sendID, recvID, key) for peer.
func aoRing(t testing.TB, peer netip.Addr, maclen int, mkts ...struct {
	send, recv uint8
	key        string
}) *ao.Keyring {
	t.Helper()
	r := ao.NewKeyring(nil)
	for _, m := range mkts {
		if _, err := r.Add(keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: m.send, RecvID: m.recv,
			Algorithm: "hmac(sha1)", Key: []byte(m.key), MACLen: maclen}); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// aoRingAlg returns a keyring with one MKT of algorithm alg for peer.
func aoRingAlg(t testing.TB, peer netip.Addr, alg string, send, recv uint8) *ao.Keyring {
	t.Helper()
	r := ao.NewKeyring(nil)
	if _, err := r.Add(keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: send, RecvID: recv,
		Algorithm: alg, Key: []byte("sixteen byte key"), MACLen: 12}); err != nil {
		t.Fatal(err)
	}
	return r
}

// aoRingMAC returns a keyring with MKT 1/2 for peer, MACs of maclen bytes.
func aoRingMAC(t testing.TB, peer netip.Addr, maclen int) *ao.Keyring {
	t.Helper()
	r := ao.NewKeyring(nil)
	if _, err := r.Add(keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: 1, RecvID: 1,
		Algorithm: "hmac(sha256)", Key: []byte("k"), MACLen: maclen}); err != nil {
		t.Fatal(err)
	}
	return r
}

type mkt = struct {
	send, recv uint8
	key        string
}

func md5Ring(t testing.TB, peer netip.Addr, key string) *md5sig.Keyring {
	t.Helper()
	r := md5sig.NewKeyring(nil)
	if _, err := r.Add(keys.MD5{Peer: netip.PrefixFrom(peer, peer.BitLen()), Key: []byte(key)}); err != nil {
		t.Fatal(err)
	}
	return r
}

// newPair returns ends A (client, port 40000) and B (server, port 179)
// with layers of configs ca and cb, over IPv6 if v6.
func newPair(t testing.TB, v6 bool, ca, cb Config) *pair {
	t.Helper()
	a, b := addrA4, addrB4
	if v6 {
		a, b = addrA6, addrB6
	}
	la, err := New(ca)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := New(cb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { la.Close(); lb.Close() })
	return &pair{t: t, a: &end{l: la, ap: netip.AddrPortFrom(a, 40000), seq: 0x10000000},
		b: &end{l: lb, ap: netip.AddrPortFrom(b, 179), seq: 0x20000000}}
}

// aoPair is newPair with hmac(sha1) MKTs 1/2 on A and 2/1 on B, over key.
func aoPair(t testing.TB, v6 bool, keyA, keyB string) *pair {
	a, b := addrA4, addrB4
	if v6 {
		a, b = addrA6, addrB6
	}
	return newPair(t, v6, Config{AO: aoRing(t, b, 12, mkt{1, 2, keyA})}, Config{AO: aoRing(t, a, 12, mkt{2, 1, keyB})})
}

// build returns the packet from's toy stack sends to to: the flags, the
// payload and the options given, ACK number to's last seen, checksums set.
func (p *pair) build(from, to *end, f segment.Flags, payload []byte, opts ...[]byte) []byte {
	p.t.Helper()
	fl := segment.Fields{SrcPort: from.ap.Port(), DstPort: to.ap.Port(), Seq: from.seq, Flags: f, Window: 65535, Options: opts}
	if f.Has(segment.ACK) {
		fl.Ack = from.ack
	}
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: from.ap.Addr(), Dst: to.ap.Addr()}, fl, payload)
	if err != nil {
		p.t.Fatal(err)
	}
	return pkt
}

// carry puts pkt through from's Outbound, then to's Inbound, and returns
// what went on the wire and what to's stack got; on success the toy
// stacks' sequence numbers move on.
func (p *pair) carry(from, to *end, pkt []byte) (wire, got []byte, err error) {
	p.t.Helper()
	wire, err = from.l.Outbound(make([]byte, 0, len(pkt)+40), pkt)
	if err != nil {
		return nil, nil, err
	}
	got, err = to.l.Inbound(nil, wire)
	if err != nil {
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
	to.ack = s.Header().Seq() + n
	from.seq = s.Header().Seq() + n
	return wire, got, nil
}

// send builds and carries a segment; it fails the test on error.
func (p *pair) send(from, to *end, f segment.Flags, payload []byte, opts ...[]byte) (wire, got []byte) {
	p.t.Helper()
	wire, got, err := p.carry(from, to, p.build(from, to, f, payload, opts...))
	if err != nil {
		p.t.Fatalf("%v from %v: %v", f, from.ap, err)
	}
	return wire, got
}

// handshake runs SYN, SYN-ACK, ACK from A to B.
func (p *pair) handshake() {
	p.t.Helper()
	p.send(p.a, p.b, segment.SYN, nil, []byte{2, 4, 0x05, 0xb4})
	p.send(p.b, p.a, segment.SYN|segment.ACK, nil, []byte{2, 4, 0x05, 0xb4})
	p.send(p.a, p.b, segment.ACK, nil)
}

// info returns the ConnInfo of e's connection, or false.
func info(e *end) (ConnInfo, bool) {
	for ci := range e.l.Conns {
		if ci.Local == e.ap {
			return ci, true
		}
	}
	return ConnInfo{}, false
}
