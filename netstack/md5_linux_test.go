package netstack

// TCP-MD5 against the host kernel: a gVisor stack wrapped with a
// packetauth layer over a TUN device, and kernel sockets with TCP_MD5SIG,
// in a network namespace the test creates.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
	"github.com/tcpsig/tcpsig/md5sig"
	"github.com/tcpsig/tcpsig/packetauth"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

const (
	md5Key   = "tcpsig netstack md5 key"
	wrongKey = "tcpsig netstack md5 kez"
)

func needMD5(t *testing.T) {
	t.Helper()
	needRoot(t)
	if err := linuxsock.ProbeMD5(); errors.Is(err, linuxsock.ErrNoMD5) {
		t.Skip("no CONFIG_TCP_MD5SIG: ", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// md5Layer is a layer with one TCP-MD5 key for peer.
func md5Layer(t *testing.T, peer netip.Addr, key string) *packetauth.Layer {
	t.Helper()
	ring := md5sig.NewKeyring(nil)
	if _, err := ring.Add(keys.MD5{Peer: netip.PrefixFrom(peer, peer.BitLen()), Key: []byte(key)}); err != nil {
		t.Fatal(err)
	}
	l, err := packetauth.New(packetauth.Config{MD5: ring})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// wrapWith returns the wrap function of inKernelNet that puts an Endpoint
// over layer between the stack and the tap.
func wrapWith(t *testing.T, layer *packetauth.Layer, ep **Endpoint) func(stack.LinkEndpoint) stack.LinkEndpoint {
	return func(child stack.LinkEndpoint) stack.LinkEndpoint {
		e, err := New(child, layer)
		if err != nil {
			t.Fatal(err)
		}
		*ep = e
		return e
	}
}

// md5Keys are the kernel's TCP-MD5 keys for the gVisor stack's address.
func md5Keys(peer netip.Addr, key string) linuxsock.Keys {
	return linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(peer, peer.BitLen()), Key: []byte(key)}}}
}

// bulkSize is what each side sends in the bulk tests.
func bulkSize() int64 {
	if raceEnabled {
		return 4 << 20
	}
	return 64 << 20
}

// TestKernelMD5 moves 64 MiB each way between gonet and kernel sockets
// with TCP_MD5SIG, either side opening, on a clean link and on one that
// drops every hundredth TCP packet each way. Every TCP packet on the wire
// carries the option, the kernel refuses none (TCPMD5Failure,
// TCPMD5NotFound stay 0) and the layer none; on the lossy link both
// sides retransmit and send SACK blocks. (Linux leaves timestamps out of
// an MD5 connection's SYN and SYN-ACK, tcp_syn_options, so they are never
// negotiated and 20 option bytes leave room for two SACK blocks.)
func TestKernelMD5(t *testing.T) {
	needMD5(t)
	n := bulkSize()
	for _, v6 := range []bool{false, true} {
		for _, accept := range []bool{false, true} {
			for _, drop := range []bool{false, true} {
				t.Run(fmt.Sprintf("v6=%v/accept=%v/drop=%v", v6, accept, drop), func(t *testing.T) {
					kp, _ := addrs(v6)
					layer := md5Layer(t, kp.Addr(), md5Key)
					var ep *Endpoint
					inKernelNet(t, v6, wrapWith(t, layer, &ep), func(k *kernelNet) error {
						k.tap.drop.Store(drop)
						before, err := kstat.ReadMD5()
						if err != nil {
							return err
						}
						if err := transfer(k, accept, n, md5Keys(k.naddr, md5Key), nil); err != nil {
							return err
						}
						after, err := kstat.ReadMD5()
						if err != nil {
							return err
						}
						out, in, c := settled(k, layer)
						t.Logf("%d bytes each way, sha256 equal; to kernel %+v; from kernel %+v", n, out, in)
						t.Logf("layer %+v; kernel TCPMD5 before %+v after %+v", c, before, after)
						switch {
						case after != before:
							return fmt.Errorf("kernel refused segments: TCP-MD5 counters %+v, then %+v", before, after)
						case c.Dropped.Total() != 0:
							return fmt.Errorf("the layer refused %d segments (%+v)", ep.Dropped(), c.Dropped)
						case out.Signed != out.Packets-out.Dropped || in.Signed != in.Packets-in.Dropped:
							return fmt.Errorf("unsigned segments on the wire: to kernel %+v, from kernel %+v", out, in)
						case c.Signed != uint64(out.Packets) || c.Verified != uint64(in.Packets-in.Dropped):
							return fmt.Errorf("layer signed %d, verified %d; tap saw %d out, %d in", c.Signed, c.Verified, out.Packets, in.Signed)
						}
						if drop && (out.Retrans == 0 || in.Retrans == 0 || out.SACKBlocks == 0 || in.SACKBlocks == 0) {
							return fmt.Errorf("on a lossy link: to kernel %+v, from kernel %+v: want retransmissions and SACK blocks both ways", out, in)
						}
						return nil
					})
				})
			}
		}
	}
}

// TestKernelMD5WrongKey: with different keys on the two sides no
// connection opens and no data is delivered. gVisor dialing: the kernel
// counts every SYN it received in TCPMD5Failure. The kernel dialing: the
// layer refuses every SYN (BadMAC) and the gonet listener accepts nothing.
func TestKernelMD5WrongKey(t *testing.T) {
	needMD5(t)
	kp, naddr := addrs(false)
	t.Run("gvisor-dials", func(t *testing.T) {
		layer := md5Layer(t, kp.Addr(), wrongKey)
		var ep *Endpoint
		inKernelNet(t, false, wrapWith(t, layer, &ep), func(k *kernelNet) error {
			lc := linuxsock.ListenConfig(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(naddr, 32), Key: []byte(md5Key)}}})
			ln, err := lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(k.kaddr, kPort).String())
			if err != nil {
				return err
			}
			defer ln.Close()
			before, err := kstat.ReadMD5()
			if err != nil {
				return err
			}
			if c, err := dialGonet(k.s, netip.AddrPortFrom(k.kaddr, kPort), 4*time.Second); err == nil {
				c.Close()
				return errors.New("gonet connected with a wrong key")
			}
			time.Sleep(100 * time.Millisecond) // the last SYN's way through the kernel
			after, err := kstat.ReadMD5()
			if err != nil {
				return err
			}
			out := k.tap.out.stats()
			t.Logf("SYNs sent %d (all signed: %v); kernel TCPMD5Failure %d -> %d", out.SYNs, out.Signed == out.Packets, before.Failure, after.Failure)
			switch {
			case out.SYNs < 2 || out.Signed != out.Packets:
				return fmt.Errorf("want >= 2 signed SYNs, got %+v", out)
			case after.Failure-before.Failure != uint64(out.SYNs):
				return fmt.Errorf("TCPMD5Failure rose by %d for %d SYNs", after.Failure-before.Failure, out.SYNs)
			case kstat.Pending(ln.(*net.TCPListener)):
				return errors.New("the kernel listener has a connection")
			}
			return nil
		})
	})
	t.Run("kernel-dials", func(t *testing.T) {
		layer := md5Layer(t, kp.Addr(), md5Key)
		var ep *Endpoint
		inKernelNet(t, false, wrapWith(t, layer, &ep), func(k *kernelNet) error {
			d := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(k.naddr, 32), Key: []byte(wrongKey)}}})
			d.Timeout = 4 * time.Second
			if err := k.dialRefused(d); err != nil {
				return err
			}
			in, out, c := k.tap.in.stats(), k.tap.out.stats(), layer.Counters()
			t.Logf("kernel SYNs %d; layer %+v; packets to the kernel %d", in.SYNs, c.Dropped, out.Packets)
			switch {
			case in.SYNs < 2 || c.Dropped.BadMAC != uint64(in.SYNs) || ep.Dropped() != uint64(in.SYNs):
				return fmt.Errorf("want every one of >= 2 SYNs refused as BadMAC: SYNs %d, layer %+v", in.SYNs, c.Dropped)
			case c.Verified != 0 || out.Packets != 0:
				return fmt.Errorf("verified %d, answered %d", c.Verified, out.Packets)
			}
			return nil
		})
	})
}

