package netns_test

import (
	"fmt"
	"log"
	"net"
	"net/netip"

	"github.com/tcpsig/tcpsig/harness/netns"
)

// Serve and connect inside a private network namespace. Creating one needs
// root, so this example is compiled but not run.
func Example() {
	err := netns.Run(func() error {
		if err := netns.AddAddr("lo", netip.MustParsePrefix("2001:db8::1/128")); err != nil {
			return err
		}
		// Created on this goroutine, so inside the namespace.
		ln, err := net.Listen("tcp", "[2001:db8::1]:179")
		if err != nil {
			return err
		}
		defer ln.Close()
		fmt.Println("listening on", ln.Addr())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
