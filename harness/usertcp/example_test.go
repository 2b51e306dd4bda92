package usertcp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
)

// md5Layer is the signing layer of one endpoint: a packetauth.Layer whose
// TCP-MD5 keyring has the shared key for the peer.
func md5Layer(peer netip.Addr) *packetauth.Layer {
	ring := md5sig.NewKeyring(nil)
	if _, err := ring.Add(keys.MD5{Peer: netip.PrefixFrom(peer, 32), Key: []byte("shared")}); err != nil {
		log.Fatal(err)
	}
	l, err := packetauth.New(packetauth.Config{MD5: ring})
	if err != nil {
		log.Fatal(err)
	}
	return l
}

// A server-first exchange between two userspace endpoints over an
// in-memory link, every segment signed and verified with TCP-MD5 by a
// packetauth.Layer on each side.
func Example() {
	client, server := usertcp.Pipe()
	caddr := netip.MustParseAddrPort("192.0.2.1:40000")
	saddr := netip.MustParseAddrPort("192.0.2.2:25")
	clientAuth, serverAuth := md5Layer(saddr.Addr()), md5Layer(caddr.Addr())
	defer clientAuth.Close()
	defer serverAuth.Close()

	done := make(chan error, 1)
	go func() {
		c, err := usertcp.Accept(context.Background(), server, usertcp.Config{
			Local: saddr, Auth: serverAuth, Greeting: []byte("220 ready\r\n"),
		})
		if err != nil {
			done <- err
			return
		}
		cmd := make([]byte, 6)
		if _, err := io.ReadFull(c, cmd); err != nil {
			done <- err
			return
		}
		if _, err := c.Write([]byte("250 hello\r\n")); err != nil {
			done <- err
			return
		}
		io.ReadAll(c) // until the client's FIN
		done <- c.Close()
	}()

	c, err := usertcp.Dial(context.Background(), client, usertcp.Config{Local: caddr, Remote: saddr, Auth: clientAuth})
	if err != nil {
		log.Fatal(err)
	}
	greeting := make([]byte, 11)
	io.ReadFull(c, greeting) // it came in the SYN-ACK
	c.Write([]byte("HELO\r\n"))
	reply := make([]byte, 11)
	io.ReadFull(c, reply)
	if err := c.Close(); err != nil {
		log.Fatal(err)
	}
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q %q dropped=%d signed=%v\n", greeting, reply, c.Stats().AuthDropped, clientAuth.Counters().Signed > 0)
	// Output: "220 ready\r\n" "250 hello\r\n" dropped=0 signed=true
}
