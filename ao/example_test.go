package ao_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
)

// tcpHeader lays out a TCP header with a TCP-AO option, as a stack would.
func tcpHeader(sport, dport uint16, seq, ack uint32, flags segment.Flags, maclen int) []byte {
	return segment.AppendTCP(nil, segment.Fields{SrcPort: sport, DstPort: dport, Seq: seq, Ack: ack, Flags: flags, Window: 65535,
		Options: [][]byte{ao.AppendOption(nil, maclen)}})
}

// A client and a server stack sign and verify the first segments of a
// connection: SYN, SYN-ACK carrying a greeting, data, and a RST. The
// server's stack chooses its ISN after Accept: its SYN-ACK carries it.
func Example() {
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	mkt := func(peer netip.Addr, send, recv uint8) keys.AO {
		return keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
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
	signed, err := l.Accept(&syn, &s)
	fmt.Println("accept SYN:", signed, err)

	greeting := []byte("220 ready\r\n")
	synack, _ := segment.FromTCP(server.Addr(), client.Addr(), tcpHeader(179, 40000, 5000, 1001, segment.SYN|segment.ACK, 12), greeting)
	fmt.Println("sign SYN-ACK with payload:", s.Sign(&synack))
	fmt.Println("verify SYN-ACK:", c.Verify(&synack))

	data, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1001, 5012, segment.ACK|segment.PSH, 12), []byte("OPEN"))
	fmt.Println("sign data:", c.Sign(&data), "verify:", s.Verify(&data))
	data.Frags()[0][0] ^= 1 // tampered in flight
	fmt.Println("tampered:", s.Verify(&data))
	fmt.Printf("server counters: %+v\n", s.Counters())

	// A RST is signed like any other segment of the connection.
	rst, _ := segment.FromTCP(server.Addr(), client.Addr(), tcpHeader(179, 40000, 5012, 1005, segment.RST|segment.ACK, 12))
	fmt.Println("sign RST:", s.Sign(&rst), "verify:", c.Verify(&rst))
	// Output:
	// sign SYN: <nil>
	// accept SYN: true <nil>
	// sign SYN-ACK with payload: <nil>
	// verify SYN-ACK: <nil>
	// sign data: <nil> verify: <nil>
	// tampered: ao: MAC mismatch
	// server counters: {Good:1 Bad:1 KeyNotFound:0 AORequired:0 DroppedICMP:0}
	// sign RST: <nil> verify: <nil>
}

// pair sets up the two ends of an established connection on two keyrings
// that each hold MKTs A (KeyIDs 1/2) and B (3/4), for the examples below.
func pair() (cring, sring *ao.Keyring, c, s *ao.Conn) {
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	cring, sring = ao.NewKeyring(nil), ao.NewKeyring(nil)
	mkt := func(peer netip.Addr, send, recv uint8, key string) keys.AO {
		return keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv, Algorithm: "hmac(sha1)", Key: []byte(key)}
	}
	if _, err := cring.AddAll([]keys.AO{mkt(server.Addr(), 1, 2, "key A"), mkt(server.Addr(), 3, 4, "key B")}, nil); err != nil {
		panic(err)
	}
	if _, err := sring.AddAll([]keys.AO{mkt(client.Addr(), 2, 1, "key A"), mkt(client.Addr(), 4, 3, "key B")}, nil); err != nil {
		panic(err)
	}
	c, s = new(ao.Conn), new(ao.Conn)
	if err := c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 1000}, ao.Policy{}); err != nil {
		panic(err)
	}
	c.SetCurrent(1)
	c.SetRNext(2)
	syn, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1000, 0, segment.SYN, 12))
	if err := c.Sign(&syn); err != nil {
		panic(err)
	}
	if _, err := ao.NewListener(sring, ao.Policy{}, 0).Accept(&syn, s); err != nil {
		panic(err)
	}
	synack, _ := segment.FromTCP(server.Addr(), client.Addr(), tcpHeader(179, 40000, 5000, 1001, segment.SYN|segment.ACK, 12))
	if err := s.Sign(&synack); err != nil {
		panic(err)
	}
	if err := c.Verify(&synack); err != nil {
		panic(err)
	}
	return cring, sring, c, s
}

