package keyfile_test

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/md5sig"
)

// A router's keys file read into the engine's keyrings; printing it never
// shows a key, and a mistake names the entry and field.
func Example() {
	f, err := keyfile.Read(strings.NewReader(`{
	  "ao":  [{"name": "r2-2026", "alg": "hmac(sha256)", "key": "text:bgp-session-secret",
	           "sndid": 1, "rcvid": 2, "peer": "192.0.2.2"}],
	  "md5": [{"peer": "198.51.100.0/24", "key": "hex:73656372657400"}]}`))
	if err != nil {
		panic(err)
	}
	fmt.Print(f)

	aoRing, md5Ring := ao.NewKeyring(nil), md5sig.NewKeyring(nil)
	if _, err := aoRing.AddAll(f.AOConfigs()); err != nil {
		panic(err)
	}
	if _, err := md5Ring.AddAll(f.MD5Configs()); err != nil {
		panic(err)
	}
	f.Wipe() // the keyrings hold their own copies
	fmt.Println("MKT for KeyID 2 from 192.0.2.2:", aoRing.LookupRecv(netip.MustParseAddr("192.0.2.2"), 2, 0) != nil)
	fmt.Println("MD5 key for 198.51.100.7:", md5Ring.Lookup(netip.MustParseAddr("198.51.100.7"), 0) != nil)

	_, err = keyfile.Parse([]byte(`{"ao": [{"alg": "hmac(sha1)", "key": "text:k", "sndid": 1, "rcvid": 300, "peer": "192.0.2.2"}]}`))
	fmt.Println(err)
	// Output:
	// ao[0] "r2-2026" hmac(sha256) peer 192.0.2.2/32 sndid 1 rcvid 2 maclen 12 key [18 bytes]
	// md5[0] peer 198.51.100.0/24 key [7 bytes]
	// MKT for KeyID 2 from 192.0.2.2: true
	// MD5 key for 198.51.100.7: true
	// ao[0].rcvid: 300 is not a KeyID (0..255)
}
