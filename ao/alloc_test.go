package ao

import (
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// TestSteadyStateAllocs: once a connection's traffic keys are derived,
// signing and verifying a segment allocate nothing, for every algorithm
// whose key schedule is allocation-free (HMAC; CMAC's crypto/aes schedule
// allocates only when a traffic key is derived), under every
// Policy.Contexts, counted after the adaptive default has taken its lease.
var allocAlgs = []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)", "hmac(rmd160)", "hmac-sha256-128", "kmac256-128"}

func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector (sync.Pool drops items at random)")
	}
	for _, alg := range allocAlgs {
		for _, mode := range []Contexts{ContextsAdaptive, ContextsPerSegment, ContextsLeased} {
			c, s, round := allocPair(t, alg, Policy{Contexts: mode})
			for range busySegments + 1 { // derive the traffic keys, take the adaptive lease
				round()
			}
			if n := testing.AllocsPerRun(100, round); n != 0 {
				t.Errorf("%s, contexts %d: %v allocs per Sign+Verify", alg, mode, n)
			}
			c.Close()
			s.Close()
		}
	}
}

// allocPair returns two established connections of alg under p and a
// round that signs a 1448-byte segment on one and verifies it on the
// other.
func allocPair(t *testing.T, alg string, p Policy) (c, s *Conn, round func()) {
	t.Helper()
	cli, srv := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	key := allocKey(alg)
	m, err := cring.Add(keys.AO{Peer: netip.PrefixFrom(srv.Addr(), 32), SendID: 1, RecvID: 2, Algorithm: alg, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sring.Add(keys.AO{Peer: netip.PrefixFrom(cli.Addr(), 32), SendID: 2, RecvID: 1, Algorithm: alg, Key: key}); err != nil {
		t.Fatal(err)
	}
	c, s = new(Conn), new(Conn)
	st := Endpoint{LocalISN: 100, RemoteISN: 200, SendSeq: 101, RecvSeq: 201, CurrentSendID: 1, RNextRecvID: 2}
	if err := restore(c, cring, Endpoint{Local: cli, Remote: srv}, p, st); err != nil {
		t.Fatal(err)
	}
	st = Endpoint{LocalISN: 200, RemoteISN: 100, SendSeq: 201, RecvSeq: 101, CurrentSendID: 2, RNextRecvID: 1}
	if err := restore(s, sring, Endpoint{Local: srv, Remote: cli}, p, st); err != nil {
		t.Fatal(err)
	}
	tcp := allocTCP(m.MACLen(), byte(segment.ACK), 1448)
	seq := uint32(101)
	round = func() {
		tcp[4], tcp[5], tcp[6], tcp[7] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
		seg, err := segment.FromTCP(cli.Addr(), srv.Addr(), tcp)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Sign(&seg); err != nil {
			t.Fatal(err)
		}
		if err := s.Verify(&seg); err != nil {
			t.Fatal(err)
		}
		seq += 1448
	}
	return c, s, round
}

// TestTrafficKeyAllocs: the way in without a connection derives once and
// then signs and verifies without allocating, a RST included.
func TestTrafficKeyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	cli, srv := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	for _, alg := range allocAlgs {
		ring := NewKeyring(nil)
		m, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(srv.Addr(), 32), SendID: 1, RecvID: 2, Algorithm: alg, Key: allocKey(alg)})
		if err != nil {
			t.Fatal(err)
		}
		tcp := allocTCP(m.MACLen(), byte(segment.ACK|segment.RST), 100)
		seg, err := segment.FromTCP(cli.Addr(), srv.Addr(), tcp)
		if err != nil {
			t.Fatal(err)
		}
		var k TrafficKey
		if err := k.Derive(m, ISNs{Src: 100, Dst: 200}, &seg); err != nil {
			t.Fatal(err)
		}
		round := func() {
			if err := k.Sign(&seg, 0, 2); err != nil {
				t.Fatal(err)
			}
			if err := k.Verify(&seg, 0); err != nil {
				t.Fatal(err)
			}
		}
		round()
		if n := testing.AllocsPerRun(100, round); n != 0 {
			t.Errorf("%s: %v allocs per TrafficKey Sign+Verify", alg, n)
		}
		k.Wipe()
	}
}

// allocKey is a master key alg takes: one byte, or 32 for the draft's
// algorithms.
func allocKey(alg string) []byte {
	if alg == "hmac-sha256-128" || alg == "kmac256-128" {
		return []byte("a master key of 32 bytes or more")
	}
	return []byte("k")
}

// allocTCP is a TCP header with flags and one TCP-AO option for a MAC of
// macLen bytes, and payload zero bytes after it, contiguous.
func allocTCP(macLen int, flags byte, payload int) []byte {
	opts := testOption(nil, 0, 0, macLen)
	hdr := make([]byte, 20+len(opts))
	copy(hdr[20:], opts)
	hdr[12] = byte(len(hdr) / 4 << 4)
	hdr[13] = flags
	return append(hdr, make([]byte, payload)...)
}
