package segment

import (
	"bytes"
	"testing"
)

func TestAppendTCP(t *testing.T) {
	ao := []byte{29, 16, 61, 84, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // RFC 9235's option shape
	mss := []byte{2, 4, 0x05, 0xb4}
	h := AppendTCP(nil, Fields{SrcPort: 59863, DstPort: 179, Seq: 0xfbfbab5a, Flags: SYN, Window: 65535,
		Options: [][]byte{ao, mss, {3, 3, 8}}})
	if len(h) != 44 || h[12]>>4 != 11 || h[len(h)-1] != OptionKindNOP {
		t.Fatalf("header %x", h)
	}
	tcp := TCP(h)
	if tcp.SrcPort() != 59863 || tcp.DstPort() != 179 || tcp.Seq() != 0xfbfbab5a || tcp.Flags() != SYN || tcp.Window() != 65535 {
		t.Fatalf("fields: %x", h)
	}
	a, err := tcp.AuthOptions()
	if err != nil || a.AO != 20 || a.AOLen != 16 {
		t.Fatalf("auth %+v %v", a, err)
	}
	if !bytes.Equal(h[36:40], []byte{2, 4, 0x05, 0xb4}) {
		t.Fatalf("MSS after AO: %x", h[20:])
	}
	if AppendTCP(nil, Fields{Options: [][]byte{make([]byte, 41)}}) != nil {
		t.Fatal("41 bytes of options accepted")
	}
}
