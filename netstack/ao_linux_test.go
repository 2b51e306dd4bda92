package netstack

// TCP-AO against a Linux kernel: a gVisor stack wrapped with a packetauth
// layer over a TUN device, and kernel sockets with TCP-AO keys. The host's
// kernel usually lacks CONFIG_TCP_AO (Debian's 6.12 and 6.18 do), so these
// tests skip there; harness/kernellab/run-qemu.sh runs this package's test
// binary inside its Linux 6.12 guest (TCPSIG_CASES=netstack for only it).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/ao"
	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/packetauth"
	"github.com/tcpsig/tcpsig/segment"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
)

func needAO(t *testing.T) {
	t.Helper()
	needRoot(t)
	if err := linuxsock.ProbeAO(); errors.Is(err, linuxsock.ErrNoAO) {
		t.Skip("no CONFIG_TCP_AO in this kernel (harness/kernellab/run-qemu.sh runs this test under Linux 6.12): ", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// aoKeys are two MKTs (KeyIDs 1 and 2, the same both ways) for peer,
// 2 first: the last added, 1, is where both sides start.
func aoKeys(peer netip.Addr, alg, secret string) []keys.AO {
	var cs []keys.AO
	for _, id := range []uint8{2, 1} {
		cs = append(cs, keys.AO{Peer: netip.PrefixFrom(peer, peer.BitLen()), SendID: id, RecvID: id,
			Algorithm: alg, Key: []byte(fmt.Sprintf("%s %d", secret, id)), MACLen: 12})
	}
	return cs
}

func aoLayer(t *testing.T, peer netip.Addr, alg, secret string) (*packetauth.Layer, *ao.Keyring) {
	t.Helper()
	ring := ao.NewKeyring(nil)
	for _, c := range aoKeys(peer, alg, secret) {
		if _, err := ring.Add(c); err != nil {
			t.Fatal(err)
		}
	}
	l, err := packetauth.New(packetauth.Config{AO: ring})
	if err != nil {
		t.Fatal(err)
	}
	return l, ring
}

func aoCounters() (good, bad uint64, err error) {
	m, err := kstat.TCPExt()
	if err != nil {
		return 0, 0, err
	}
	return m["TCPAOGood"], m["TCPAOBad"], nil
}

// aoBulk is what each side sends in TestKernelAO.
func aoBulk() int64 {
	if raceEnabled {
		return 2 << 20
	}
	return 16 << 20
}

// TestKernelAO moves 16 MiB each way between gonet and kernel TCP-AO
// sockets, per algorithm and address family, either side opening. During
// the transfer the kernel rotates (TCP_AO_INFO set_current and set_rnext
// to KeyID 2: the layer's current key follows the kernel's RNextKeyID),
// then the gVisor side does (the connection looked up by 4-tuple through
// the wrapper, SetCurrent and SetRNext 2: the kernel's current key
// follows). Both end on KeyID 2 both ways, the kernel's segments verified
// under the layer's MKT 2, TCPAOGood rose, TCPAOBad did not, the layer
// refused nothing.
func TestKernelAO(t *testing.T) {
	needAO(t)
	n := aoBulk()
	for _, alg := range []string{"hmac(sha1)", "cmac(aes128)", "hmac(sha256)"} {
		for _, v6 := range []bool{false, true} {
			for _, accept := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/v6=%v/accept=%v", alg, v6, accept), func(t *testing.T) {
					kp, naddr := addrs(v6)
					layer, ring := aoLayer(t, kp.Addr(), alg, "tcpsig netstack ao")
					var ep *Endpoint
					inKernelNet(t, v6, wrapWith(t, layer, &ep), func(k *kernelNet) error {
						good0, bad0, err := aoCounters()
						if err != nil {
							return err
						}
						keys := linuxsock.Keys{AO: aoKeys(naddr, alg, "tcpsig netstack ao")}
						var info linuxsock.AOInfo
						var ci packetauth.ConnInfo
						rotate := func(kc *net.TCPConn, nc *gonet.TCPConn) error {
							if err := checkOutbound(k, ep.Layer(), alg, naddr); err != nil {
								return err
							}
							stage := func(what string) {
								if i, err := linuxsock.ReadAOInfo(kc); err == nil {
									t.Logf("%s: kernel socket good %d, bad %d", what, i.Counters.Good, i.Counters.Bad)
								}
							}
							if err := waitData(k, n/4); err != nil {
								return err
							}
							stage("before the kernel's rotation")
							if err := linuxsock.SelectAOKeys(kc, linuxsock.Current|linuxsock.RNext, 2, 2); err != nil {
								return fmt.Errorf("kernel set_current/set_rnext: %w", err)
							}
							if err := waitData(k, n/2); err != nil {
								return err
							}
							stage("before gVisor's rotation")
							c, err := layerConn(ep, nc)
							if err != nil {
								return err
							}
							if err := c.SetCurrent(2); err != nil {
								return err
							}
							if err := c.SetRNext(2); err != nil {
								return err
							}
							if err := waitData(k, 3*n/4); err != nil {
								return err
							}
							if info, err = linuxsock.ReadAOInfo(kc); err != nil {
								return err
							}
							for c := range ep.Layer().Conns {
								ci = c
							}
							return nil
						}
						terr := transfer(k, accept, n, keys, rotate)
						good1, bad1, err := aoCounters()
						if err != nil {
							return err
						}
						checked, refused := k.tap.checkResult()
						t.Logf("packets to the kernel verified apart from the kernel: %d, refused %d", checked, len(refused))
						for _, r := range refused {
							t.Logf("refused: %s", r)
						}
						out, in, c := settled(k, layer)
						if terr != nil {
							m, _ := kstat.TCPExt()
							t.Logf("failed: to kernel %+v; from kernel %+v; layer %+v; TCPAOGood %d, TCPAOBad %d, TCPAOKeyNotFound %d, TCPAORequired %d",
								out, in, c, good1-good0, bad1-bad0, m["TCPAOKeyNotFound"], m["TCPAORequired"])
							for ci := range layer.Conns {
								t.Logf("layer conn %+v", ci)
							}
							for _, b := range k.tap.out.recent() {
								t.Logf("to kernel: %x", b)
							}
							return terr
						}
						t.Logf("%d bytes each way, sha256 equal; to kernel %+v; from kernel %+v", n, out, in)
						t.Logf("layer %+v; kernel TCPAOGood %d -> %d, TCPAOBad %d -> %d", c, good0, good1, bad0, bad1)
						t.Logf("kernel after the rotations: current %d, rnext %d, counters %+v; layer: current %d, rnext %d",
							info.Current, info.RNext, info.Counters, ci.CurrentKeyID, ci.RNextKeyID)
						// Key 2 in use both ways: the kernel signed segments the
						// layer verified with it, and verified the layer's (the
						// kernel's TCPAOBad stays put while gVisor sends with it).
						m2 := ring.Find(netip.PrefixFrom(kp.Addr(), kp.Addr().BitLen()), 2, 2)
						good2, bad2 := m2.Counters()
						t.Logf("layer's MKT 2: verified %d, bad %d", good2, bad2)
						switch {
						case bad1 != bad0 || good1-good0 < uint64(out.Packets)/2:
							return fmt.Errorf("kernel TCPAOGood %d -> %d, TCPAOBad %d -> %d for %d segments sent", good0, good1, bad0, bad1, out.Packets)
						case c.Dropped.Total() != c.Dropped.NoConn || (c.Dropped.NoConn > 0 && c.Closed == 0):
							// Only a segment the kernel had in flight when a RST
							// of the teardown ended the connection may find none
							// (as it would find no socket).
							return fmt.Errorf("the layer refused %+v", c.Dropped)
						case out.Signed != out.Packets || in.Signed != in.Packets:
							return fmt.Errorf("unsigned segments on the wire: to kernel %+v, from kernel %+v", out, in)
						case info.Current != 2 || info.RNext != 2 || ci.CurrentKeyID != 2 || ci.RNextKeyID != 2:
							return errors.New("the rotations did not end on KeyID 2 on both sides")
						case len(refused) > 0:
							return fmt.Errorf("%d packets to the kernel refused by a second layer", len(refused))
						case good2 == 0:
							return errors.New("no segment of the kernel's verified under MKT 2")
						}
						return nil
					})
				})
			}
		}
	}
}

