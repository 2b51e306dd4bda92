package md5sig_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/segment"
)

// tcpHeader lays out a TCP header as a stack would, reserving the MD5
// option first if md5 is set.
func tcpHeader(sport, dport uint16, seq, ack uint32, flags segment.Flags, md5 bool) []byte {
	var opt []byte
	if md5 {
		opt = md5sig.AppendOption(nil)
	}
	return segment.AppendTCP(nil, segment.Fields{SrcPort: sport, DstPort: dport, Seq: seq, Ack: ack, Flags: flags, Window: 65535}, opt)
}

// A BGP speaker and its peer, each with a key for the other: the speaker
// signs, the peer verifies; a damaged segment and an unsigned one are
// refused, as Linux refuses them.
func Example() {
	speaker, peer := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	secret := []byte("bgp-session-secret")

	sring, pring := md5sig.NewKeyring(nil), md5sig.NewKeyring(nil)
	if _, err := sring.Add(keys.MD5{Peer: netip.PrefixFrom(peer, 32), Key: secret}); err != nil {
		panic(err)
	}
	// The peer accepts the whole /24 with the same key (TCP_MD5SIG_EXT
	// with a prefix), as a listener for dynamic neighbours would.
	if _, err := pring.Add(keys.MD5{Peer: netip.MustParsePrefix("192.0.2.0/24"), Key: secret}); err != nil {
		panic(err)
	}

	open := []byte("OPEN message")
	seg, _ := segment.FromTCP(speaker, peer, tcpHeader(40000, 179, 1001, 5001, segment.ACK|segment.PSH, true), open)
	fmt.Println("sign:", sring.Sign(&seg, 0))
	fmt.Println("verify:", pring.Verify(&seg, 0))

	seg.Frags[0][0] ^= 1 // damaged in flight
	fmt.Println("damaged:", pring.Verify(&seg, 0))

	plain, _ := segment.FromTCP(speaker, peer, tcpHeader(40000, 179, 1013, 5001, segment.ACK, false))
	fmt.Println("unsigned:", pring.Verify(&plain, 0))

	fmt.Printf("%v %+v\n", pring.Lookup(speaker, 0), pring.Counters())
	// Output:
	// sign: <nil>
	// verify: <nil>
	// damaged: md5sig: signature mismatch
	// unsigned: md5sig: unsigned segment from a peer that has a key
	// md5sig.Key{peer 192.0.2.0/24, key [redacted]} {Good:1 Bad:1 KeyNotFound:0 Unexpected:0 Missing:1}
}

// A stack that builds whole IP packets signs them with a PacketAuth: it
// reserves OptionLen bytes of NOPs, Sign lays out the MD5 option there and
// fills in the digest, and the stack computes the checksum afterwards.
func ExamplePacketAuth() {
	speaker, peer := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::2")
	secret := []byte("bgp-session-secret")
	sring, pring := md5sig.NewKeyring(nil), md5sig.NewKeyring(nil)
	if _, err := sring.Add(keys.MD5{Peer: netip.PrefixFrom(peer, 128), Key: secret}); err != nil {
		panic(err)
	}
	if _, err := pring.Add(keys.MD5{Peer: netip.PrefixFrom(speaker, 128), Key: secret}); err != nil {
		panic(err)
	}
	out, err := md5sig.NewPacketAuth(sring, 0)
	if err != nil {
		panic(err)
	}
	in, err := md5sig.NewPacketAuth(pring, 0)
	if err != nil {
		panic(err)
	}

	reserved := make([]byte, out.OptionLen())
	for i := range reserved {
		reserved[i] = segment.OptionKindNOP
	}
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: speaker, Dst: peer},
		segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1001, Ack: 5001, Flags: segment.ACK | segment.PSH, Window: 65535},
		[]byte("OPEN message"), reserved)
	if err != nil {
		panic(err)
	}
	fmt.Println("sign:", out.Sign(pkt), "checksum:", segment.SetTCPChecksum(pkt))
	fmt.Println("verify:", in.Verify(pkt))
	pkt[len(pkt)-1] ^= 1
	fmt.Println("damaged:", in.Verify(pkt))
	// Output:
	// sign: <nil> checksum: <nil>
	// verify: <nil>
	// damaged: md5sig: signature mismatch
}