// exchange sends one segment each way and prints the KeyIDs on the wire.
func exchange(c, s *ao.Conn, seq uint32) {
	client, server := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, d := range []struct {
		from, to *ao.Conn
		src, dst netip.Addr
		tcp      []byte
	}{
		{c, s, client, server, tcpHeader(40000, 179, 1001+seq, 5001, segment.ACK, 12)},
		{s, c, server, client, tcpHeader(179, 40000, 5001+seq, 1001, segment.ACK, 12)},
	} {
		seg, _ := segment.FromTCP(d.src, d.dst, d.tcp)
		if err := d.from.Sign(&seg); err != nil {
			panic(err)
		}
		o, _ := ao.ParseOption(seg.Header()[seg.Auth().AO:])
		fmt.Printf("%v: KeyID %d RNextKeyID %d, verify %v\n", d.src, o.KeyID, o.RNextKeyID, d.to.Verify(&seg))
	}
}

// A key rotation driven from either end (RFC 5925 §7.5.2). Both MKTs are
// on both sides beforehand. An end asks its peer to send with the new key
// by setting its RNext key; the peer's current key follows the RNextKeyID
// of the first segment it verifies. The peer's own RNext key does not
// move by itself: until the peer sets it too, it keeps asking for the old
// key and so keeps the first end's current key on it. A rotation is done
// when both ends have set their RNext key.
func ExampleConn_SetRNext() {
	_, _, c, s := pair()
	defer c.Close()
	defer s.Close()
	exchange(c, s, 0)

	fmt.Println("client asks for key B")
	c.SetRNext(4) // the server's SendID of key B
	exchange(c, s, 10)
	fmt.Println("server asks for key B")
	s.SetRNext(3)
	exchange(c, s, 20)
	exchange(c, s, 30)

	fmt.Println("server asks for key A, then client")
	s.SetRNext(1)
	exchange(c, s, 40)
	c.SetRNext(2)
	exchange(c, s, 50)
	// Output:
	// 192.0.2.1: KeyID 1 RNextKeyID 2, verify <nil>
	// 192.0.2.2: KeyID 2 RNextKeyID 1, verify <nil>
	// client asks for key B
	// 192.0.2.1: KeyID 1 RNextKeyID 4, verify <nil>
	// 192.0.2.2: KeyID 4 RNextKeyID 1, verify <nil>
	// server asks for key B
	// 192.0.2.1: KeyID 1 RNextKeyID 4, verify <nil>
	// 192.0.2.2: KeyID 4 RNextKeyID 3, verify <nil>
	// 192.0.2.1: KeyID 3 RNextKeyID 4, verify <nil>
	// 192.0.2.2: KeyID 4 RNextKeyID 3, verify <nil>
	// server asks for key A, then client
	// 192.0.2.1: KeyID 3 RNextKeyID 4, verify <nil>
	// 192.0.2.2: KeyID 4 RNextKeyID 1, verify <nil>
	// 192.0.2.1: KeyID 1 RNextKeyID 2, verify <nil>
	// 192.0.2.2: KeyID 2 RNextKeyID 1, verify <nil>
}

// Deleting an MKT that a connection still uses as its current or RNext key
// is refused, unless the delete names replacements; then the connection
// moves to them at once, and the deleted key's bytes are wiped.
func ExampleKeyring_Delete() {
	cring, _, c, s := pair()
	defer c.Close()
	defer s.Close()
	a := cring.Find(netip.MustParsePrefix("192.0.2.2/32"), 1, 2)
	b := cring.Find(netip.MustParsePrefix("192.0.2.2/32"), 3, 4)
	fmt.Println("delete A, replaced by B:", cring.Delete(a, ao.DeleteOptions{Current: b, RNext: b}))
	fmt.Println("client keys:", c.Current().SendID(), c.RNext().RecvID(), "left:", cring.Len())
	fmt.Println("delete A again:", cring.Delete(a, ao.DeleteOptions{}))
	// A removal always wins: deleting the last key revokes the connection.
	fmt.Println("delete B:", cring.Delete(b, ao.DeleteOptions{}), "left:", cring.Len())
	fmt.Println("client signs:", c.Sign(&segment.Segment{}))
	// Output:
	// delete A, replaced by B: <nil>
	// client keys: 3 4 left: 1
	// delete A again: ao: no such MKT
	// delete B: <nil> left: 0
	// client signs: ao: connection revoked: its keys were deleted
}

