//go:build linux

package packetauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tcpsig/tcpsig/harness/kstat"
	"github.com/tcpsig/tcpsig/harness/netns"
	"github.com/tcpsig/tcpsig/harness/usertcp"
	"github.com/tcpsig/tcpsig/keys"
	"github.com/tcpsig/tcpsig/linuxsock"
)

// namespace is a network namespace the test created, with a goroutine
// locked in it that runs what run gives it (sockets created there belong
// to the namespace; its TcpExt counters are read there).
type namespace struct {
	do   chan func()
	done chan struct{}
}

func newNamespace(t *testing.T) *namespace {
	t.Helper()
	ns := &namespace{do: make(chan func()), done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		err := netns.Run(func() error {
			started <- nil
			for {
				select {
				case f := <-ns.do:
					f()
				case <-ns.done:
					return nil
				}
			}
		})
		if err != nil {
			started <- err
		}
	}()
	if err := <-started; err != nil {
		t.Skipf("cannot create a network namespace (needs root): %v", err)
	}
	t.Cleanup(func() { close(ns.done) })
	return ns
}

// run calls f inside the namespace and waits for it.
func (ns *namespace) run(f func()) {
	ch := make(chan struct{})
	ns.do <- func() { f(); close(ch) }
	<-ch
}

// md5Failures reads TCPMD5Failure and TCPMD5NotFound in the namespace.
func (ns *namespace) md5Failures(t *testing.T) kstat.MD5 {
	var m kstat.MD5
	var err error
	ns.run(func() { m, err = kstat.ReadMD5() })
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// relay is a TUN tool: the plain kernel's namespace routes the peer to
// one TUN device, the MD5 kernel's namespace routes back to another, and
// the relay carries packets between them through a Layer that stands for
// the plain kernel: Outbound one way, Inbound the other.
type relay struct {
	plain, md5 *namespace
	tunP, tunK *usertcp.TUN
	p, k       netip.Addr
	layer      *Layer
}

func newRelay(t *testing.T, v6 bool, layerKey string) *relay {
	t.Helper()
	if err := linuxsock.ProbeMD5(); err != nil {
		t.Skipf("host kernel without TCP-MD5: %v", err)
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("no TUN device: %v", err)
	}
	r := &relay{plain: newNamespace(t), md5: newNamespace(t), p: addrA4, k: addrB4}
	pp, kp := netip.MustParsePrefix("192.0.2.1/24"), netip.MustParsePrefix("198.51.100.2/24")
	if v6 {
		r.p, r.k = addrA6, addrB6
		pp, kp = netip.MustParsePrefix("2001:db8::1/64"), netip.MustParsePrefix("2001:db8:1::2/64")
	}
	var err error
	r.layer, err = New(Config{MD5: md5Ring(t, r.k, layerKey)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.layer.Close)
	setup := func(tun **usertcp.TUN, name string, mine, other netip.Prefix, mtu int) func() {
		return func() {
			if *tun, err = usertcp.OpenTUN(name); err != nil {
				return
			}
			err = errors.Join(netns.SetMTU(name, mtu), netns.LinkUp(name), netns.AddAddr(name, mine), netns.AddRoute(other, name))
		}
	}
	// The plain kernel sees an MTU Overhead bytes smaller, as a front end
	// tells its stack, so that its full segments still fit once signed.
	r.plain.run(setup(&r.tunP, "pktunp", pp, kp, 1500-r.layer.Overhead()))
	if err != nil {
		t.Skipf("TUN setup: %v", err)
	}
	r.md5.run(setup(&r.tunK, "pktunk", kp, pp, 1500))
	if err != nil {
		t.Fatalf("TUN setup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	pump := func(from, to *usertcp.TUN, f func(dst, pkt []byte) ([]byte, error)) {
		defer wg.Done()
		buf, dst := make([]byte, 65536), make([]byte, 0, 65536+64)
		for ctx.Err() == nil {
			n, err := from.ReadPacket(buf, time.Now().Add(50*time.Millisecond))
			if err != nil {
				continue
			}
			out, err := f(dst[:0], buf[:n])
			if err == nil {
				_ = to.WritePacket(out)
			}
		}
	}
	wg.Add(2)
	go pump(r.tunP, r.tunK, r.layer.Outbound)
	go pump(r.tunK, r.tunP, r.layer.Inbound)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		r.tunP.Close()
		r.tunK.Close()
	})
	return r
}

// exchange sends n bytes each way between a and b at once and returns the
// SHA-256 of what each side read, for comparison with what was sent.
func exchange(a, b net.Conn, n int) (sentA, gotB, sentB, gotA [32]byte, err error) {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	send := func(c net.Conn, seed uint64, sum *[32]byte) {
		defer wg.Done()
		h := sha256.New()
		rng := rand.New(rand.NewPCG(seed, seed))
		buf := make([]byte, 32<<10)
		for left := n; left > 0; {
			k := min(left, len(buf))
			for i := range buf[:k] {
				buf[i] = byte(rng.Uint32())
			}
			h.Write(buf[:k])
			if _, err := c.Write(buf[:k]); err != nil {
				errs <- err
				return
			}
			left -= k
		}
		copy(sum[:], h.Sum(nil))
		if tc, ok := c.(*net.TCPConn); ok {
			errs <- tc.CloseWrite()
		}
	}
	recv := func(c net.Conn, sum *[32]byte) {
		defer wg.Done()
		h := sha256.New()
		if _, err := io.Copy(h, c); err != nil {
			errs <- err
		}
		copy(sum[:], h.Sum(nil))
	}
	wg.Add(4)
	go send(a, 1, &sentA)
	go send(b, 2, &sentB)
	go recv(b, &gotB)
	go recv(a, &gotA)
	wg.Wait()
	close(errs)
	for e := range errs {
		err = errors.Join(err, e)
	}
	return
}

// TestHostKernelMD5 runs TCP between a kernel socket without TCP-MD5 and
// one with it, through a Layer on TUN devices for the first (a TUN front
// end): each side dials the other, 4 MiB each way, IPv4 and IPv6. The
// kernel is the judge: it verifies every signature the layer made (its
// TCPMD5Failure and TCPMD5NotFound stay 0) and checks every TCP checksum
// the layer wrote, both ways; the streams arrive whole (SHA-256).
func TestHostKernelMD5(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, plainDials := range []bool{true, false} {
			t.Run(fmt.Sprintf("v6=%v/plain-dials=%v", v6, plainDials), func(t *testing.T) {
				r := newRelay(t, v6, "pk-secret")
				keys := linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(r.p, r.p.BitLen()), Key: []byte("pk-secret")}}}
				before := r.md5.md5Failures(t)
				a, b := r.connect(t, plainDials, keys)
				defer a.Close()
				defer b.Close()
				const n = 4 << 20
				sa, gb, sb, ga, err := exchange(a, b, n)
				if err != nil {
					t.Fatal(err)
				}
				if sa != gb || sb != ga {
					t.Fatal("a stream arrived changed")
				}
				after := r.md5.md5Failures(t)
				c := r.layer.Counters()
				if after != before || c.Dropped.Total() != 0 || c.Signed < n/1500 || c.Verified < n/1500 {
					t.Fatalf("kernel MD5 counters %+v -> %+v; layer %+v", before, after, c)
				}
				t.Logf("%d MiB each way; layer signed %d, verified %d, dropped 0; kernel TCPMD5Failure/NotFound unchanged", n>>20, c.Signed, c.Verified)
			})
		}
	}
}

