package linux

import (
	"testing"

	"github.com/tcpsig/tcpsig/segment"
)

// TestListenResets checks the shape of listen-rst.json: each case an ACK
// from the MKT's peer to the listener and a signed RST back, with the
// listener's IDs in the RST's option.
func TestListenResets(t *testing.T) {
	rsts, err := ListenResets()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rsts {
		ack, err := segment.ParsePacket(r.ACK)
		if err != nil {
			t.Fatalf("%s ACK: %v", r.Name, err)
		}
		rst, err := segment.ParsePacket(r.RST)
		if err != nil {
			t.Fatalf("%s RST: %v", r.Name, err)
		}
		if !r.Peer.Contains(ack.Src()) || rst.Src() != ack.Dst() || rst.Dst() != ack.Src() {
			t.Errorf("%s: ACK %v→%v, RST %v→%v, peer %v", r.Name, ack.Src(), ack.Dst(), rst.Src(), rst.Dst(), r.Peer)
		}
		if ack.Header().Flags() != segment.ACK || rst.Header().Flags() != segment.RST || ack.Auth().AO == 0 || rst.Auth().AO == 0 {
			t.Errorf("%s: flags %v / %v, AO at %d / %d", r.Name, ack.Header().Flags(), rst.Header().Flags(), ack.Auth().AO, rst.Auth().AO)
		}
		if o := rst.Header()[rst.Auth().AO:]; int(o[1]) != 4+r.MACLen || o[2] != r.SendID || o[3] != r.RecvID {
			t.Errorf("%s: RST option %x, want length %d, KeyID %d, RNextKeyID %d", r.Name, o[:4], 4+r.MACLen, r.SendID, r.RecvID)
		}
	}
	t.Logf("%d Linux listener RSTs", len(rsts))
}
