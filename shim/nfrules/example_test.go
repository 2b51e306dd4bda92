//go:build linux

package nfrules_test

import (
	"fmt"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/shim/nfrules"
)

// Queue the host's TCP with two BGP peers to queue 5, then remove the rules.
// Needs CAP_NET_ADMIN, so this example is compiled but not run.
func Example() {
	m, err := nfrules.Install(nfrules.Spec{
		Table: "tcpsig-example",
		Queue: 5,
		Peers: []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("2001:db8::1/128")},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer nfrules.Remove("tcpsig-example")
	fmt.Println("queueing by", m)
}
