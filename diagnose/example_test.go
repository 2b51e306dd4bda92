package diagnose_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"slices"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/diagnose"
	"github.com/tcpsig/tcpsig/keyfile"
	"github.com/tcpsig/tcpsig/pcapverify"
	"github.com/tcpsig/tcpsig/segment"
)

// Why the client's segments of tcpsig's demo capture fail when the
// server's entry, ao[2], says hmac(sha256): the client signs with
// hmac(sha1).
func Example() {
	b, err := os.ReadFile("../cmd/tcpsig/testdata/demo.keys.json")
	if err != nil {
		log.Fatal(err)
	}
	kf, err := keyfile.Parse(bytes.Replace(b, []byte(`"hmac(sha1)"`), []byte(`"hmac(sha256)"`), 3)) // the third is ao[2]
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Open("../cmd/tcpsig/testdata/demo.pcap")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	c, err := pcapverify.Open(f)
	if err != nil {
		log.Fatal(err)
	}
	// The client's first segments, with the ISNs of the handshake.
	var d diagnose.Direction
	var isns ao.ISNs
	for len(d.Segments) < diagnose.MaxSegments {
		ip, _, err := c.Next()
		if err == io.EOF {
			break
		}
		seg, err := segment.ParsePacket(ip)
		if err != nil {
			continue
		}
		h := seg.Header()
		switch {
		case h.Flags()&segment.SYN != 0 && h.Flags()&segment.ACK == 0:
			isns.Src = h.Seq()
		case h.Flags()&segment.SYN != 0:
			isns.Dst = h.Seq()
			continue
		case seg.Src().String() != "127.0.0.2":
			continue
		}
		d.Segments = append(d.Segments, diagnose.Segment{Packet: slices.Clone(ip), ISNs: isns, ISNKnown: true})
		d.Failed++
	}
	dg := diagnose.Explain(kf, d)
	fmt.Println(dg.Cause)
	fmt.Println(dg.Entry)
	fmt.Println(dg.Fix)
	// Output:
	// algorithm
	// ao[2]
	// ao[2]: set "alg": "hmac(sha1)" (the peer signs with hmac(sha1))
}
