package packetauth

import (
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

// TestPassThroughUncovered: a layer without keys returns every packet as
// it came, the same slice, in both directions.
func TestPassThroughUncovered(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := segment.AppendPacket(nil, segment.IP{Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2")},
		segment.Fields{SrcPort: 1, DstPort: 2, Flags: segment.SYN, Window: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func([]byte, []byte) ([]byte, error){l.Outbound, l.Inbound} {
		out, err := f(make([]byte, 0, 100), pkt)
		if err != nil || &out[0] != &pkt[0] || len(out) != len(pkt) {
			t.Fatalf("not passed through: %v", err)
		}
	}
}