// layerConn is the connection ep's layer tracks for the gonet end nc.
func layerConn(ep *Endpoint, nc *gonet.TCPConn) (*ao.Conn, error) {
	local, remote := nc.LocalAddr().(*net.TCPAddr).AddrPort(), nc.RemoteAddr().(*net.TCPAddr).AddrPort()
	c, ok := ep.Layer().Conn(local, remote)
	if !ok {
		return nil, fmt.Errorf("the layer tracks no %v -> %v", local, remote)
	}
	return c, nil
}

// waitData waits until the tap has seen want payload bytes each way on
// average (at most a minute).
func waitData(k *kernelNet, want int64) error {
	deadline := time.Now().Add(time.Minute)
	for {
		out, in := k.tap.out.stats(), k.tap.in.stats()
		if out.Bytes+in.Bytes >= 2*want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d payload bytes after a minute", out.Bytes+in.Bytes)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestKernelAOWrongKey: different keys on the two sides (KeyIDs equal, so
// the MAC is what fails). gVisor dialing: the kernel counts every SYN in
// TCPAOBad and its listener gets nothing. The kernel dialing: the layer
// refuses every SYN (BadMAC) and the gonet listener accepts nothing.
func TestKernelAOWrongKey(t *testing.T) {
	needAO(t)
	for _, v6 := range []bool{false, true} {
		kp, naddr := addrs(v6)
		t.Run(fmt.Sprintf("v6=%v/gvisor-dials", v6), func(t *testing.T) {
			layer, _ := aoLayer(t, kp.Addr(), "hmac(sha256)", "wrong")
			var ep *Endpoint
			inKernelNet(t, v6, wrapWith(t, layer, &ep), func(k *kernelNet) error {
				lc := linuxsock.ListenConfig(linuxsock.Keys{AO: aoKeys(naddr, "hmac(sha256)", "right")})
				ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(k.kaddr, kPort).String())
				if err != nil {
					return err
				}
				defer ln.Close()
				_, bad0, err := aoCounters()
				if err != nil {
					return err
				}
				if c, err := dialGonet(k.s, netip.AddrPortFrom(k.kaddr, kPort), 4*time.Second); err == nil {
					c.Close()
					return errors.New("gonet connected with a wrong key")
				}
				time.Sleep(200 * time.Millisecond)
				_, bad1, err := aoCounters()
				if err != nil {
					return err
				}
				out := k.tap.out.stats()
				t.Logf("SYNs sent %d, signed %d; kernel TCPAOBad %d -> %d", out.SYNs, out.Signed, bad0, bad1)
				switch {
				case out.SYNs < 2 || out.Signed != out.Packets:
					return fmt.Errorf("want >= 2 signed SYNs, got %+v", out)
				case bad1-bad0 != uint64(out.SYNs):
					return fmt.Errorf("TCPAOBad rose by %d for %d SYNs", bad1-bad0, out.SYNs)
				case kstat.Pending(ln.(*net.TCPListener)):
					return errors.New("the kernel listener has a connection")
				}
				return nil
			})
		})
		t.Run(fmt.Sprintf("v6=%v/kernel-dials", v6), func(t *testing.T) {
			layer, _ := aoLayer(t, kp.Addr(), "hmac(sha256)", "right")
			var ep *Endpoint
			inKernelNet(t, v6, wrapWith(t, layer, &ep), func(k *kernelNet) error {
				d := linuxsock.Dialer(linuxsock.Keys{AO: aoKeys(k.naddr, "hmac(sha256)", "wrong")})
				d.Timeout = 4 * time.Second
				if err := k.dialRefused(d); err != nil {
					return err
				}
				in, out, c := k.tap.in.stats(), k.tap.out.stats(), layer.Counters()
				t.Logf("kernel SYNs %d; layer %+v; packets to the kernel %d", in.SYNs, c.Dropped, out.Packets)
				switch {
				case in.SYNs < 2 || c.Dropped.BadMAC != uint64(in.SYNs):
					return fmt.Errorf("want every one of >= 2 SYNs refused as BadMAC: SYNs %d, layer %+v", in.SYNs, c.Dropped)
				case c.Verified != 0 || out.Packets != 0:
					return fmt.Errorf("verified %d, answered %d", c.Verified, out.Packets)
				}
				return nil
			})
		})
	}
}

// checkOutbound makes the tap verify every further packet to the kernel
// with a layer of its own, seeded as the kernel's side of the connection
// the layer l tracks: a second opinion next to the kernel's TCPAOBad.
func checkOutbound(k *kernelNet, l *packetauth.Layer, alg string, naddr netip.Addr) error {
	var ci packetauth.ConnInfo
	for c := range l.Conns {
		ci = c
	}
	if ci.Kind != packetauth.KindAO {
		return errors.New("no TCP-AO connection to check")
	}
	ring := ao.NewKeyring(nil)
	for _, c := range aoKeys(naddr, alg, "tcpsig netstack ao") {
		if _, err := ring.Add(c); err != nil {
			return err
		}
	}
	peer, err := packetauth.New(packetauth.Config{AO: ring})
	if err != nil {
		return err
	}
	seeded := false
	k.tap.setCheck(func(b []byte) error {
		seg, err := segment.ParsePacket(b)
		if err != nil {
			return nil
		}
		if !seeded {
			st := ao.Endpoint{Local: ci.Remote, Remote: ci.Local, LocalISN: ci.RemoteISN, RemoteISN: ci.LocalISN, SendSeq: seg.Header().Ack(), RecvSeq: seg.Header().Seq(),
				CurrentSendID: 1, RNextRecvID: 1}
			if err := peer.Seed(st); err != nil {
				return err
			}
			seeded = true
		}
		_, err = peer.Inbound(nil, b)
		return err
	})
	return nil
}
