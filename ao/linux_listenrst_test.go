package ao

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"

	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/segment"
	"github.com/tcpsig/tcpsig/testvectors/linux"
)

// TestLinuxListenReset reproduces, byte for byte, RSTs that a Linux 6.12
// TCP-AO listener sent in reply to a signed ACK for no connection
// (testvectors/linux/listen-rst.json, from the qemu live cases
// *-listen-rst): listenerReset, given the listener's MKT, must produce
// the kernel's KeyID, RNextKeyID and MAC — the key of the ACK's own
// direction with ISNs (its seq, 0). The MKTs these RSTs need cannot be
// found when SendID ≠ RecvID, where the kernel sent nothing; and the
// ACK's sender cannot verify such a RST with the connection it signed the
// ACK for.
func TestLinuxListenReset(t *testing.T) {
	cases, err := linux.ListenResets()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		key, ack, rst := c.Key, c.ACK, c.RST
		in, err := segment.ParsePacket(ack)
		if err != nil {
			t.Fatalf("%s ack: %v", c.Name, err)
		}
		want, err := segment.ParsePacket(rst)
		if err != nil || want.Auth().AO == 0 {
			t.Fatalf("%s rst: %v (AO at %d)", c.Name, err, want.Auth().AO)
		}
		cfg := keys.AO{Peer: c.Peer, SendID: c.SendID, RecvID: c.RecvID, Algorithm: c.Alg, Key: key, MACLen: c.MACLen}
		ring := NewKeyring(nil)
		mustAdd(t, ring, cfg)
		got := bytes.Clone(rst)
		mine, _ := segment.ParsePacket(got)
		off := mine.Auth().AO
		clear(mine.Header()[off+2 : off+4+c.MACLen])
		if err := listenerReset(ring, &in, &mine); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if !bytes.Equal(got, rst) {
			t.Errorf("%s: listenerReset option %x, the kernel's %x", c.Name, mine.Header()[off:off+4+c.MACLen], want.Header()[off:off+4+c.MACLen])
		}
		// verifyListenerReset accepts the kernel's RST under the listener's
		// MKT and the mirror MKT its peer holds, and refuses one bit off.
		m := ring.LookupSend(in.Src(), c.SendID, 0)
		peerM := mustAdd(t, NewKeyring(nil), keys.AO{Peer: netip.PrefixFrom(want.Src(), want.Src().BitLen()), SendID: c.RecvID, RecvID: c.SendID, Algorithm: c.Alg, Key: key, MACLen: c.MACLen})
		for _, k := range []*MKT{m, peerM} {
			if err := verifyListenerReset(k, &in, &want); err != nil {
				t.Errorf("%s: verifyListenerReset(%v): %v", c.Name, k, err)
			}
		}
		bent := bytes.Clone(rst)
		bent[len(bent)-1] ^= 1
		if bs, _ := segment.ParsePacket(bent); !errors.Is(verifyListenerReset(m, &in, &bs), ErrBadMAC) {
			t.Errorf("%s: verifyListenerReset accepted a flipped MAC bit", c.Name)
		}
		// A reply signed with its own send key (TIME-WAIT, syncookies:
		// ISNs ack-1 and seq-1 of the ACK) does not produce this RST.
		mine, _ = segment.ParsePacket(got)
		lisn, risn := in.Header().Ack()-1, in.Header().Seq()-1
		if err := replyReset(ring, &in, &mine, lisn, risn); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(got, rst) {
			t.Errorf("%s: a reply's own key produced the listener's RST too", c.Name)
		}
		// SendID ≠ RecvID: the RNextKeyID names no RecvID.
		other := NewKeyring(nil)
		cfg.SendID, cfg.RecvID = c.RecvID, c.SendID+100
		mustAdd(t, other, cfg)
		mine, _ = segment.ParsePacket(bytes.Clone(rst))
		if err := listenerReset(other, &in, &mine); !errors.Is(err, ErrKeyNotFound) {
			t.Errorf("%s: listenerReset with SendID ≠ RecvID: %v, want ErrKeyNotFound", c.Name, err)
		}
		// The ACK's sender, holding the connection the ACK was signed for
		// (syncookie ISNs), cannot verify the RST.
		peer := NewKeyring(nil)
		mustAdd(t, peer, keys.AO{Peer: netip.PrefixFrom(want.Src(), want.Src().BitLen()), SendID: c.RecvID, RecvID: c.SendID, Algorithm: c.Alg, Key: key, MACLen: c.MACLen})
		var conn Conn
		lisn, risn = in.Header().Seq()-1, in.Header().Ack()-1
		err = restore(&conn, peer, Endpoint{Local: netipAddrPort(in.Src(), in.Header().SrcPort()), Remote: netipAddrPort(in.Dst(), in.Header().DstPort())}, Policy{},
			Endpoint{LocalISN: lisn, RemoteISN: risn, SendSeq: lisn + 1, RecvSeq: risn + 1, CurrentSendID: c.RecvID, RNextRecvID: c.SendID})
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Verify(&want); !errors.Is(err, ErrBadMAC) {
			t.Errorf("%s: the ACK's sender verified the listener's RST: %v", c.Name, err)
		}
		conn.Close()
	}
	t.Logf("%d Linux listener RSTs reproduced", len(cases))
}
