package keychain_test

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/tcpsig/tcpsig/keychain"
)

// A key chain from a router's configuration (RFC 8177 with RFC 9648's
// TCP-AO IDs) becomes keys file entries for the peer it protects; the
// entries become a key chain again.
func Example() {
	doc, err := os.ReadFile("testdata/yang/example-key-chain.json")
	if err != nil {
		panic(err)
	}
	f, err := keychain.Import(doc, map[string][]netip.Prefix{"bgp-192.0.2.1": {netip.MustParsePrefix("192.0.2.1/32")}})
	if err != nil {
		panic(err)
	}
	defer f.Wipe()
	fmt.Print(f)

	out, peers, err := keychain.Export(f)
	if err != nil {
		panic(err)
	}
	defer clear(out)
	chains, err := keychain.Parse(out)
	if err != nil {
		panic(err)
	}
	defer keychain.Wipe(chains)
	fmt.Print(keychain.String(chains))
	fmt.Println(peers)

	f.AO[1].Config.Algorithm = "kmac256-128"
	_, _, err = keychain.Export(f)
	fmt.Println(err)
	// Output:
	// ao[0] "bgp-192.0.2.1/1" hmac(sha1) peer 192.0.2.1/32 sndid 1 rcvid 1 maclen 12 send from 2026-12-01T00:00:00Z until 2027-01-01T00:00:00Z accept from 2026-12-01T00:00:00Z until 2027-01-02T00:00:00Z tolerance 1m0s key [21 bytes]
	// ao[1] "bgp-192.0.2.1/2" cmac(aes128) peer 192.0.2.1/32 sndid 2 rcvid 2 maclen 12 send from 2027-01-01T00:00:00Z accept from 2027-01-01T00:00:00Z tolerance 1m0s key [16 bytes]
	// key-chain bgp-192.0.2.1 (tolerance 1m0s)
	//   key 1 hmac(sha1) send-id 1 recv-id 1 send from 2026-12-01T00:00:00Z until 2027-01-01T00:00:00Z accept from 2026-12-01T00:00:00Z until 2027-01-02T00:00:00Z key [21 bytes]
	//   key 2 cmac(aes128) send-id 2 recv-id 2 send from 2027-01-01T00:00:00Z accept from 2027-01-01T00:00:00Z key [16 bytes]
	// map[bgp-192.0.2.1:[192.0.2.1/32]]
	// ao[1] ("bgp-192.0.2.1/2"): kmac256-128 has no identity in ietf-key-chain or ietf-tcp (they name hmac(sha1), hmac(sha256), hmac(sha384), hmac(sha512) and cmac(aes128))
}
