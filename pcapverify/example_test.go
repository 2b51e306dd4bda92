package pcapverify_test

import (
	"fmt"
	"log"
	"os"

	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
)

// Verify the capture that tcpsig verify checks when given none: a TCP-AO
// connection between two Linux 6.12 sockets, with a key rotation.
func Example() {
	kf, err := keyfile.Load("../cmd/tcpsig/testdata/demo.keys.json")
	if err != nil {
		log.Fatal(err)
	}
	keys, err := pcapverify.LoadKeys(kf)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Open("../cmd/tcpsig/testdata/demo.pcap")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	rep, err := pcapverify.Verify(f, keys, nil, func(r *pcapverify.Result) {
		if r.Verdict != pcapverify.Good {
			fmt.Printf("frame %d: %v: %s\n", r.Frame, r.Verdict, r.Reason)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d packets, %+v\n", rep.Totals.Packets, rep.Totals.Verdicts())
	for _, d := range rep.Flows[0].Directions {
		fmt.Printf("%s (ISN from its %s): %v KeyIDs %v\n", d.From, d.ISNFrom, d.Algs, d.KeyIDs)
	}
	// Output:
	// 49 packets, {Good:49 Bad:0 NoKey:0 Unsigned:0 Malformed:0 UnknownISN:0 Untracked:0}
	// 127.0.0.2:40001 (ISN from its SYN): [hmac(sha1)] KeyIDs [100 101]
	// 127.0.0.1:40002 (ISN from its SYN-ACK): [hmac(sha1)] KeyIDs [200 201]
}
