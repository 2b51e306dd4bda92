package linuxmd5_test

import (
	"context"
	"log"
	"net"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/linuxmd5"
)

// A listener that signs with one key for a whole prefix of peers, and a
// client that signs with the same key for its one server. Setting TCP-MD5
// keys needs no privilege, but the example opens sockets, so it is
// compiled and not run.
func Example() {
	key := []byte("bgp-secret-42")
	lc := net.ListenConfig{Control: linuxmd5.Control(linuxmd5.Key{
		Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: key, // TCP_MD5SIG_EXT, prefix /8
	})}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:1790")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	d := net.Dialer{Control: linuxmd5.Control(linuxmd5.Key{
		Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: key, // TCP_MD5SIG
	})}
	c, err := d.Dial("tcp", "127.0.0.1:1790")
	if err != nil {
		log.Fatal(err)
	}
	c.Close()

	n, err := linuxmd5.ReadCounters()
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("TCPMD5Failure=%d", n.Failure)
}
