package segment_test

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tcpsig/tcpsig/segment"
)

// Parse the client SYN of RFC 9235 §4.1.1 and collect what a TCP-AO MAC
// covers before the header: the pseudo-header.
func Example() {
	pkt, _ := hex.DecodeString("45e0004cdd0f4000ff06bf6b0a0b0c0dac1b1c1d" +
		"e9d700b3fbfbab5a00000000e002ffffcac40000" +
		"020405b4010303080402080a00155ab700000000" +
		"1d103d542ee437c6f8ede6d7c4d602e7")

	s, err := segment.ParsePacket(pkt)
	if err != nil {
		fmt.Println(err)
		return
	}
	h, ao := s.Header(), s.Auth().AO
	fmt.Printf("%v:%d > %v:%d Flags [%v] seq %#x, %d bytes\n",
		s.Src(), h.SrcPort(), s.Dst(), h.DstPort(), h.Flags(), h.Seq(), s.Len())
	fmt.Printf("AO at %d: KeyID %d RNextKeyID %d MAC %x\n",
		ao, h[ao+2], h[ao+3], h[ao+4:ao+s.Auth().AOLen])

	var buf [40]byte
	ph := segment.AppendPseudoHeader(buf[:0], s.Src(), s.Dst(), s.Len())
	fmt.Printf("pseudo-header %x\n", ph)

	// Hostile input: the timestamp option (10 bytes at packet offset 50)
	// replaced by two NOPs and a second AO option. Linux drops it.
	copy(pkt[50:], []byte{segment.OptionKindNOP, segment.OptionKindNOP, segment.OptionKindAO, 8})
	_, err = segment.ParsePacket(pkt)
	fmt.Println(errors.Is(err, segment.ErrDuplicateAuth), err)
	// Output:
	// 10.11.12.13:59863 > 172.27.28.29:179 Flags [S] seq 0xfbfbab5a, 56 bytes
	// AO at 40: KeyID 61 RNextKeyID 84 MAC 2ee437c6f8ede6d7c4d602e7
	// pseudo-header 0a0b0c0dac1b1c1d00060038
	// true segment: duplicate MD5 or AO option
}
