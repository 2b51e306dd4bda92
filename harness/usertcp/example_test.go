package usertcp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/harness/usertcp"
)

// toyAuth shows the shape of a signing layer: an experimental option
// (kind 253, RFC 4727) carrying a CRC-32 of the payload and a shared
// secret. It is not security; tcpsig's md5sig and ao packages plug in the
// same way.
type toyAuth struct{ secret []byte }

func (a toyAuth) OptionLen() int { return 8 } // 253, 6, crc32, NOP, NOP

func (a toyAuth) Sign(pkt []byte) error {
	opts, payload := split(pkt)
	opts[0], opts[1] = 253, 6
	binary.BigEndian.PutUint32(opts[2:], a.sum(payload))
	return nil
}

func (a toyAuth) Verify(pkt []byte) error {
	opts, payload := split(pkt)
	if len(opts) < 6 || opts[0] != 253 || binary.BigEndian.Uint32(opts[2:]) != a.sum(payload) {
		return errors.New("bad toy signature")
	}
	return nil
}

func (a toyAuth) sum(payload []byte) uint32 {
	return crc32.Update(crc32.ChecksumIEEE(payload), crc32.IEEETable, a.secret)
}

// split returns the TCP options and payload of an IPv4 packet.
func split(pkt []byte) (opts, payload []byte) {
	tcp := pkt[int(pkt[0]&15)*4:]
	doff := int(tcp[12]>>4) * 4
	return tcp[20:doff], tcp[doff:]
}

// A server-first exchange between two userspace endpoints over an
// in-memory link, every segment signed and verified by the Auth hook.
func Example() {
	client, server := usertcp.Pipe()
	caddr := netip.MustParseAddrPort("192.0.2.1:40000")
	saddr := netip.MustParseAddrPort("192.0.2.2:25")
	auth := toyAuth{secret: []byte("shared")}

	done := make(chan error, 1)
	go func() {
		c, err := usertcp.Accept(context.Background(), server, usertcp.Config{
			Local: saddr, Auth: auth, Greeting: []byte("220 ready\r\n"),
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

	c, err := usertcp.Dial(context.Background(), client, usertcp.Config{Local: caddr, Remote: saddr, Auth: auth})
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
	fmt.Printf("%q %q dropped=%d\n", greeting, reply, c.Stats().AuthDropped)
	// Output: "220 ready\r\n" "250 hello\r\n" dropped=0
}
