package linuxao_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/linuxao"
)

// Lay out a TCP_AO_ADD_KEY request for the kernel: the 288-byte struct
// tcp_ao_add, with the algorithm name at offset 128 and the IDs at 203.
func Example() {
	b, err := linuxao.AddKey{
		Peer: netip.MustParsePrefix("192.0.2.2/32"), Alg: "hmac(sha256)",
		SndID: 100, RcvID: 200, MACLen: 12, Key: []byte("secret"),
	}.Marshal()
	if err != nil {
		panic(err)
	}
	fmt.Println(len(b), string(b[128:140]), b[203], b[204], b[205], b[207])
	// Output: 288 hmac(sha256) 100 200 12 6
}
