package onpath_test

import (
	"fmt"
	"log"
	"net/netip"

	"github.com/tcpsig/tcpsig/harness/onpath"
	"github.com/tcpsig/tcpsig/segment"
)

// Follow a session from what crosses the wire, and forge the reset that
// would abort it at B: at exactly the sequence number B expects next.
func Example() {
	a := netip.MustParseAddrPort("192.0.2.1:40000")
	b := netip.MustParseAddrPort("198.51.100.2:179")
	tr := onpath.NewTracker()
	for _, s := range []struct {
		from, to netip.AddrPort
		f        segment.Fields
		data     string
	}{
		{a, b, segment.Fields{Seq: 1000, Flags: segment.SYN, Window: 64240}, ""},
		{b, a, segment.Fields{Seq: 7000, Ack: 1001, Flags: segment.SYN | segment.ACK, Window: 65160}, ""},
		{a, b, segment.Fields{Seq: 1001, Ack: 7001, Flags: segment.PSH | segment.ACK, Window: 502}, "OPEN"},
		{b, a, segment.Fields{Seq: 7001, Ack: 1005, Flags: segment.ACK, Window: 509}, ""},
	} {
		s.f.SrcPort, s.f.DstPort = s.from.Port(), s.to.Port()
		p, err := segment.AppendPacket(nil, segment.IP{Src: s.from.Addr(), Dst: s.to.Addr()}, s.f, []byte(s.data))
		if err != nil {
			log.Fatal(err)
		}
		tr.Observe(p)
	}
	v := tr.View(onpath.Flow{Peer: a, Target: b})
	fmt.Println("B expects", v.RcvNxt(), "within", v.RcvWindow(), "bytes")
	rst, err := onpath.Build(nil, onpath.RST, v)
	if err != nil {
		log.Fatal(err)
	}
	s, err := segment.ParsePacket(rst)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Src(), "->", s.Dst(), s.Header().Flags(), "seq", s.Header().Seq(), "ack", s.Header().Ack())
	// Output:
	// B expects 1005 within 509 bytes
	// 192.0.2.1 -> 198.51.100.2 R. seq 1005 ack 7001
}