// A connection whose handshake another stack made (or one restored after
// a restart) starts from what is known of it: both ISNs, where the SNEs
// stand, the keys in use. Endpoint gives it back for the next restore.
func ExampleConn_Init_established() {
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
	cring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 1, RecvID: 2, Algorithm: "hmac(sha1)", Key: []byte("k")})
	sring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), SendID: 2, RecvID: 1, Algorithm: "hmac(sha1)", Key: []byte("k")})

	// 0xfffffff0 + 0x20 wraps: the client's SNE is 1 from there on.
	var c, s ao.Conn
	err := c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 0xfffffff0,
		Established: true, RemoteISN: 5000, CurrentSendID: 1, RNextRecvID: 2}, ao.Policy{})
	fmt.Println("client:", err)
	err = s.Init(sring, ao.Endpoint{Local: server, Remote: client, LocalISN: 5000,
		Established: true, RemoteISN: 0xfffffff0, CurrentSendID: 2, RNextRecvID: 1}, ao.Policy{})
	fmt.Println("server:", err)

	data, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 0x10, 5001, segment.ACK, 12), []byte("UPDATE"))
	fmt.Println("sign:", c.Sign(&data), "verify:", s.Verify(&data))
	ep := s.Endpoint()
	fmt.Printf("server's receive SNE %d at %#x, keys %d/%d\n", ep.RecvSNE, ep.RecvSeq, ep.CurrentSendID, ep.RNextRecvID)
	// Output:
	// client: <nil>
	// server: <nil>
	// sign: <nil> verify: <nil>
	// server's receive SNE 1 at 0x10, keys 2/1
}

// A tool without connections (a capture reader, a middlebox) derives a
// traffic key once per direction and segment type, from an MKT and the
// two ISNs as the segments see them (their sender's first), then signs
// or verifies every segment it covers, keeping its own SNE.
func ExampleTrafficKey() {
	ring := ao.NewKeyring(nil)
	m, err := ring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 7, RecvID: 9,
		Algorithm: "cmac(aes128)", Key: []byte("sixteen byte key")})
	if err != nil {
		panic(err)
	}
	src, dst := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	isns := ao.ISNs{Src: 1000, Dst: 5000}
	seg, _ := segment.FromTCP(src, dst, tcpHeader(40000, 179, 1001, 5001, segment.ACK, 12))
	var k ao.TrafficKey
	defer k.Wipe()
	fmt.Println("derive:", k.Derive(m, isns, &seg))

	fmt.Println("sign:", k.Sign(&seg, 0, m.RecvID()))
	o, _ := ao.ParseOption(seg.Header()[seg.Auth().AO:])
	fmt.Printf("KeyID %d RNextKeyID %d MAC %x\n", o.KeyID, o.RNextKeyID, o.MAC)
	fmt.Println("verify:", k.Verify(&seg, 0))
	fmt.Println("SNE 1:", k.Verify(&seg, 1))

	next, _ := segment.FromTCP(src, dst, tcpHeader(40000, 179, 1001, 5001, segment.ACK|segment.PSH, 12), []byte("data"))
	fmt.Println("same key covers the next segment:", k.Covers(m, isns, &next), k.Sign(&next, 0, m.RecvID()))
	var swapped ao.TrafficKey
	swapped.Derive(m, ao.ISNs{Src: 5000, Dst: 1000}, &seg)
	fmt.Println("ISNs swapped:", swapped.Verify(&seg, 0))
	// Output:
	// derive: <nil>
	// sign: <nil>
	// KeyID 7 RNextKeyID 9 MAC 2808199b390b196062816a2a
	// verify: <nil>
	// SNE 1: ao: MAC mismatch
	// same key covers the next segment: true <nil>
	// ISNs swapped: ao: MAC mismatch
}

