package linuxsock_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

// A TCP-MD5 listener for a whole prefix of peers and a client signing
// for its one server, on the running kernel's own TCP (CONFIG_TCP_MD5SIG;
// no privilege needed).
func Example() {
	key := []byte("bgp-secret")
	srv := linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.MustParsePrefix("127.0.0.0/8"), Key: key}}}
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
	cli := linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.MustParsePrefix("127.0.0.1/32"), Key: key}}}
	c, err := linuxsock.Dialer(cli).Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	b, err := io.ReadAll(c)
	fmt.Printf("%s %v\n", b, err)
	// Output: hello, signed <nil>
}

// A TCP-AO listener and a dialer on kernel sockets, from one keys file
// (package keyfile) holding both ends' MKTs; Example_engine feeds the
// same file to the engine. Without CONFIG_TCP_AO (Linux 6.7+) Listen
// fails with an error wrapping errors.ErrUnsupported, so this example is
// compiled, not run (testvectors/linux runs its like under Linux 6.12).
func Example_tcpAO() {
	f, err := keyfile.Parse([]byte(keysFile))
	if err != nil {
		log.Fatal(err)
	}
	keys := linuxsock.FileKeys(f)
	ln, err := linuxsock.ListenConfig(keys).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err) // errors.Is(err, errors.ErrUnsupported) without CONFIG_TCP_AO
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hello over TCP-AO"))
			c.Close()
		}
	}()
	d := linuxsock.Dialer(keys) // installs only the MKTs for the address it dials
	d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	info, err := linuxsock.ReadAOInfo(c.(*net.TCPConn))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: key %d, %d segments verified\n", b, info.Current, info.Counters.Good)
}

// keysFile holds both ends: the client (127.0.0.2) signs with SendID 1
// for the server (peer 127.0.0.1), the server with SendID 2 for it.
const keysFile = `{"ao": [
  {"name": "client", "alg": "hmac(sha256)", "key": "text:mkt-secret", "sndid": 1, "rcvid": 2, "peer": "127.0.0.1"},
  {"name": "server", "alg": "hmac(sha256)", "key": "text:mkt-secret", "sndid": 2, "rcvid": 1, "peer": "127.0.0.2"}]}`

// A key rotation on a live kernel connection (RFC 5925 §7.5.2): add the
// new MKT, ask the peer to send with it (RNext), and once the peer has
// switched, send with it too and delete the old one. Compiled, not run.
func Example_rotation() {
	var c *net.TCPConn // a connection with MKT 1/1, from Dialer or ListenConfig
	next := keys.AO{Peer: netip.MustParsePrefix("192.0.2.2/32"), SendID: 2, RecvID: 2, Algorithm: "hmac(sha256)", Key: []byte("mkt-2")}
	if err := linuxsock.AddAOKey(c, next, linuxsock.RNext); err != nil {
		log.Fatal(err)
	}
	// ... the peer's segments now carry KeyID 2: it switched.
	old := keys.AO{Peer: next.Peer, SendID: 1, RecvID: 1}
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

// Where the kernel has no TCP-AO (ProbeAO says so), the same keys file
// drives the ao engine instead, for a userspace stack or the tcpsig shim.
func Example_engine() {
	f, err := keyfile.Parse([]byte(keysFile))
	if err != nil {
		log.Fatal(err)
	}
	ring := ao.NewKeyring(nil)
	for _, e := range f.AO {
		if _, err := ring.Add(e.Config); err != nil {
			log.Fatal(err)
		}
	}
	m := ring.LookupRecv(netip.MustParseAddr("127.0.0.2"), 1, 0) // the server's MKT for the client
	fmt.Println(m.Algorithm(), m.SendID(), m.RecvID(), m.MACLen())
	// Output: hmac(sha256) 2 1 12
}
