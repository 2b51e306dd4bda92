package linuxsock_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/md5sig"
)

// A TCP-MD5 listener for a whole prefix of peers and a client signing
// for its one server, on the running kernel's own TCP (CONFIG_TCP_MD5SIG;
// no privilege needed).
func Example() {
	key := []byte("bgp-secret")
	srv := linuxsock.Keys{MD5: []md5sig.Config{{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: key}}}
	ln, err := linuxsock.ListenConfig(srv).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hello, signed"))
			c.Close()
		}
	}()
	cli := linuxsock.Keys{MD5: []md5sig.Config{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: key}}}
	c, err := linuxsock.Dialer(cli).Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	b, err := io.ReadAll(c)
	fmt.Printf("%s %v\n", b, err)
	// Output: hello, signed <nil>
}

// The same ao.Config values drive a kernel socket here and the ao engine
// in Example_engine. A kernel without TCP-AO (CONFIG_TCP_AO, Linux 6.7+)
// answers with an error wrapping errors.ErrUnsupported, so this example
// is compiled, not run.
func Example_tcpAO() {
	keys := linuxsock.Keys{AO: []ao.Config{
		{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 1, Algorithm: "hmac(sha256)", Key: []byte("mkt-1")},
	}}
	ln, err := linuxsock.ListenConfig(keys).Listen(context.Background(), "tcp", "192.0.2.1:179")
	if err != nil {
		log.Fatal(err) // errors.Is(err, errors.ErrUnsupported) without CONFIG_TCP_AO
	}
	defer ln.Close()
	c, err := ln.Accept()
	if err != nil {
		log.Fatal(err)
	}
	info, err := linuxsock.ReadAOInfo(c.(*net.TCPConn))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("current key %d, %d segments verified\n", info.Current, info.Counters.Good)
}

// A key rotation on a live kernel connection (RFC 5925 §7.5.2): add the
// new MKT, ask the peer to send with it (RNext), and once the peer has
// switched, send with it too and delete the old one. Compiled, not run.
func Example_rotation() {
	var c *net.TCPConn // a connection with MKT 1/1, from Dialer or ListenConfig
	next := ao.Config{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 2, RecvID: 2, Algorithm: "hmac(sha256)", Key: []byte("mkt-2")}
	if err := linuxsock.AddAOKey(c, next, linuxsock.RNext); err != nil {
		log.Fatal(err)
	}
	// ... the peer's segments now carry KeyID 2: it switched.
	old := ao.Config{Peer: next.Peer, SendID: 1, RecvID: 1}
	err := linuxsock.DeleteAOKey(c, old, linuxsock.AODelete{SetCurrent: true, Current: 2})
	if err != nil {
		log.Fatal(err)
	}
}

// Per-key and per-socket counters. Compiled, not run.
func ExampleAOKeys() {
	var c *net.TCPConn // a connection with TCP-AO keys
	keys, err := linuxsock.AOKeys(c)
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range keys {
		fmt.Printf("%v/%d-%d current=%v good=%d bad=%d\n", k.Peer, k.SendID, k.RecvID, k.Current, k.Good, k.Bad)
	}
	info, err := linuxsock.ReadAOInfo(c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("socket: %+v\n", info.Counters)
}

// Where the kernel has no TCP-AO (ProbeAO says so), the same
// configuration drives the ao engine instead, for a userspace stack or
// the tcpsig shim.
func Example_engine() {
	cfg := ao.Config{Peer: netip.MustParsePrefix("192.0.2.0/24"), SendID: 1, RecvID: 1, Algorithm: "hmac(sha256)", Key: []byte("mkt-1")}
	ring := ao.NewKeyring(nil)
	m, err := ring.Add(cfg)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Algorithm(), m.SendID(), m.RecvID(), m.MACLen())
	// Output: hmac(sha256) 1 1 12
}