// RSTs go through the same calls as every other segment. A stack that
// still holds the connection (established, or in TIME-WAIT) signs its RST
// with Conn.Sign. One that keeps only the ISNs (a syncookie ACK gives
// them: ours ack−1, the peer's seq−1) signs with a TrafficKey, choosing
// the MKT as Linux does: the one whose SendID is the peer's RNextKeyID.
// A Linux listener that knows no ISNs signs with the traffic key of the
// segment it answers (its own direction, ISNs (its seq, 0), SNE 0).
func ExampleTrafficKey_reset() {
	client, server := netip.MustParseAddrPort("192.0.2.1:40000"), netip.MustParseAddrPort("192.0.2.2:179")
	cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
	cring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 1, RecvID: 1, Algorithm: "hmac(sha256)", Key: []byte("k")})
	sring.Add(keys.AO{Peer: netip.MustParsePrefix("192.0.2.1/32"), SendID: 1, RecvID: 1, Algorithm: "hmac(sha256)", Key: []byte("k")})
	var c ao.Conn
	c.Init(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: 999, Established: true,
		RemoteISN: 4999, CurrentSendID: 1, RNextRecvID: 1}, ao.Policy{})

	// The client's ACK reaches a server that kept no connection state.
	ack, _ := segment.FromTCP(client.Addr(), server.Addr(), tcpHeader(40000, 179, 1000, 5000, segment.ACK, 12))
	c.Sign(&ack)
	o, _ := ao.ParseOption(ack.Header()[ack.Auth().AO:])
	rst, _ := segment.FromTCP(server.Addr(), client.Addr(), tcpHeader(179, 40000, 5000, 0, segment.RST, 12))
	local, remote := ack.Header().Ack()-1, ack.Header().Seq()-1 // from a syncookie
	m := sring.LookupSend(ack.Src(), o.RNextKeyID, 0)
	var k ao.TrafficKey
	defer k.Wipe()
	k.Derive(m, ao.ISNs{Src: local, Dst: remote}, &rst)
	fmt.Println("server signs the RST:", k.Sign(&rst, ao.ComputeSNE(0, local, rst.Header().Seq()), m.RecvID()))
	fmt.Println("client verifies it:", c.Verify(&rst))

	// As a Linux listener: the ACK's own traffic key.
	listen, _ := segment.FromTCP(server.Addr(), client.Addr(), tcpHeader(179, 40000, 5000, 0, segment.RST, 12))
	m = sring.LookupRecv(ack.Src(), o.RNextKeyID, 0)
	k.Derive(m, ao.ISNs{Src: ack.Header().Seq()}, &ack)
	fmt.Println("listener signs its RST:", k.Sign(&listen, 0, m.RecvID()))
	fmt.Println("client verifies it:", c.Verify(&listen))
	// Output:
	// server signs the RST: <nil>
	// client verifies it: <nil>
	// listener signs its RST: <nil>
	// client verifies it: ao: MAC mismatch
}

// A router's MKTs go into its keyring in one call, all or none: a list
// with one MKT the keyring cannot hold beside another is refused whole,
// the error naming that entry and the MKT it clashes with.
func ExampleKeyring_AddAll() {
	mkt := func(peer string, send, recv uint8) keys.AO {
		return keys.AO{Peer: netip.MustParsePrefix(peer), SendID: send, RecvID: recv, Algorithm: "hmac(sha256)", Key: []byte("bgp-session-secret")}
	}
	ring := ao.NewKeyring(nil)
	mkts, err := ring.AddAll([]keys.AO{mkt("192.0.2.2/32", 1, 2), mkt("198.51.100.0/24", 5, 6)}, []string{"r2", "dynamic"})
	fmt.Println(len(mkts), err, ring.Len())

	_, err = ring.AddAll([]keys.AO{mkt("203.0.113.9/32", 1, 2), mkt("198.51.100.7/32", 5, 9)}, []string{"r9", "r7"})
	fmt.Println(errors.Is(err, ao.ErrKeyExists), ring.Len())
	fmt.Println(err)
	// Output:
	// 2 <nil> 2
	// true 2
	// ao[1] ("r7"): ao: an MKT with this SendID or RecvID already covers the peer: ao.MKT{peer 198.51.100.0/24, SendID 5, RecvID 6, hmac(sha256), maclen 12, key [redacted]} (adding ao.MKT{peer 198.51.100.7/32, SendID 5, RecvID 9, hmac(sha256), maclen 12, key [redacted]})
}
