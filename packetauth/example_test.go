package packetauth_test

import (
	"errors"
	"fmt"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

// Two hosts whose TCP stacks know nothing of TCP-AO: each gets a Layer
// with one MKT for the other. The client's SYN is signed on the way out,
// verified and stripped on the way in; a forged copy is dropped.
func Example() {
	client, server := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.2")
	layer := func(peer netip.Addr, send, recv uint8) *packetauth.Layer {
		ring := ao.NewKeyring(nil)
		if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(peer, 32), SendID: send, RecvID: recv,
			Algorithm: "hmac(sha256)", Key: []byte("correct horse battery staple")}); err != nil {
			log.Fatal(err)
		}
		l, err := packetauth.New(packetauth.Config{AO: ring})
		if err != nil {
			log.Fatal(err)
		}
		return l
	}
	a, b := layer(server, 1, 2), layer(client, 2, 1)
	defer a.Close()
	defer b.Close()
	fmt.Println("overhead:", a.Overhead(), "bytes: tell the stack MTU -", a.Overhead())

	// The client stack's SYN: MSS 1460, nothing else.
	syn, _ := segment.AppendPacket(nil, segment.IP{Src: client, Dst: server},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1000, Flags: segment.SYN, Window: 65535,
			Options: [][]byte{{2, 4, 0x05, 0xb4}}},
		nil)
	wire, err := a.Outbound(make([]byte, 0, 128), syn)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stack's options: %x\n", syn[40:])
	fmt.Printf("on the wire:     %x\n", wire[40:])

	got, err := b.Inbound(nil, wire)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("server stack:    %x\n", got[40:])

	forged := append([]byte(nil), wire...)
	forged[len(forged)-5] ^= 1 // a bit of the MSS
	_, err = b.Inbound(nil, forged)
	fmt.Println("forged:", errors.Is(err, ao.ErrBadMAC), err)

	c := b.Counters()
	fmt.Printf("server: verified %d, dropped %d (bad MAC %d), tracking %d\n", c.Verified, c.Dropped.Total(), c.Dropped.BadMAC, c.Tracked)
	for ci := range b.Conns {
		fmt.Println(ci.Local, "<-", ci.Remote, ci.Kind, ci.State, "remote ISN", ci.RemoteISN)
	}
	// Output:
	// overhead: 20 bytes: tell the stack MTU - 20
	// stack's options: 020405b4
	// on the wire:     1d1001026cace98b9bbd31cffd463f81020405b4
	// server stack:    01010101010101010101010101010101020405a0
	// forged: true ao: MAC mismatch
	// server: verified 1, dropped 1 (bad MAC 1), tracking 1
	// 198.51.100.2:179 <- 192.0.2.1:40000 TCP-AO syn-received remote ISN 1000
}

// A front end that restarts mid-connection has lost what it learnt from
// the handshake: the connection's segments are refused until Seed gives
// it back the state Export gave before (a shim keeps it in a state file).
func ExampleLayer_Seed() {
	client, server := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("198.51.100.2")
	ring := ao.NewKeyring(nil)
	if _, err := ring.Add(keys.AO{Peer: netip.PrefixFrom(server, 32), SendID: 1, RecvID: 2,
		Algorithm: "cmac(aes128)", Key: []byte("sixteen byte key")}); err != nil {
		log.Fatal(err)
	}
	l, err := packetauth.New(packetauth.Config{AO: ring})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	local, remote := netip.AddrPortFrom(client, 40000), netip.AddrPortFrom(server, 179)
	ack, _ := segment.AppendPacket(nil, segment.IP{Src: client, Dst: server},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 7001, Ack: 90001, Flags: segment.ACK, Window: 1000}, nil)

	_, err = l.Outbound(nil, ack)
	fmt.Println("before Seed:", err)

	saved := ao.Endpoint{Local: local, Remote: remote, LocalISN: 7000, RemoteISN: 90000, SendSeq: 7001, RecvSeq: 90001,
		CurrentSendID: 1, RNextRecvID: 2} // as Export gave it before the restart
	if err := l.Seed(saved); err != nil {
		log.Fatal(err)
	}
	wire, err := l.Outbound(nil, ack)
	fmt.Println("after Seed:", err, len(wire)-len(ack), "option bytes added")
	st, _ := l.Export(local, remote)
	fmt.Println("ISNs", st.LocalISN, st.RemoteISN, "KeyID", st.CurrentSendID, "RNextKeyID", st.RNextRecvID)
	// Output:
	// before Seed: packetauth: covered peer's segment with no tracked connection
	// after Seed: <nil> 16 option bytes added
	// ISNs 7000 90000 KeyID 1 RNextKeyID 2
}
