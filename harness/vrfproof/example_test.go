//go:build linux

package vrfproof_test

import (
	"log"

	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/vrfproof"
)

// Run the VRF proof in a namespace of its own. It needs root and a kernel
// with VRF, so this example is compiled but not run.
func Example() {
	if err := netns.Run(func() error { return vrfproof.Run(log.Printf) }); err != nil {
		log.Fatal(err)
	}
}
