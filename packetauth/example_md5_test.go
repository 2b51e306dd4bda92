package packetauth_test

import (
	"fmt"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

// A BGP speaker whose stack builds whole IP packets, and its peer, each
// with a Layer holding the TCP-MD5 key for the other: the speaker's packet
// is signed on the way out (the option inserted, the checksum fixed), the
// peer verifies it on the way in; a damaged copy is dropped.
func Example_md5() {
	speaker, peer := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	layer := func(other netip.Addr) *packetauth.Layer {
		ring := md5sig.NewKeyring(nil)
		if _, err := ring.Add(keys.MD5{Peer: netip.PrefixFrom(other, 128), Key: []byte("bgp-session-secret")}); err != nil {
			log.Fatal(err)
		}
		l, err := packetauth.New(packetauth.Config{MD5: ring})
		if err != nil {
			log.Fatal(err)
		}
		return l
	}
	out, in := layer(peer), layer(speaker)
	defer out.Close()
	defer in.Close()

	pkt, err := segment.AppendPacket(nil, segment.IP{Src: speaker, Dst: peer},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1001, Ack: 5001, Flags: segment.ACK | segment.PSH, Window: 65535},
		[]byte("OPEN message"))
	if err != nil {
		log.Fatal(err)
	}
	wire, err := out.Outbound(nil, pkt)
	fmt.Println("sign:", err, "grew by", len(wire)-len(pkt))
	_, err = in.Inbound(nil, wire)
	fmt.Println("verify:", err)
	wire[len(wire)-1] ^= 1
	_, err = in.Inbound(nil, wire)
	fmt.Println("damaged:", err)
	// Output:
	// sign: <nil> grew by 20
	// verify: <nil>
	// damaged: md5sig: signature mismatch
}