// connect returns the plain kernel's end and the MD5 kernel's end of a
// connection, dialled by the plain side or by the MD5 side.
func (r *relay) connect(t *testing.T, plainDials bool, keys linuxsock.Keys) (plain, signed net.Conn) {
	t.Helper()
	var ln net.Listener
	var err error
	listenIn, dialIn := r.md5, r.plain
	lc, d := linuxsock.ListenConfig(keys), &net.Dialer{Timeout: 3 * time.Second}
	target := r.k
	if !plainDials {
		listenIn, dialIn, target = r.plain, r.md5, r.p
		lc = &net.ListenConfig{}
		d = linuxsock.Dialer(keys)
		d.Timeout = 3 * time.Second
	}
	d.SetMultipathTCP(false)
	lc.SetMultipathTCP(false)
	listenIn.run(func() { ln, err = lc.Listen(context.Background(), "tcp", netip.AddrPortFrom(target, 0).String()) })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	var dialled net.Conn
	dialIn.run(func() { dialled, err = d.Dial("tcp", ln.Addr().String()) })
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	var acc net.Conn
	select {
	case acc = <-accepted:
	case <-time.After(5 * time.Second):
	}
	if acc == nil {
		dialled.Close()
		t.Fatal("no connection accepted")
	}
	if plainDials {
		return dialled, acc
	}
	return acc, dialled
}

// TestHostKernelMD5WrongKey: with a key the MD5 kernel does not share,
// no connection forms either way and the kernel counts each signed SYN
// it refused (TCPMD5Failure), while the layer drops what the kernel sends
// under its own key (BadMAC).
func TestHostKernelMD5WrongKey(t *testing.T) {
	r := newRelay(t, false, "not-the-key")
	keys := linuxsock.Keys{MD5: []keys.MD5{{Peer: netip.PrefixFrom(r.p, 32), Key: []byte("pk-secret")}}}
	before := r.md5.md5Failures(t)
	var ln net.Listener
	var err error
	r.md5.run(func() {
		ln, err = linuxsock.ListenConfig(keys).Listen(context.Background(), "tcp", netip.AddrPortFrom(r.k, 0).String())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r.plain.run(func() {
		var c net.Conn
		c, err = (&net.Dialer{Timeout: 2 * time.Second}).Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
	})
	if err == nil {
		t.Fatal("connected under a wrong key")
	}
	after := r.md5.md5Failures(t)
	if after.Failure <= before.Failure || r.layer.Counters().Signed == 0 {
		t.Fatalf("TCPMD5Failure %d -> %d, layer %+v", before.Failure, after.Failure, r.layer.Counters())
	}
	// The other way: the MD5 kernel's SYNs, under its key, fail at the layer.
	r.plain.run(func() { ln, err = net.Listen("tcp", netip.AddrPortFrom(r.p, 0).String()) })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r.md5.run(func() {
		d := linuxsock.Dialer(keys)
		d.Timeout = 2 * time.Second
		var c net.Conn
		c, err = d.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
	})
	if err == nil || r.layer.Counters().Dropped.BadMAC == 0 {
		t.Fatalf("kernel's SYNs under another key: %v, layer %+v", err, r.layer.Counters())
	}
	t.Logf("kernel TCPMD5Failure +%d; layer dropped %d bad MACs", after.Failure-before.Failure, r.layer.Counters().Dropped.BadMAC)
}
