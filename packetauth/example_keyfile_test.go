package packetauth_test

import (
	"fmt"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
)

// One keys file drives a layer for both kinds: its MKTs and its TCP-MD5
// keys each go into their keyring in one call (all or none). A SYN to the
// TCP-AO peer leaves with a TCP-AO option (kind 0x1d), one to the TCP-MD5
// peer with a TCP-MD5 option (kind 0x13), one to any other peer as it was.
func Example_keyfile() {
	f, err := keyfile.Parse([]byte(`{
	  "ao":  [{"name": "r2", "alg": "hmac(sha256)", "key": "text:ao secret", "sndid": 1, "rcvid": 2, "peer": "198.51.100.2"}],
	  "md5": [{"name": "r3", "peer": "198.51.100.3", "key": "text:md5 secret"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	aoRing, md5Ring := ao.NewKeyring(nil), md5sig.NewKeyring(nil)
	if _, err := aoRing.AddAll(f.AOConfigs()); err != nil {
		log.Fatal(err)
	}
	if _, err := md5Ring.AddAll(f.MD5Configs()); err != nil {
		log.Fatal(err)
	}
	f.Wipe() // the keyrings hold their own copies
	l, err := packetauth.New(packetauth.Config{AO: aoRing, MD5: md5Ring})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	local := netip.MustParseAddr("192.0.2.1")
	for _, peer := range []string{"198.51.100.2", "198.51.100.3", "198.51.100.4"} {
		syn, _ := segment.AppendPacket(nil, segment.IP{Src: local, Dst: netip.MustParseAddr(peer)},
			segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1000, Flags: segment.SYN, Window: 65535,
				Options: [][]byte{{2, 4, 0x05, 0xb4}}},
			nil)
		wire, err := l.Outbound(nil, syn)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("to %s: options %x\n", peer, wire[40:])
	}
	// Output:
	// to 198.51.100.2: options 1d10010294a4c42c96e1cf838d8d2632020405b4
	// to 198.51.100.3: options 01011312d866eb047b2d245ad668baa830b4f3b9020405b4
	// to 198.51.100.4: options 020405b4
}
