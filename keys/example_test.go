package keys_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/keys"
)

// A configuration is checked as the kernel checks it, before any keyring
// or socket sees it, and printed without its key.
func Example() {
	mkt := keys.AO{Peer: netip.MustParsePrefix("::ffff:192.0.2.0/120"), SendID: 1, RecvID: 2,
		Algorithm: "HMAC-SHA-1-96", Key: []byte("bgp-session-secret")}
	c, err := mkt.Validate()
	fmt.Println(c, err)

	mkt.MACLen = 20
	_, err = mkt.Validate()
	fmt.Println(err)

	_, err = keys.MD5{Peer: netip.MustParsePrefix("198.51.100.7/24"), Key: []byte("secret")}.Validate()
	fmt.Println(err)
	// Output:
	// keys.AO{peer 192.0.2.0/24, SendID 1, RecvID 2, hmac(sha1), maclen 12, exclude false, ifindex 0/false, key [redacted]} <nil>
	// keys: MAC length does not fit the SYN option space: maclen 20
	// keys: invalid TCP-MD5 key: peer prefix 198.51.100.7/24 has host bits set
}
