package aopacket_test

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/ao/aopacket"
	"github.com/tcpsig/tcpsig/internal/harness/usertcp"
)

// A client and a server stack over an in-memory link, each with one
// aopacket.Auth per connection: the server greets in its SYN-ACK, the
// client asks the server to move to a second MKT mid-connection.
func Example() {
	client := netip.MustParseAddrPort("192.0.2.1:40000")
	server := netip.MustParseAddrPort("192.0.2.2:179")
	mkt := func(peer netip.Addr, send, recv uint8, key string) ao.Config {
		return ao.Config{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
			Algorithm: "hmac(sha256)", Key: []byte(key)}
	}
	cring, sring := ao.NewKeyring(nil), ao.NewKeyring(nil)
	for _, c := range []ao.Config{mkt(server.Addr(), 1, 2, "key A"), mkt(server.Addr(), 3, 4, "key B")} {
		if _, err := cring.Add(c); err != nil {
			panic(err)
		}
	}
	for _, c := range []ao.Config{mkt(client.Addr(), 2, 1, "key A"), mkt(client.Addr(), 4, 3, "key B")} {
		if _, err := sring.Add(c); err != nil {
			panic(err)
		}
	}
	clink, slink := usertcp.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The server: one listener, and an Auth for the connection it accepts
	// (Listener.Accept runs on the SYN, inside Verify).
	listener := ao.NewListener(sring, ao.Policy{}, 0)
	serverKey := make(chan uint8, 1)
	go func() {
		const isn = 5000
		auth, err := aopacket.NewServer(listener, isn, 12)
		if err != nil {
			panic(err)
		}
		defer auth.Close()
		c, err := usertcp.Accept(ctx, slink, usertcp.Config{Local: server, Auth: auth, ISS: isn, Greeting: []byte("220 ready")})
		if err != nil {
			panic(err)
		}
		req := make([]byte, 4)
		if _, err := io.ReadFull(c, req); err != nil {
			panic(err)
		}
		if _, err := c.Write([]byte("250 " + string(req))); err != nil {
			panic(err)
		}
		serverKey <- auth.Conn().Current().SendID()
		c.Read(make([]byte, 1)) // EOF
		c.Close()
	}()

	// The client: the ao.Conn is set up before the SYN, with the ISN the
	// stack will send; it starts on key A.
	const isn = 1000
	auth, err := aopacket.NewClient(cring, ao.Endpoint{Local: client, Remote: server, LocalISN: isn}, ao.Policy{}, 12)
	if err != nil {
		panic(err)
	}
	defer auth.Close()
	auth.Conn().SetCurrent(1)
	auth.Conn().SetRNext(2)
	c, err := usertcp.Dial(ctx, clink, usertcp.Config{Local: client, Remote: server, Auth: auth, ISS: isn})
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 9)
	io.ReadFull(c, buf)
	fmt.Printf("greeting: %s\n", buf)

	// Ask the server to send with key B: its current key follows the
	// RNextKeyID of the next segment it verifies.
	auth.Conn().SetRNext(4)
	c.Write([]byte("HELO"))
	io.ReadFull(c, buf[:8])
	fmt.Printf("reply: %s\n", buf[:8])
	fmt.Println("server sends with KeyID", <-serverKey)
	fmt.Println("client sends with KeyID", auth.Conn().Current().SendID())
	c.Close()
	fmt.Println("bad segments:", auth.Conn().Counters().Bad, listener.Counters().Bad)
	// Output:
	// greeting: 220 ready
	// reply: 250 HELO
	// server sends with KeyID 4
	// client sends with KeyID 1
	// bad segments: 0 0
}
