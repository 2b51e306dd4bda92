//go:build linux

package tcprepair_test

import (
	"log"
	"syscall"

	"github.com/tcpsig/tcpsig/harness/tcprepair"
)

// Place a socket's send sequence just below 2^32 before connecting it.
// Repair mode needs CAP_NET_ADMIN, so this example is compiled but not run.
func Example() {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		log.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := tcprepair.SetMode(fd, tcprepair.On); err != nil {
		log.Fatal(err)
	}
	if err := tcprepair.SetQueueSeq(fd, tcprepair.SendQueue, 0xffffff00); err != nil {
		log.Fatal(err)
	}
}
