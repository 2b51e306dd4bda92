package testvectors_test

import (
	"fmt"
	"log"

	"github.com/tcpsig/tcpsig/testvectors"
)

// Count the RFC 9235 segments per algorithm and IP version.
func ExampleRFC9235() {
	set, err := testvectors.RFC9235()
	if err != nil {
		log.Fatal(err)
	}
	n := map[string]int{}
	for _, v := range set.Vectors {
		n[fmt.Sprintf("%s IPv%d", v.Alg, v.IPVersion)]++
	}
	fmt.Println(len(set.Vectors), "vectors, MAC length", set.MACLen)
	for _, k := range []string{"hmac(sha1) IPv4", "hmac(sha1) IPv6", "cmac(aes128) IPv4", "cmac(aes128) IPv6"} {
		fmt.Println(k, n[k])
	}
	// Output:
	// 32 vectors, MAC length 12
	// hmac(sha1) IPv4 8
	// hmac(sha1) IPv6 8
	// cmac(aes128) IPv4 8
	// cmac(aes128) IPv6 8
}
