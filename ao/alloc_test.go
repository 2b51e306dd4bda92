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
// allocates only when a traffic key is derived).
var allocAlgs = []string{"hmac(sha1)", "hmac(sha256)", "cmac(aes128)", "hmac(rmd160)", "hmac-sha256-128", "kmac256-128"}

func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector (sync.Pool drops items at random)")
	}
	cli, srv := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	for _, alg := range allocAlgs {
		cring, sring := NewKeyring(nil), NewKeyring(nil)
		key := allocKey(alg)
		m, err := cring.Add(keys.AO{Peer: netip.PrefixFrom(srv.Addr(), 32), SendID: 1, RecvID: 2, Algorithm: alg, Key: key})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sring.Add(keys.AO{Peer: netip.PrefixFrom(cli.Addr(), 32), SendID: 2, RecvID: 1, Algorithm: alg, Key: key}); err != nil {
			t.Fatal(err)
		}
		var c, s Conn
		st := Endpoint{LocalISN: 100, RemoteISN: 200, SendSeq: 101, RecvSeq: 201, CurrentSendID: 1, RNextRecvID: 2}
		if err := restore(&c, cring, Endpoint{Local: cli, Remote: srv}, Policy{}, st); err != nil {
			t.Fatal(err)
		}
		st = Endpoint{LocalISN: 200, RemoteISN: 100, SendSeq: 201, RecvSeq: 101, CurrentSendID: 2, RNextRecvID: 1}
		if err := restore(&s, sring, Endpoint{Local: srv, Remote: cli}, Policy{}, st); err != nil {
			t.Fatal(err)
		}
		opts := testOption(nil, 0, 0, m.MACLen())
		hdr := make([]byte, 20+len(opts))
		copy(hdr[20:], opts)
		hdr[12] = byte(len(hdr) / 4 << 4)
		hdr[13] = byte(segment.ACK)
		tcp := append(hdr, make([]byte, 1448)...) // header and payload contiguous
		seq := uint32(101)
		round := func() {
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
		round() // derive the traffic keys
		if n := testing.AllocsPerRun(100, round); n != 0 {
			t.Errorf("%s: %v allocs per Sign+Verify", alg, n)
		}
	}
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
		opts := testOption(nil, 0, 0, m.MACLen())
		hdr := make([]byte, 20+len(opts))
		copy(hdr[20:], opts)
		hdr[12] = byte(len(hdr) / 4 << 4)
		hdr[13] = byte(segment.ACK | segment.RST)
		tcp := append(hdr, make([]byte, 100)...)
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
