package netstack

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// TestPairRSTClosedPort: a SYN to a port where nothing listens. netstack
// answers it with a RST. To a TCP-MD5 peer the RST is signed and the
// dialer sees the refusal at once; to a TCP-AO peer the layer cannot sign
// it (the connection has only the peer's ISN) and drops it as ErrNoConn,
// so the dialer only times out.
func TestPairRSTClosedPort(t *testing.T) {
	for _, alg := range []string{"md5", "hmac(sha1)"} {
		t.Run(alg, func(t *testing.T) {
			p, err := newPair(alg, 1500)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			c, err := dialGonet(p.a, netip.AddrPortFrom(pairB.Addr(), 81), 1500*time.Millisecond)
			if err == nil {
				c.Close()
				t.Fatal("connected to a closed port")
			}
			ca, cb := p.la.Counters(), p.lb.Counters()
			t.Logf("dial: %v; client %+v; server %+v", err, ca, cb)
			if alg == "md5" {
				if !strings.Contains(err.Error(), "refused") || ca.Verified != 1 || cb.Signed != 1 || cb.Dropped.Total() != 0 {
					t.Fatalf("want the signed RST to refuse the connection: %v; client %+v; server %+v", err, ca, cb)
				}
				return
			}
			if strings.Contains(err.Error(), "refused") || ca.Verified != 0 || cb.Signed != 0 ||
				cb.Verified == 0 || cb.Dropped.NoConn != cb.Verified || cb.Dropped.Total() != cb.Dropped.NoConn {
				t.Fatalf("want every RST dropped as NoConn, one per verified SYN: %v; client %+v; server %+v", err, ca, cb)
			}
		})
	}
}

// TestPairUnknownConnection: a covered peer's segment for no connection,
// signed with the right key (as after a restart). TCP-AO: it never
// reaches netstack (its ISNs are unknown, so it cannot be verified), and
// netstack sends no RST; the layer counts it as NoConn. TCP-MD5 needs no
// ISNs: the segment verifies, netstack answers it with a RST, and that RST
// goes out signed, as Linux answers it.
func TestPairUnknownConnection(t *testing.T) {
	for _, alg := range []string{"md5", "hmac(sha1)"} {
		t.Run(alg, func(t *testing.T) {
			p, err := newPair(alg, 1500)
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			// An ACK from a to b, as a's layer signs it once it tracks a
			// connection: seed one on a's side only.
			local, remote := netip.AddrPortFrom(pairA.Addr(), 40000), netip.AddrPortFrom(pairB.Addr(), 80)
			ack, err := segment.AppendPacket(nil, segment.IP{Src: local.Addr(), Dst: remote.Addr()},
				segment.Fields{SrcPort: local.Port(), DstPort: remote.Port(), Seq: 1000, Ack: 2000, Flags: segment.ACK, Window: 1000}, []byte("data"))
			if err != nil {
				t.Fatal(err)
			}
			if alg != "md5" {
				if err := seedAO(p.la, local, remote); err != nil {
					t.Fatal(err)
				}
			}
			signed, err := p.la.Outbound(make([]byte, 0, len(ack)+40), ack)
			if err != nil {
				t.Fatal(err)
			}
			before := p.segments.Load()
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(signed)})
			p.eb.DeliverNetworkPacket(ipv4.ProtocolNumber, pkt)
			pkt.DecRef()
			time.Sleep(200 * time.Millisecond)
			cb := p.lb.Counters()
			t.Logf("server layer %+v; packets on the link since %d", cb, p.segments.Load()-before)
			if alg == "md5" {
				if cb.Verified != 1 || cb.Signed != 1 || cb.Dropped.Total() != 0 || p.segments.Load() != before+1 {
					t.Fatalf("want the segment verified and answered by one signed RST: %+v", cb)
				}
				return
			}
			if cb.Dropped.NoConn != 1 || cb.Verified != 0 || cb.Signed != 0 || p.segments.Load() != before {
				t.Fatalf("want the segment dropped as NoConn and no answer: %+v", cb)
			}
		})
	}
}

// seedAO makes l track an established TCP-AO connection with made-up ISNs
// (KeyID 1 both ways), as a front end restarted mid-session would.
func seedAO(l *packetauth.Layer, local, remote netip.AddrPort) error {
	st := ao.Endpoint{Local: local, Remote: remote, LocalISN: 999, RemoteISN: 1999, SendSeq: 1000, RecvSeq: 2000, CurrentSendID: 1, RNextRecvID: 1}
	if err := l.Seed(st); err != nil {
		return errors.Join(errors.New("seed"), err)
	}
	return nil
}
