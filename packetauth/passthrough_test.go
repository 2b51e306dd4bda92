package packetauth

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/segment"
)

// TestPassThroughUncovered: a layer whose keyring has no keys returns
// every packet as it came, the same slice, in both directions.
func TestPassThroughUncovered(t *testing.T) {
	l, err := New(Config{AO: ao.NewKeyring(nil)})
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

// TestNewWithoutKeyring: a Config with neither keyring would cover nobody
// and pass everything unsigned: New refuses it with ErrNoKeyring (an
// ErrConfig), and a nil layer passes nothing.
func TestNewWithoutKeyring(t *testing.T) {
	l, err := New(Config{})
	if !errors.Is(err, ErrNoKeyring) || !errors.Is(err, ErrConfig) || l != nil {
		t.Fatalf("New(Config{}) = %v, %v; want nil, ErrNoKeyring", l, err)
	}
	if _, err := l.Inbound(nil, []byte{0x45}); !errors.Is(err, ErrConfig) {
		t.Errorf("Inbound on the nil layer: %v, want ErrConfig", err)
	}
}
