package md5sig_test

import (
	"errors"
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
	return segment.AppendTCP(nil, segment.Fields{SrcPort: sport, DstPort: dport, Seq: seq, Ack: ack, Flags: flags, Window: 65535,
		Options: [][]byte{opt}})
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

	seg.Frags()[0][0] ^= 1 // damaged in flight
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

// A route server's TCP-MD5 keys go into its keyring in one call, all or
// none: a list that names one peer twice is refused whole, the error
// naming both entries.
func ExampleKeyring_AddAll() {
	md5 := func(peer, key string) keys.MD5 { return keys.MD5{Peer: netip.MustParsePrefix(peer), Key: []byte(key)} }
	ring := md5sig.NewKeyring(nil)
	ks, err := ring.AddAll([]keys.MD5{md5("192.0.2.1/32", "r1 secret"), md5("2001:db8::/64", "ixp secret")}, []string{"r1", "ixp"})
	fmt.Println(len(ks), err, ring.Len())

	_, err = ring.AddAll([]keys.MD5{md5("192.0.2.7/32", "r7 secret"), md5("::ffff:192.0.2.7/128", "typo")}, []string{"r7", "r7-v6"})
	fmt.Println(errors.Is(err, md5sig.ErrDuplicate), ring.Len())
	fmt.Println(err)
	// Output:
	// 2 <nil> 2
	// true 2
	// md5[1] ("r7-v6"): md5sig: another entry of the list has this peer and binding: md5[0] ("r7")
}
