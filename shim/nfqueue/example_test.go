//go:build linux

package nfqueue_test

import (
	"log"

	"github.com/tcpsig/tcpsig/shim/nfqueue"
)

// Accept every packet rules send to queue 5. Binding a queue needs
// CAP_NET_ADMIN, so this example is compiled but not run.
func Example() {
	q, err := nfqueue.Open(nfqueue.Config{Num: 5})
	if err != nil {
		log.Fatal(err)
	}
	defer q.Close()
	var p nfqueue.Packet
	for q.Read(&p) == nil {
		if err := q.Verdict(p.ID, nfqueue.Accept, nil); err != nil {
			log.Fatal(err)
		}
	}
}
