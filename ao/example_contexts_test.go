package ao_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/sigpool"
)

// Under the default Policy a connection's segments take a pool shard's
// context until a direction has carried 64 of them; the busy direction
// then keeps one leased from the pool, and Close gives it back.
// ContextsPerSegment never leases, ContextsLeased from the first segment.
func ExamplePolicy_contexts() {
	pool, _ := sigpool.New(sigpool.Config{})
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	cring, sring := ao.NewKeyring(pool), ao.NewKeyring(pool)
	cring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: []byte("k")})
	sring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("k")})
	var c, s ao.Conn
	c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 1000,
		Established: true, RemoteISN: 5000, CurrentSendID: 1, RNextRecvID: 2}, ao.Policy{})
	s.Init(sring, ao.Endpoint{Local: server, Remote: client, LocalISN: 5000,
		Established: true, RemoteISN: 1000, CurrentSendID: 2, RNextRecvID: 1}, ao.Policy{})

	for i := 1; i <= 64; i++ {
		seg, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1000+uint32(i), 5001, segment.ACK, 12))
		if err := c.Sign(&seg); err != nil {
			panic(err)
		}
		if err := s.Verify(&seg); err != nil {
			panic(err)
		}
		if i == 1 || i == 63 || i == 64 {
			fmt.Printf("after %d segments: %d contexts on lease\n", i, pool.Leased())
		}
	}
	c.Close()
	s.Close()
	fmt.Printf("after Close: %d contexts on lease\n", pool.Leased())
	// Output:
	// after 1 segments: 0 contexts on lease
	// after 63 segments: 0 contexts on lease
	// after 64 segments: 2 contexts on lease
	// after Close: 0 contexts on lease
}
