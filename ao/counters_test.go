package ao

import (
	"net/netip"
	"sync"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// TestMKTGoodAcrossConns checks the MKT's good counter, which its
// connections keep per lane entry: the sum over two connections that
// share the MKT, read while they verify, kept when a connection closes
// and is set up again.
func TestMKTGoodAcrossConns(t *testing.T) {
	cli, srv := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	cring, sring := NewKeyring(nil), NewKeyring(nil)
	if _, err := cring.Add(keys.AO{Peer: netip.PrefixFrom(srv.Addr(), 32), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	sm, err := sring.Add(keys.AO{Peer: netip.PrefixFrom(cli.Addr(), 32), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	var c Conn
	s := make([]Conn, 2)
	setup := func(i int) {
		st := Endpoint{LocalISN: 100, RemoteISN: 200, SendSeq: 101, RecvSeq: 201, CurrentSendID: 1, RNextRecvID: 2}
		if err := restore(&c, cring, Endpoint{Local: cli, Remote: srv}, Policy{}, st); err != nil {
			t.Fatal(err)
		}
		st = Endpoint{LocalISN: 200, RemoteISN: 100, SendSeq: 201, RecvSeq: 101, CurrentSendID: 2, RNextRecvID: 1}
		if err := restore(&s[i], sring, Endpoint{Local: srv, Remote: cli}, Policy{}, st); err != nil {
			t.Fatal(err)
		}
	}
	hdr := make([]byte, 20, 40)
	hdr = testOption(hdr, 0, 0, keys.DefaultMACLen)
	hdr[12] = byte(len(hdr) / 4 << 4)
	hdr[13] = byte(segment.ACK)
	seg, err := segment.FromTCP(cli.Addr(), srv.Addr(), hdr)
	if err != nil {
		t.Fatal(err)
	}
	setup(0)
	if err := c.Sign(&seg); err != nil {
		t.Fatal(err)
	}
	setup(1)
	want := uint64(0)
	verify := func(i, n int) {
		for range n {
			if err := s[i].Verify(&seg); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(when string) {
		t.Helper()
		if good, _ := sm.Counters(); good != want {
			t.Errorf("%s: MKT good %d, want %d", when, good, want)
		}
	}
	var wg sync.WaitGroup
	for i := range s {
		wg.Go(func() { verify(i, 500) })
	}
	for range 50 {
		sm.Counters() // concurrent with the verifications
	}
	wg.Wait()
	want += 1000
	check("two connections")
	s[0].Close()
	check("one closed")
	setup(0)
	verify(0, 3)
	want += 3
	check("set up again")
	s[0].Close()
	s[1].Close()
	check("both closed")
}