// TestKernelMD5ClosedPort: a kernel socket dials a port of the gVisor
// stack where nothing listens; netstack's RST goes out signed, the kernel
// accepts it (ECONNREFUSED, TCPMD5Failure unchanged).
func TestKernelMD5ClosedPort(t *testing.T) {
	needMD5(t)
	kp, _ := addrs(false)
	layer := md5Layer(t, kp.Addr(), md5Key)
	var ep *Endpoint
	inKernelNet(t, false, wrapWith(t, layer, &ep), func(k *kernelNet) error {
		before, err := kstat.ReadMD5()
		if err != nil {
			return err
		}
		d := linuxsock.Dialer(linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(k.naddr, 32), Key: []byte(md5Key)}}})
		d.Timeout = 4 * time.Second
		c, err := d.Dial("tcp", netip.AddrPortFrom(k.naddr, gonetPrt+1).String())
		if err == nil {
			c.Close()
			return errors.New("connected to a closed port")
		}
		after, rerr := kstat.ReadMD5()
		if rerr != nil {
			return rerr
		}
		out, c2 := k.tap.out.stats(), layer.Counters()
		t.Logf("kernel dial: %v; packets to the kernel %+v; layer %+v", err, out, c2)
		switch {
		case !errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("want ECONNREFUSED, got %w", err)
		case after != before:
			return fmt.Errorf("kernel refused segments: %+v, then %+v", before, after)
		case out.Packets != 1 || out.Signed != 1 || c2.Signed != 1:
			return fmt.Errorf("want one signed RST: %+v", out)
		}
		return nil
	})
}
