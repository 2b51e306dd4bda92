package prefixmap_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/internal/prefixmap"
)

func Example() {
	// A TCP-MD5 keyring: keys by peer prefix, tag 0.
	var keys prefixmap.Map[string]
	keys.Insert(netip.MustParsePrefix("0.0.0.0/0"), 0, "default")
	keys.Insert(netip.MustParsePrefix("192.0.2.0/24"), 0, "site")
	keys.Insert(netip.MustParsePrefix("192.0.2.7/32"), 0, "peer")

	// Longest prefix first; stop at the first, as TCP-MD5 does.
	for _, a := range []string{"192.0.2.7", "::ffff:192.0.2.8", "198.51.100.1", "2001:db8::1"} {
		best := "none"
		keys.Lookup(netip.MustParseAddr(a), 0, func(p netip.Prefix, key string) bool {
			best = key + " (" + p.String() + ")"
			return false
		})
		fmt.Println(a, "->", best)
	}

	// Before adding a key, a keyring asks what it would overlap.
	keys.Overlaps(netip.MustParsePrefix("192.0.2.0/25"), 0, func(p netip.Prefix, key string) bool {
		fmt.Println("overlaps", p, key)
		return true
	})
	// Output:
	// 192.0.2.7 -> peer (192.0.2.7/32)
	// ::ffff:192.0.2.8 -> site (192.0.2.0/24)
	// 198.51.100.1 -> default (0.0.0.0/0)
	// 2001:db8::1 -> none
	// overlaps 192.0.2.0/24 site
	// overlaps 0.0.0.0/0 default
	// overlaps 192.0.2.7/32 peer
}
