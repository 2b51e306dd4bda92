package kdf_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/kdf"
	"github.com/tcpsig/tcpsig/mac"
)

// Derive RFC 9235 §4.1.1's Send_SYN traffic key: master key "testvector",
// HMAC-SHA-1, the client's SYN (the receiver's ISN is 0 for SYN keys).
func Example() {
	alg, _ := mac.Lookup("hmac(sha1)")
	var m kdf.Master
	if err := m.Init(alg, []byte("testvector")); err != nil {
		panic(err)
	}
	in := kdf.Input{
		Src: netip.MustParseAddr("10.11.12.13"), Dst: netip.MustParseAddr("172.27.28.29"),
		SrcPort: 59863, DstPort: 179, SrcISN: 0xfbfbab5a, DstISN: 0,
	}
	key, err := m.Derive(alg.NewContext(), make([]byte, kdf.MaxInputLen), &in, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", key)
	// Output: 6d63ef1b02fe1509d4b1402707fd7b0416abb74f
}
