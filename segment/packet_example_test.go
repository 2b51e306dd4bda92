package segment_test

import (
	"fmt"
	"net/netip"

	"github.com/tcpsig/tcpsig/segment"
)

// Build a whole IPv4 SYN with an MSS option, as a userspace stack sends
// it: header, lengths and both checksums, in one call; then read it back.
func ExampleAppendPacket() {
	ip := segment.IP{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("198.51.100.2")}
	mss := []byte{2, 4, 0x05, 0xb4} // kind 2, length 4, 1460
	syn := segment.Fields{SrcPort: 40000, DstPort: 179, Seq: 1000, Flags: segment.SYN, Window: 65535, Options: [][]byte{mss}}
	pkt, err := segment.AppendPacket(make([]byte, 0, 64), ip, syn, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%x\n", pkt)

	s, _ := segment.ParsePacket(pkt)
	off, end := segment.TCPOffset(pkt, &s)
	tcp := segment.TCP(pkt[off:end])
	fmt.Println(len(pkt), "bytes; flags", tcp.Flags(), "SYN only:", tcp.Flags().Only(segment.SYN, segment.SYN|segment.ACK))
	fmt.Println("checksum right:", segment.TCPChecksum(s.Src(), s.Dst(), tcp) == tcp.Checksum())
	// Output:
	// 4500002c0000400040064e95c0000201c63364029c4000b3000003e8000000006002ffff0b140000020405b4
	// 44 bytes; flags S SYN only: true
	// checksum right: true
}
