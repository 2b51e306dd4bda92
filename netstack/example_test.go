package netstack_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/netstack"
	"github.com/tcpsig/tcpsig/packetauth"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// The keys of both ends in one file: the server 192.0.2.1 and the client
// 192.0.2.2 each take the entry whose peer is the other.
const keys = `{"ao": [
  {"name": "to-client", "alg": "hmac(sha256)", "key": "text:example key 1", "sndid": 1, "rcvid": 2, "peer": "192.0.2.2"},
  {"name": "to-server", "alg": "hmac(sha256)", "key": "text:example key 1", "sndid": 2, "rcvid": 1, "peer": "192.0.2.1"}
]}`

// host is one gVisor stack whose link endpoint is wrapped by a
// packetauth layer with the keys of the file.
func host(f *keyfile.File, addr string, link stack.LinkEndpoint) (*stack.Stack, *netstack.Endpoint) {
	aoRing, md5Ring := ao.NewKeyring(nil), md5sig.NewKeyring(nil)
	if _, err := aoRing.AddAll(f.AOConfigs()); err != nil {
		log.Fatal(err) // names the entry: ao[1] ("to-server"): …
	}
	if _, err := md5Ring.AddAll(f.MD5Configs()); err != nil {
		log.Fatal(err)
	}
	// netstack fills every checksum (the wrapper turns TX offload off):
	// the layer updates it for the option instead of summing anew.
	layer, err := packetauth.New(packetauth.Config{AO: aoRing, MD5: md5Ring, StackChecksums: true})
	if err != nil {
		log.Fatal(err)
	}
	ep, err := netstack.New(link, layer)
	if err != nil {
		log.Fatal(err)
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	if err := s.CreateNIC(1, ep); err != nil {
		log.Fatal(err)
	}
	a := tcpip.AddrFrom4(netip.MustParseAddr(addr).As4())
	s.AddProtocolAddress(1, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: a.WithPrefix()}, stack.AddressProperties{})
	s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	return s, ep
}

// wire carries what one channel endpoint sends into the other.
func wire(from, to *channel.Endpoint) {
	for {
		pkt := from.ReadContext(context.Background())
		q := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: pkt.ToBuffer()})
		to.InjectInbound(pkt.NetworkProtocolNumber, q)
		pkt.DecRef()
		q.DecRef()
	}
}

// A gonet TCP server and client over an in-memory link, each stack
// wrapped with the keys of a keys file: every segment between them is
// signed with TCP-AO hmac(sha256) and verified before the stack sees it.
func Example() {
	path := filepath.Join(os.TempDir(), "netstack-example.keys.json")
	if err := os.WriteFile(path, []byte(keys), 0o600); err != nil {
		log.Fatal(err)
	}
	defer os.Remove(path)
	f, err := keyfile.Load(path)
	if err != nil {
		log.Fatal(err)
	}

	serverLink, clientLink := channel.New(64, 1500, ""), channel.New(64, 1500, "")
	go wire(serverLink, clientLink)
	go wire(clientLink, serverLink)
	server, sep := host(f, "192.0.2.1", serverLink)
	client, cep := host(f, "192.0.2.2", clientLink)

	ln, err := gonet.ListenTCP(server, tcpip.FullAddress{NIC: 1, Port: 179}, ipv4.ProtocolNumber)
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		fmt.Fprintf(c, "server got %q", b)
		c.Close()
	}()

	to := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFrom4([4]byte{192, 0, 2, 1}), Port: 179}
	c, err := gonet.DialContextTCP(context.Background(), client, to, ipv4.ProtocolNumber)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprint(c, "hello over TCP-AO")
	c.CloseWrite()
	reply, _ := io.ReadAll(c)
	fmt.Println(string(reply))
	c.Close()

	fmt.Println("client MTU:", cep.MTU(), "of", clientLink.MTU())
	for ci := range sep.Layer().Conns {
		fmt.Println("server tracks", ci.Remote.Addr(), ci.Kind, "KeyID", ci.CurrentKeyID, "RNext", ci.RNextKeyID)
	}
	sc, cc := sep.Layer().Counters(), cep.Layer().Counters()
	fmt.Println("signed and verified both ways:", sc.Signed > 0 && sc.Verified > 0 && cc.Signed > 0 && cc.Verified > 0)
	fmt.Println("dropped:", sc.Dropped.Total()+cc.Dropped.Total())
	// Output:
	// server got "hello over TCP-AO"
	// client MTU: 1480 of 1500
	// server tracks 192.0.2.2 TCP-AO KeyID 1 RNext 2
	// signed and verified both ways: true
	// dropped: 0
}
