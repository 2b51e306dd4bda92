package packetauth

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// draftRing returns a keyring with one MKT of a draft algorithm for peer:
// a 32-byte key, maclen left to the algorithm (16).
func draftRing(t testing.TB, peer netip.Addr, alg string, send, recv uint8, key byte) *ao.Keyring {
	t.Helper()
	r := ao.NewKeyring(nil)
	if _, err := r.Add(keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: send, RecvID: recv,
		Algorithm: alg, Key: bytes.Repeat([]byte{key}, 32)}); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDraftAlgorithms: the packet layer runs a connection with each of
// draft-ietf-tcpm-tcp-ao-algs-07's algorithms, IPv4 and IPv6: netstack's
// SYN still fits beside the 20-byte option, data goes both ways and
// arrives whole, and under a wrong key nothing is delivered and the drop
// is counted.
func TestDraftAlgorithms(t *testing.T) {
	for _, alg := range []string{"HMAC-SHA256-128", "KMAC256-128"} {
		for _, v6 := range []bool{false, true} {
			a, b := addrA4, addrB4
			if v6 {
				a, b = addrA6, addrB6
			}
			p := newPair(t, v6, Config{AO: draftRing(t, b, alg, 1, 2, 7)}, Config{AO: draftRing(t, a, alg, 2, 1, 7)})
			wire, _ := p.send(p.a, p.b, segment.SYN, nil, netstackSYN)
			if o := options(t, wire); len(o) != 40 || !bytes.Contains(o, []byte{segment.OptionKindAO, 20, 1, 2}) {
				t.Fatalf("%s: SYN options %x", alg, o)
			}
			p.send(p.b, p.a, segment.SYN|segment.ACK, nil, mssOpt)
			p.send(p.a, p.b, segment.ACK, nil)
			for i, dir := range [][2]*end{{p.a, p.b}, {p.b, p.a}} {
				msg := bytes.Repeat([]byte{byte(i + 1)}, 1000)
				wire, got := p.send(dir[0], dir[1], segment.ACK|segment.PSH, msg)
				s, _ := segment.ParsePacket(got)
				if !bytes.Equal(s.Payload(), msg) {
					t.Fatalf("%s: payload not delivered whole", alg)
				}
				ws, _ := segment.ParsePacket(wire)
				if ws.Auth().AOLen != 20 {
					t.Fatalf("%s: option of %d bytes on the wire", alg, ws.Auth().AOLen)
				}
			}
			if c := p.b.l.Counters(); c.Verified < 3 || c.Dropped.BadMAC != 0 {
				t.Fatalf("%s: B %+v", alg, c)
			}

			bad := newPair(t, v6, Config{AO: draftRing(t, b, alg, 1, 2, 7)}, Config{AO: draftRing(t, a, alg, 2, 1, 8)})
			if _, got, err := bad.carry(bad.a, bad.b, bad.build(bad.a, bad.b, segment.SYN, nil, mssOpt)); !errors.Is(err, ao.ErrBadMAC) || got != nil {
				t.Fatalf("%s: SYN under a wrong key: %v", alg, err)
			}
			if c := bad.b.l.Counters(); c.Dropped.BadMAC != 1 || c.Verified != 0 {
				t.Fatalf("%s: wrong key: %+v", alg, c)
			}
		}
	}
}
