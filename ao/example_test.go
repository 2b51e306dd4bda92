package ao_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// tcpHeader lays out a TCP header with a TCP-AO option, as a stack would.
func tcpHeader(sport, dport uint16, seq, ack uint32, flags segment.Flags, maclen int) []byte {
	return segment.AppendTCP(nil, segment.Fields{SrcPort: sport, DstPort: dport, Seq: seq, Ack: ack, Flags: flags, Window: 65535},
		ao.AppendOption(nil, maclen))
}

// A client and a server stack sign and verify the first segments of a
// connection: SYN, SYN-ACK carrying a greeting, and data.
func Example() {
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	mkt := func(peer netip.Addr, send, recv uint8) ao.Config {
		return ao.Config{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
			Algorithm: "hmac(sha256)", Key: []byte("bgp-session-secret")}
	}
	cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
	if _, err := cring.Add(mkt(server.Addr(), 1, 2)); err != nil {
		panic(err)
	}
	if _, err := sring.Add(mkt(client.Addr(), 2, 1)); err != nil {
		panic(err)
	}

	var c, s ao.Conn
	if err := c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 1000}, ao.Policy{}); err != nil {
		panic(err)
	}
	syn, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1000, 0, segment.SYN, 12))
	fmt.Println("sign SYN:", c.Sign(&syn))

	l := ao.NewListener(sring, ao.Policy{}, 0)
	signed, err := l.Accept(&syn, 5000, &s)
	fmt.Println("accept SYN:", signed, err)

	greeting := []byte("220 ready\r\n")
	synack, _ := segment.FromTCP(server.Addr(), client.Addr(), tcpHeader(179, 40000, 5000, 1001, segment.SYN|segment.ACK, 12), greeting)
	fmt.Println("sign SYN-ACK with payload:", s.Sign(&synack))
	fmt.Println("verify SYN-ACK:", c.Verify(&synack))

	data, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1001, 5012, segment.ACK|segment.PSH, 12), []byte("OPEN"))
	fmt.Println("sign data:", c.Sign(&data), "verify:", s.Verify(&data))
	data.Frags[0][0] ^= 1 // tampered in flight
	fmt.Println("tampered:", s.Verify(&data))
	fmt.Printf("server counters: %+v\n", s.Counters())
	// Output:
	// sign SYN: <nil>
	// accept SYN: true <nil>
	// sign SYN-ACK with payload: <nil>
	// verify SYN-ACK: <nil>
	// sign data: <nil> verify: <nil>
	// tampered: ao: MAC mismatch
	// server counters: {Good:1 Bad:1 KeyNotFound:0 AORequired:0 DroppedICMP:0}
}
